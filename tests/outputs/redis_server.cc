#include "tests/outputs/redis_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace shipper::testing {

int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = -1;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

absl::StatusOr<std::unique_ptr<RedisServer>> RedisServer::Start(int port, const std::string& dir,
                                                                bool append_only,
                                                                const std::string& password) {
  const std::string log = absl::StrCat(dir, "/redis-", port, ".log");
  std::vector<std::string> args = {"/usr/bin/redis-server",
                                   "--bind",
                                   "127.0.0.1",
                                   "--port",
                                   absl::StrCat(port),
                                   "--dir",
                                   dir,
                                   "--save",
                                   "",
                                   "--appendonly",
                                   append_only ? "yes" : "no",
                                   "--appendfsync",
                                   "always",
                                   "--protected-mode",
                                   "no",
                                   "--logfile",
                                   log};
  if (!password.empty()) args.insert(args.end(), {"--requirepass", password});
  pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  std::unique_ptr<RedisServer> server(new RedisServer(pid, port, password));
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (absl::Now() < deadline) {
    auto reply = server->Command({"PING"});
    if (reply != nullptr && reply->type == REDIS_REPLY_STATUS) return server;
    int status;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      server->pid_ = 0;
      return absl::FailedPreconditionError(absl::StrCat("redis-server exited at start; see ", log));
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  return absl::DeadlineExceededError(absl::StrCat("redis-server did not answer; see ", log));
}

RedisServer::~RedisServer() { Kill(); }

void RedisServer::Signal(int signal) const {
  if (pid_ > 0) ::kill(pid_, signal);
}

void RedisServer::Kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status;
  waitpid(pid_, &status, 0);
  pid_ = 0;
}

std::unique_ptr<redisContext, void (*)(redisContext*)> RedisServer::Connect() const {
  std::unique_ptr<redisContext, void (*)(redisContext*)> c(
      redisConnectWithTimeout("127.0.0.1", port_, timeval{5, 0}), redisFree);
  if (c == nullptr || c->err || redisSetTimeout(c.get(), timeval{10, 0}) != REDIS_OK) {
    return {nullptr, redisFree};
  }
  if (!password_.empty()) {
    void* reply = redisCommand(c.get(), "AUTH %s", password_.c_str());
    if (reply == nullptr) return {nullptr, redisFree};
    freeReplyObject(reply);
  }
  return c;
}

std::unique_ptr<redisReply, void (*)(void*)> RedisServer::Command(
    const std::vector<std::string>& args) const {
  auto c = Connect();
  if (c == nullptr) return {nullptr, freeReplyObject};
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  for (const std::string& a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  void* reply = redisCommandArgv(c.get(), static_cast<int>(args.size()), argv.data(), lens.data());
  return {static_cast<redisReply*>(reply), freeReplyObject};
}

std::vector<std::string> RedisServer::ReadList(const std::string& key) const {
  std::vector<std::string> items;
  constexpr int kChunk = 20000;
  for (int start = 0;; start += kChunk) {
    auto reply = Command({"LRANGE", key, absl::StrCat(start), absl::StrCat(start + kChunk - 1)});
    if (reply == nullptr || reply->type != REDIS_REPLY_ARRAY || reply->elements == 0) break;
    for (size_t i = 0; i < reply->elements; ++i) {
      items.emplace_back(reply->element[i]->str, reply->element[i]->len);
    }
  }
  return items;
}

}  // namespace shipper::testing
