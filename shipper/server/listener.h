// Shipper's listening side: how it is secured, where it listens and how many connections it
// serves.
//
// TLS is on when shipper.server.ssl.certificate is set; client_authentication decides whether
// clients must present a certificate that chains to ssl.certificate_authorities (mTLS).
// A unix:///path listener's socket file belongs to this process: a stale one left by a crash
// is replaced before listening, it gets shipper.server.socket_mode before anyone can connect,
// and it is removed on Stop().
//
// gRPC 1.51 has no limit on connections, so the Listener accepts them itself and hands each to
// the gRPC server (ServerBuilder's ExternalConnectionAcceptor, public but experimental). Up to
// shipper.server.max_connections live ones go to the server Shipper built; one beyond goes to a
// refusal server of the Listener's own, which answers every call RESOURCE_EXHAUSTED naming the
// key and closes the connection after about a second, so that the client connects again. A
// connection is live while the fd handed to gRPC still refers to its socket: gRPC closes it as
// soon as the peer goes away, or after 10 s when it has not finished its handshake (so that
// silent connections cannot hold the slots).
//
// The server allows clients' keepalive pings down to one a second, with no call in flight too
// (the forwarding output's find a frozen next Shipper so).
//
// Thread safety: ListenerCredentials and ReplaceStaleSocket are stateless.
// A Listener is driven from one thread (Open, ServeWith, Start, Stop) and runs one accept
// thread of its own between Start and Stop.
#ifndef SHIPPER_SHIPPER_SERVER_LISTENER_H_
#define SHIPPER_SHIPPER_SERVER_LISTENER_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "shipper/config/address.h"
#include "shipper/config/tls.h"
#include "shipper/server/server_settings.h"

namespace shipper {

// Insecure credentials when `ssl` (a server's, of `block`) has TLS off, TLS or mTLS credentials
// otherwise. Reads the PEM files now; INVALID_ARGUMENT names the key whose file is unreadable or
// not PEM. REQUIRES: block.Validate() found no problem.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ListenerCredentials(const TlsSettings& ssl,
                                                                             const TlsBlock& block);

// Makes `path` free for a new socket: removes a socket file nobody listens on (left by a crash).
// UNAVAILABLE when a process still accepts connections on it, INVALID_ARGUMENT when the path
// holds something other than a socket (never deleted); each names `key`, the address's.
absl::Status ReplaceStaleSocket(const std::string& path,
                                absl::string_view key = "shipper.server.server");

// Which keys a listener's settings came from, for its errors: the shared server's by default;
// an input that listens on an address of its own names its own (shipper.otlp.grpc.server).
struct ListenerKeys {
  std::string address = "shipper.server.server";
  const TlsBlock* tls = &ServerTlsBlock();
};

class Listener {
 public:
  // Binds and listens on server.address (every address a host name resolves to; port 0 picks a
  // free port) with server.ssl's credentials (ServerTlsBlock()). The error names the key to change.
  static absl::StatusOr<std::unique_ptr<Listener>> Open(const ServerSettings& server,
                                                        const ListenerKeys& keys = {});
  ~Listener();  // Stop()

  // Makes `builder`'s server the one that serves the connections. Call once, before
  // builder->BuildAndStart().
  void ServeWith(grpc::ServerBuilder* builder);

  // Starts the refusal server and accepting. REQUIRES: the ServeWith() server has started.
  absl::Status Start();

  // Stops accepting, closes the listening sockets (removing a unix socket file) and shuts the
  // refusal server down. Connections already handed over stay with the server. Idempotent.
  void Stop();

  // host:port with the port bound, or the unix: address as configured.
  const std::string& address() const { return address_; }

 private:
  struct Connection {  // one handed to the server, live while `fd` is this socket
    int fd;
    dev_t dev;
    ino_t ino;
  };

  Listener(const ServerSettings& server, std::string address_key,
           std::shared_ptr<grpc::ServerCredentials> credentials);
  absl::Status Bind();  // BindUnix or BindTcp, as the address says
  absl::Status BindUnix(std::string path);
  absl::Status BindTcp(Address address);
  // UNAVAILABLE: cannot listen on the address, because of `why`.
  absl::Status Cannot(absl::string_view why) const;
  void Accept();                     // the accept thread
  void Hand(int listen_fd, int fd);  // to the server or the refusal server
  bool Admit(int fd);                // false: the server has max_connections live ones

  const std::string configured_address_;
  const std::string address_key_;  // the configured address's key, for errors
  const uint32_t socket_mode_;
  const size_t max_connections_;  // 0: no limit
  const std::shared_ptr<grpc::ServerCredentials> credentials_;
  std::string address_;
  std::string socket_path_;   // bound by this process, removed on Stop(); else empty
  std::vector<int> sockets_;  // listening
  int wake_fd_ = -1;          // eventfd that Stop() writes to end the accept thread
  std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor> server_acceptor_;
  std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor> refusal_acceptor_;
  std::unique_ptr<grpc::CallbackGenericService> refusal_service_;
  std::unique_ptr<grpc::Server> refusal_server_;
  std::vector<Connection> connections_;  // the accept thread's alone
  std::thread accept_thread_;
};

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_SERVER_LISTENER_H_
