#include "shipper/server/listener.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "glog/logging.h"
#include "grpcpp/ext/health_check_service_server_builder_option.h"
#include "grpcpp/generic/async_generic_service.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/security/server_credentials.h"
#include "shipper/config/address.h"
#include "shipper/config/tls.h"
#include "shipper/metrics/shipper_metrics.h"

namespace shipper {
namespace {

std::string Errno(absl::string_view call) { return absl::StrCat(call, ": ", std::strerror(errno)); }

// Answers a call with `status` and nothing else.
class Refusal final : public grpc::ServerGenericBidiReactor {
 public:
  explicit Refusal(const grpc::Status& status) { Finish(status); }
  void OnDone() override { delete this; }
};

class RefusalService final : public grpc::CallbackGenericService {
 public:
  explicit RefusalService(size_t max_connections)
      : status_(grpc::StatusCode::RESOURCE_EXHAUSTED,
                absl::StrCat("shipper.server.max_connections (", max_connections,
                             ") connections are open to this shipper: close one, or raise the "
                             "limit; this connection closes in a second, then reconnect")) {}

  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext*) override {
    return new Refusal(status_);
  }

 private:
  const grpc::Status status_;
};

// Keeps the process-wide builder plugins (server reflection) off a server.
class WithoutPlugins final : public grpc::ServerBuilderOption {
 public:
  void UpdateArguments(grpc::ChannelArguments*) override {}
  void UpdatePlugins(std::vector<std::unique_ptr<grpc::ServerBuilderPlugin>>* plugins) override {
    plugins->clear();
  }
};

// How long a refused connection stays open to carry the refusals, and then how long its
// calls may take to finish.
constexpr int kRefusedConnectionAgeMs = 1000;
constexpr int kRefusedConnectionGraceMs = 1000;
// A connection that has not finished its HTTP/2 (and TLS) handshake by then is closed: it holds
// one of the max_connections slots (gRPC's default: 120 s).
constexpr int kHandshakeTimeoutMs = 10000;
// The least interval between a client's keepalive pings (the forwarding output's are 2 s apart
// or more).
constexpr int kMinPingIntervalMs = 1000;
// Memory the refusal server may hold: it reads no message.
constexpr size_t kRefusalMemory = 4 << 20;

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ListenerCredentials(
    const TlsSettings& ssl, const TlsBlock& block) {
  if (!block.On(ssl)) return grpc::InsecureServerCredentials();
  absl::StatusOr<TlsPem> pem = block.Read(ssl);
  if (!pem.ok()) return pem.status();
  grpc::SslServerCredentialsOptions options;
  options.pem_key_cert_pairs.push_back({pem->key, pem->certificate});
  options.pem_root_certs = pem->certificate_authorities;
  switch (ssl.client_authentication) {
    case ClientAuthentication::kNone:
      options.client_certificate_request = GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE;
      break;
    case ClientAuthentication::kOptional:
      options.client_certificate_request = GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY;
      break;
    case ClientAuthentication::kRequired:
      options.client_certificate_request =
          GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
      break;
  }
  return grpc::SslServerCredentials(options);
}

absl::Status ReplaceStaleSocket(const std::string& path, absl::string_view key) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return absl::OkStatus();  // nothing there
  if (!S_ISSOCK(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", path, "' exists and is not a socket: remove it or change ", key));
  }
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat("unix socket path '", path, "' is longer than ",
                                                   sizeof(addr.sun_path) - 1, " bytes"));
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket(): ", std::strerror(errno)));
  const bool listening = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  close(fd);
  if (listening) {
    return absl::UnavailableError(
        absl::StrCat("another process listens on '", path, "': stop it or change ", key));
  }
  if (unlink(path.c_str()) != 0 && errno != ENOENT) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot remove the stale socket '", path, "': ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

Listener::Listener(const ServerSettings& server, std::string address_key,
                   std::shared_ptr<grpc::ServerCredentials> credentials)
    : configured_address_(server.address),
      address_key_(std::move(address_key)),
      socket_mode_(server.socket_mode),
      max_connections_(server.limits.max_connections),
      credentials_(std::move(credentials)) {}

Listener::~Listener() { Stop(); }

absl::StatusOr<std::unique_ptr<Listener>> Listener::Open(const ServerSettings& server,
                                                         const ListenerKeys& keys) {
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      ListenerCredentials(server.ssl, *keys.tls);
  if (!credentials.ok()) return credentials.status();
  std::unique_ptr<Listener> listener(new Listener(server, keys.address, *std::move(credentials)));
  listener->wake_fd_ = eventfd(0, EFD_CLOEXEC);
  if (listener->wake_fd_ < 0) return absl::InternalError(Errno("eventfd"));
  if (absl::Status bound = listener->Bind(); !bound.ok()) return bound;
  return listener;
}

absl::Status Listener::Cannot(absl::string_view why) const {
  return absl::UnavailableError(absl::StrCat("cannot listen on '", configured_address_, "' (", why,
                                             "): change ", address_key_));
}

absl::Status Listener::Bind() {
  absl::StatusOr<Address> address = ParseAddress(configured_address_, kListenAddress);
  if (!address.ok()) return Cannot(address.status().message());
  if (!address->unix_path.empty()) return BindUnix(address->unix_path);
  return BindTcp(*std::move(address));
}

absl::Status Listener::BindUnix(std::string path) {
  if (absl::Status status = ReplaceStaleSocket(path, address_key_); !status.ok()) return status;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) return Cannot("path too long");
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(Errno("socket"));
  sockets_.push_back(fd);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return Cannot(Errno("bind"));
  }
  socket_path_ = std::move(path);  // ours now, to remove on Stop()
  // Before listen(), so nobody connects under the umask's permissions.
  if (chmod(socket_path_.c_str(), socket_mode_) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("cannot set shipper.server.socket_mode on '",
                                                   socket_path_, "': ", strerror(errno)));
  }
  if (listen(fd, SOMAXCONN) != 0) return Cannot(Errno("listen"));
  address_ = configured_address_;
  return absl::OkStatus();
}

