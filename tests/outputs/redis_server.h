// A real redis-server (Debian's) run by a test on loopback, and a hiredis client for it.
//
// Thread safety: one thread uses a RedisServer.
#ifndef SHIPPER_TESTS_OUTPUTS_REDIS_SERVER_H_
#define SHIPPER_TESTS_OUTPUTS_REDIS_SERVER_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "hiredis/hiredis.h"

namespace shipper::testing {

// A free loopback TCP port (bound, read and closed: free unless someone takes it right now).
int FreePort();

class RedisServer {
 public:
  // Starts redis-server on 127.0.0.1:`port` with its files in `dir` and waits until it answers.
  // With `append_only`, every write reaches the append-only file before Redis replies, so a
  // restarted server has everything the killed one acknowledged. A non-empty `password` is
  // required of clients (requirepass); Command() sends it.
  static absl::StatusOr<std::unique_ptr<RedisServer>> Start(int port, const std::string& dir,
                                                            bool append_only,
                                                            const std::string& password = "");
  // Kill().
  ~RedisServer();

  int port() const { return port_; }
  // SIGKILL, then waits for the process to end.
  void Kill();
  // Sends `signal` (e.g. SIGSTOP, SIGCONT to freeze and thaw it).
  void Signal(int signal) const;

  // A new connection (authenticated when the server has a password); null on failure.
  std::unique_ptr<redisContext, void (*)(redisContext*)> Connect() const;
  // Runs one command on a fresh connection; null on a connection error.
  std::unique_ptr<redisReply, void (*)(void*)> Command(const std::vector<std::string>& args) const;
  // Every element of the list at `key`, read in chunks.
  std::vector<std::string> ReadList(const std::string& key) const;

 private:
  RedisServer(pid_t pid, int port, std::string password)
      : pid_(pid), port_(port), password_(std::move(password)) {}

  pid_t pid_;
  const int port_;
  const std::string password_;
};

}  // namespace shipper::testing

#endif  // SHIPPER_TESTS_OUTPUTS_REDIS_SERVER_H_