absl::Status Listener::BindTcp(Address address) {
  absl::StatusOr<AddressList> found = ResolveListenAddress(address);
  if (!found.ok()) return Cannot(found.status().message());
  bool both_families = false;
  for (addrinfo* a = found->get(); a != nullptr; a = a->ai_next) {
    both_families |= a->ai_family != (*found)->ai_family;
  }
  // Every address the host resolves to (localhost: 127.0.0.1 and ::1), on one port: the first
  // bound one's when port 0 asked for a free one.
  int bound_port = 0;
  std::string errors;
  for (addrinfo* a = found->get(); a != nullptr; a = a->ai_next) {
    sockaddr_storage addr{};
    std::memcpy(&addr, a->ai_addr, a->ai_addrlen);
    in_port_t* addr_port = a->ai_family == AF_INET6
                               ? &reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port
                               : &reinterpret_cast<sockaddr_in*>(&addr)->sin_port;
    if (bound_port != 0) *addr_port = htons(bound_port);
    const int fd = socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return absl::InternalError(Errno("socket"));
    const int on = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);  // restart past TIME_WAIT
    if (a->ai_family == AF_INET6 && both_families) {
      setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on);  // the IPv4 one is bound too
    }
    const char* failed = bind(fd, reinterpret_cast<sockaddr*>(&addr), a->ai_addrlen) != 0 ? "bind"
                         : listen(fd, SOMAXCONN) != 0                                     ? "listen"
                                                                                          : nullptr;
    if (failed != nullptr) {
      absl::StrAppend(&errors, errors.empty() ? "" : "; ", Errno(failed));
      close(fd);
      continue;
    }
    sockets_.push_back(fd);
    if (bound_port == 0) {
      socklen_t len = sizeof addr;
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
      bound_port = ntohs(*addr_port);
    }
  }
  if (sockets_.empty()) return Cannot(errors);
  address.port = bound_port;
  address_ = address.ToString();
  return absl::OkStatus();
}

void Listener::ServeWith(grpc::ServerBuilder* builder) {
  builder->AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS, kHandshakeTimeoutMs);
  // Keepalive pings as often as every kMinPingIntervalMs, with no call in flight too: gRPC's
  // default (one per 5 minutes without data) would close a forwarding Shipper's connection, whose
  // pings find a frozen or vanished peer.
  builder->AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
                              kMinPingIntervalMs);
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  server_acceptor_ = builder->experimental().AddExternalConnectionAcceptor(
      grpc::ServerBuilder::experimental_type::ExternalConnectionType::FROM_FD, credentials_);
}

absl::Status Listener::Start() {
  if (max_connections_ > 0) {
    refusal_service_ = std::make_unique<RefusalService>(max_connections_);
    grpc::ResourceQuota quota("refusal");
    quota.Resize(kRefusalMemory);
    grpc::ServerBuilder builder;
    builder.SetResourceQuota(quota);
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS, kRefusedConnectionAgeMs);
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS, kRefusedConnectionGraceMs);
    builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS, kHandshakeTimeoutMs);
    refusal_acceptor_ = builder.experimental().AddExternalConnectionAcceptor(
        grpc::ServerBuilder::experimental_type::ExternalConnectionType::FROM_FD, credentials_);
    // Every call is refused, health and reflection too: neither may answer for Shipper here.
    builder.SetOption(std::make_unique<grpc::HealthCheckServiceServerBuilderOption>(nullptr));
    builder.SetOption(std::make_unique<WithoutPlugins>());
    builder.RegisterCallbackGenericService(refusal_service_.get());
    refusal_server_ = builder.BuildAndStart();
    if (refusal_server_ == nullptr) {
      return absl::InternalError(
          "cannot start the server that refuses connections beyond "
          "shipper.server.max_connections");
    }
  }
  accept_thread_ = std::thread([this] { Accept(); });
  return absl::OkStatus();
}

void Listener::Accept() {
  std::vector<pollfd> polled;
  for (int fd : sockets_) polled.push_back({fd, POLLIN, 0});
  polled.push_back({wake_fd_, POLLIN, 0});
  while (true) {
    if (poll(polled.data(), polled.size(), -1) < 0) {
      if (errno == EINTR) continue;
      LOG(ERROR) << "listener: " << Errno("poll") << "; no more connections are accepted";
      return;
    }
    if (polled.back().revents != 0) return;  // Stop()
    for (size_t i = 0; i + 1 < polled.size(); ++i) {
      if (polled[i].revents == 0) continue;
      const int fd = accept4(polled[i].fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd >= 0) {
        Hand(polled[i].fd, fd);
      } else if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        LOG_EVERY_N(WARNING, 100) << "listener: " << Errno("accept")
                                  << "; raise the open files limit (ulimit -n) or lower "
                                     "shipper.server.max_connections";
        // A pause, or the connection still pending would wake poll() at once.
        pollfd wake{wake_fd_, POLLIN, 0};
        if (poll(&wake, 1, 100) > 0) return;
      }  // else EAGAIN, ECONNABORTED, EINTR: nothing to accept now
    }
  }
}

void Listener::Hand(int listen_fd, int fd) {
  if (socket_path_.empty()) {
    const int on = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);  // as gRPC's own listener does
  }
  grpc::experimental::ExternalConnectionAcceptor::NewConnectionParameters connection;
  connection.listener_fd = listen_fd;
  connection.fd = fd;
  if (Admit(fd)) {
    server_acceptor_->HandleNewConnection(&connection);
  } else {
    LOG_EVERY_N(WARNING, 100) << "listener: " << max_connections_
                              << " connections are open: refusing a new one's calls "
                                 "(shipper.server.max_connections)";
    metrics::ShipperMetrics::Get().ConnectionRefused();
    refusal_acceptor_->HandleNewConnection(&connection);
  }
}

bool Listener::Admit(int fd) {
  if (max_connections_ == 0) return true;
  const auto live = [](const Connection& c) {
    struct stat st;
    return fstat(c.fd, &st) == 0 && st.st_dev == c.dev && st.st_ino == c.ino;
  };
  if (connections_.size() >= max_connections_) {
    connections_.erase(std::remove_if(connections_.begin(), connections_.end(),
                                      [&](const Connection& c) { return !live(c); }),
                       connections_.end());
    if (connections_.size() >= max_connections_) return false;
  }
  struct stat st;
  fstat(fd, &st);
  connections_.push_back({fd, st.st_dev, st.st_ino});
  return true;
}

void Listener::Stop() {
  if (wake_fd_ < 0) return;
  const uint64_t one = 1;
  if (accept_thread_.joinable()) {
    if (write(wake_fd_, &one, sizeof one) != sizeof one) PLOG(ERROR) << "listener: wake";
    accept_thread_.join();
  }
  for (int fd : sockets_) close(fd);
  sockets_.clear();
  close(wake_fd_);
  wake_fd_ = -1;
  if (!socket_path_.empty()) unlink(socket_path_.c_str());
  if (refusal_server_ != nullptr) {
    refusal_server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(1)));
    refusal_server_->Wait();
  }
}

}  // namespace shipper
