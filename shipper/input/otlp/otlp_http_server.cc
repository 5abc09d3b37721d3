#include "shipper/input/otlp/otlp_http_server.h"

#include <fcntl.h>
#include <microhttpd.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "glog/logging.h"
#include "shipper/config/address.h"
#include "shipper/input/otlp/otlp_http_exchange.h"
#include "shipper/input/otlp/otlp_http_tls.h"
#include "shipper/metrics/shipper_metrics.h"

namespace shipper {
namespace {

constexpr AddressRules kListenHostPort = {/*unix_socket=*/false, /*listen=*/true};
constexpr intptr_t kConnectionMemory = 256 << 10;

// A listening TCP socket on `address` (host:port, port 0: a free one), non-blocking, as the
// metrics server's: SO_REUSEADDR but no SO_REUSEPORT, or a second Shipper would bind the same
// port. -1 when it cannot.
int Listen(const Address& address) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const std::string port = absl::StrCat(address.port);
  if (getaddrinfo(address.host.empty() ? nullptr : address.host.c_str(), port.c_str(), &hints,
                  &found) != 0) {
    return -1;
  }
  int fd = -1;
  for (addrinfo* ai = found; ai != nullptr && fd < 0; ai = ai->ai_next) {
    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    int yes = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, SOMAXCONN) != 0) {
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  return fd;
}

int PortOf(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) return -1;
  if (address.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<sockaddr_in6*>(&address)->sin6_port);
  }
  return ntohs(reinterpret_cast<sockaddr_in*>(&address)->sin_port);
}

// libmicrohttpd's own messages: a refused start (a key that does not match its certificate)
// says why there; afterwards they are about single connections (a client's failed handshake).
void LogMhd(void* started, const char* format, va_list args) {
  char text[512];
  vsnprintf(text, sizeof(text), format, args);
  if (static_cast<std::atomic<bool>*>(started)->load(std::memory_order_relaxed)) {
    VLOG(1) << "OTLP/HTTP: " << text;
  } else {
    LOG(WARNING) << "OTLP/HTTP: " << text;
  }
}

class OtlpHttpServerImpl final : public OtlpHttpServer {
 public:
  OtlpHttpServerImpl(const OtlpSettings& settings, OtlpExports* exports,
                     std::unique_ptr<OtlpHttpTls> tls)
      : exports_(exports),
        tls_(std::move(tls)),
        max_connections_(settings.http_max_connections),
        header_timeout_(settings.http_header_timeout),
        idle_timeout_(settings.http_idle_timeout) {}

  ~OtlpHttpServerImpl() override {
    if (daemon_ != nullptr) {
      // libmicrohttpd must not stop with a connection suspended: those whose export was
      // answered (all of them: REQUIRES) are resumed by their own thread; wait for it.
      {
        absl::MutexLock lock(&mu_);
        mu_.Await(absl::Condition(
            +[](int* suspended) { return *suspended == 0; }, &suspended_));
        stopping_ = true;
      }
      MHD_stop_daemon(daemon_);  // closes every connection and the listening socket
    }
    if (sweeper_.joinable()) sweeper_.join();
  }

  absl::Status Start(const std::string& address_text) {
    absl::StatusOr<Address> address = ParseAddress(address_text, kListenHostPort);
    const int fd = address.ok() ? Listen(*address) : -1;
    if (fd < 0) {
      return absl::UnavailableError(
          absl::StrCat("shipper.otlp.http.server: cannot listen on ", address_text,
                       " (address in use or not a local address): change it, or set "
                       "shipper.otlp.http.enabled: false"));
    }
    port_ = PortOf(fd);
    std::vector<MHD_OptionItem> options = {
        {MHD_OPTION_LISTEN_SOCKET, fd, nullptr},
        {MHD_OPTION_THREAD_POOL_SIZE, kThreads, nullptr},
        // Ours is the limit (Accept() below): libmicrohttpd's own is split among its threads,
        // so each is given room for all of them.
        {MHD_OPTION_CONNECTION_LIMIT, static_cast<intptr_t>(max_connections_ * kThreads), nullptr},
        {MHD_OPTION_CONNECTION_TIMEOUT,
         static_cast<intptr_t>(absl::ToInt64Seconds(absl::Ceil(idle_timeout_, absl::Seconds(1)))),
         nullptr},
        // A connection's memory pool, which its body is read through: with libmicrohttpd's
        // 32 KiB default a body is read 16 KiB per wake-up, and `./dev bench otlp`'s large
        // exports ran at 59-71k records/s against 117-120k with 256 KiB. Touched only as used.
        {MHD_OPTION_CONNECTION_MEMORY_LIMIT, kConnectionMemory, nullptr},
        {MHD_OPTION_NOTIFY_CONNECTION, reinterpret_cast<intptr_t>(&OnConnection), this},
        {MHD_OPTION_NOTIFY_COMPLETED, reinterpret_cast<intptr_t>(&OnCompleted), this},
        {MHD_OPTION_EXTERNAL_LOGGER, reinterpret_cast<intptr_t>(&LogMhd), &started_},
    };
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
                         MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    if (tls_ != nullptr) {
      flags |= MHD_USE_TLS;
      tls_->AppendOptions(&options);
    }
    options.push_back({MHD_OPTION_END, 0, nullptr});
    daemon_ = MHD_start_daemon(flags, 0, &Accept, this, &Access, this, MHD_OPTION_ARRAY,
                               options.data(), MHD_OPTION_END);
    if (daemon_ == nullptr) {
      close(fd);
      if (tls_ != nullptr) {
        return absl::UnavailableError(absl::StrCat(
            "shipper.otlp.ssl: GnuTLS refused the certificate or key for OTLP/HTTP (",
            OtlpTlsBlock().KeyName("certificate"), ", ", OtlpTlsBlock().KeyName("key"), ")"));
      }
      return absl::UnavailableError(
          "shipper.otlp.http.server: the OTLP/HTTP server did not start (see the log)");
    }
    started_.store(true, std::memory_order_relaxed);
    sweeper_ = std::thread([this] { Sweep(); });
    Address bound = *address;
    bound.port = port_;
    LOG(INFO) << "OTLP/HTTP serving on " << bound.ToString()
              << " (POST /v1/logs, /v1/traces, /v1/metrics, " << max_connections_
              << " connections at most)";
    return absl::OkStatus();
  }

  int port() const override { return port_; }

 private:
  // One open connection (its deadline is in deadlines_).
  struct Connection {
    int fd = -1;           // constant once it started
    bool checked = false;  // its TLS client was checked (its server thread only)
  };

  // One request, from its head until libmicrohttpd is done with it (OnCompleted).
  struct Request {
    Request(OtlpExports* exports, OtlpHttpHead head)
        : exchange(exports, std::move(head), absl::Now()) {}
    OtlpHttpExchange exchange;
    bool finished = false;  // Finish() was called (the server thread only)
    absl::Mutex mu;
    // The answer, once it came; the connection is suspended while it has not.
    std::optional<OtlpHttpAnswer> answer ABSL_GUARDED_BY(mu);
    bool suspended ABSL_GUARDED_BY(mu) = false;
  };

  // Beyond max_connections a connection is closed as soon as it is accepted, before anything of
  // it is read: its sender sees the connection refused at once and retries (every OTLP exporter
  // retries a failed connection), holding nothing here meanwhile. A 503 would answer it with a
  // Retry-After, but only once its request head is read, which a refused sender could trickle
  // for as long as the header timeout. Counted on each thread's own accepts: when several
  // threads accept at once, as many connections as threads may pass the limit for a moment.
  static MHD_Result Accept(void* self, const sockaddr*, socklen_t) {
    auto* server = static_cast<OtlpHttpServerImpl*>(self);
    if (server->open_.load(std::memory_order_relaxed) < server->max_connections_) return MHD_YES;
    metrics::ShipperMetrics::Get().OtlpHttpConnectionRefused();
    const uint64_t refused = server->refused_.fetch_add(1, std::memory_order_relaxed) + 1;
    if ((refused & (refused - 1)) == 0) {  // the 1st, 2nd, 4th, ... refusal
      LOG(WARNING) << "OTLP/HTTP: refused a connection (" << refused
                   << " so far): " << server->max_connections_
                   << " are open, shipper.otlp.http.max_connections; raise it for more senders";
    }
    return MHD_NO;
  }

  static void OnConnection(void* self, MHD_Connection* connection, void** context,
                           MHD_ConnectionNotificationCode code) {
    auto* server = static_cast<OtlpHttpServerImpl*>(self);
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
      auto* state = new Connection;
      const MHD_ConnectionInfo* info =
          MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
      state->fd = info != nullptr ? info->connect_fd : -1;
      *context = state;
      server->open_.fetch_add(1, std::memory_order_relaxed);
      absl::MutexLock lock(&server->mu_);
      server->deadlines_[state] = absl::Now() + server->header_timeout_;
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
      auto* state = static_cast<Connection*>(*context);
      if (state == nullptr) return;
      {
        // Before its socket is closed: the sweeper shuts down only sockets still here.
        absl::MutexLock lock(&server->mu_);
        server->deadlines_.erase(state);
      }
      server->open_.fetch_sub(1, std::memory_order_relaxed);
      delete state;
      *context = nullptr;
    }
  }

  static void OnCompleted(void* self, MHD_Connection* connection, void** context,
                          MHD_RequestTerminationCode) {
    delete static_cast<Request*>(*context);
    *context = nullptr;
    auto* server = static_cast<OtlpHttpServerImpl*>(self);
    server->SetDeadline(connection, absl::Now() + server->idle_timeout_);
  }

  void SetDeadline(MHD_Connection* connection, absl::Time deadline) {
    const MHD_ConnectionInfo* info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    if (info == nullptr || info->socket_context == nullptr) return;
    absl::MutexLock lock(&mu_);
    deadlines_[static_cast<Connection*>(info->socket_context)] = deadline;
  }

  // libmicrohttpd calls it with the head, with each piece of the body, once the body ended, and
  // once more after its connection is resumed.
  static MHD_Result Access(void* self, MHD_Connection* connection, const char* url,
                           const char* method, const char*, const char* upload_data,
                           size_t* upload_data_size, void** context) {
    auto* server = static_cast<OtlpHttpServerImpl*>(self);
    auto* request = static_cast<Request*>(*context);
    if (request == nullptr) return server->Head(connection, url, method, context);
    if (*upload_data_size != 0) {
      request->exchange.Feed(absl::string_view(upload_data, *upload_data_size));
      *upload_data_size = 0;
      return MHD_YES;
    }
    if (!request->finished) {
      request->finished = true;
      request->exchange.Finish([request, connection](OtlpHttpAnswer answer) {
        absl::MutexLock lock(&request->mu);
        request->answer = std::move(answer);
        if (request->suspended) MHD_resume_connection(connection);
      });
      absl::MutexLock lock(&request->mu);
      if (!request->answer) {
        // Resumed by the answer, which takes this lock first: never before it is suspended.
        request->suspended = true;
        {
          absl::MutexLock server_lock(&server->mu_);
          ++server->suspended_;
        }
        MHD_suspend_connection(connection);
        return MHD_YES;
      }
    }
    absl::MutexLock lock(&request->mu);
    if (request->suspended) {
      request->suspended = false;
      absl::MutexLock server_lock(&server->mu_);
      --server->suspended_;
    }
    return Reply(connection, *request->answer, /*close=*/false);
  }

  // A request's head arrived.
  MHD_Result Head(MHD_Connection* connection, const char* url, const char* method, void** context) {
    SetDeadline(connection, absl::InfiniteFuture());
    if (tls_ != nullptr) {
      const MHD_ConnectionInfo* info =
          MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
      auto* state = info != nullptr ? static_cast<Connection*>(info->socket_context) : nullptr;
      if (state != nullptr && !state->checked) {
        const absl::Status client = tls_->CheckClient(connection);
        if (!client.ok()) {
          VLOG(1) << "OTLP/HTTP: refused a TLS client: " << client.message();
          return MHD_NO;  // closes the connection
        }
        state->checked = true;
      }
    }
    OtlpHttpHead head{method, url, Header(connection, "Content-Type"), {}, std::nullopt};
    MHD_get_connection_values(
        connection, MHD_HEADER_KIND,
        +[](void* encoding, MHD_ValueKind, const char* name, const char* value) {
          if (absl::EqualsIgnoreCase(name, "Content-Encoding")) {
            auto* joined = static_cast<std::string*>(encoding);
            absl::StrAppend(joined, joined->empty() ? "" : ",", value);
          }
          return MHD_YES;
        },
        &head.content_encoding);
    size_t length = 0;
    if (absl::SimpleAtoi(Header(connection, "Content-Length"), &length)) {
      head.content_length = length;
    }
    auto* request = new Request(exports_, std::move(head));
    *context = request;
    if (std::optional<OtlpHttpAnswer> refusal = request->exchange.Refusal()) {
      absl::MutexLock lock(&request->mu);
      request->answer = *std::move(refusal);
      // The body is not read: the connection closes once the answer is sent.
      return Reply(connection, *request->answer, /*close=*/true);
    }
    return MHD_YES;
  }

  static std::string Header(MHD_Connection* connection, const char* name) {
    const char* value = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, name);
    return value != nullptr ? value : "";
  }

  // Queues `answer`, which lives as long as its request, to be sent.
  static MHD_Result Reply(MHD_Connection* connection, const OtlpHttpAnswer& answer, bool close) {
    MHD_Response* response = MHD_create_response_from_buffer(
        answer.body.size(), const_cast<char*>(answer.body.data()), MHD_RESPMEM_PERSISTENT);
    if (response == nullptr) return MHD_NO;
    MHD_add_response_header(response, "Content-Type", answer.content_type);
    for (const auto& [name, value] : answer.headers) {
      MHD_add_response_header(response, name, value.c_str());
    }
    if (close) MHD_add_response_header(response, "Connection", "close");
    const MHD_Result queued = MHD_queue_response(connection, answer.status, response);
    MHD_destroy_response(response);
    return queued;
  }

  // Closes connections past their deadline: shutting their sockets down makes their server
  // thread see them end and close them, as when the client goes.
  void Sweep() {
    const absl::Duration tick = std::clamp(std::min(header_timeout_, idle_timeout_) / 8,
                                           absl::Milliseconds(5), absl::Seconds(1));
    absl::MutexLock lock(&mu_);
    while (!mu_.AwaitWithTimeout(absl::Condition(&stopping_), tick)) {
      const absl::Time now = absl::Now();
      for (auto& [connection, deadline] : deadlines_) {
        if (deadline > now) continue;
        shutdown(connection->fd, SHUT_RDWR);
        deadline = absl::InfiniteFuture();
      }
    }
  }

  // Constant after construction.
  OtlpExports* const exports_;
  const std::unique_ptr<OtlpHttpTls> tls_;  // null without TLS
  const size_t max_connections_;
  const absl::Duration header_timeout_;
  const absl::Duration idle_timeout_;
  // Set by Start().
  MHD_Daemon* daemon_ = nullptr;
  int port_ = 0;
  std::thread sweeper_;

  std::atomic<size_t> open_{0};  // connections open
  std::atomic<uint64_t> refused_{0};
  std::atomic<bool> started_{false};  // for LogMhd

  absl::Mutex mu_;
  // Each open connection's deadline: when its next request head must have arrived (infinite
  // while a request is read or answered). The sweeper closes it then.
  absl::flat_hash_map<Connection*, absl::Time> deadlines_ ABSL_GUARDED_BY(mu_);
  int suspended_ ABSL_GUARDED_BY(mu_) = 0;  // connections waiting for their export's answer
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace

absl::StatusOr<std::unique_ptr<OtlpHttpServer>> OtlpHttpServer::Start(const OtlpSettings& settings,
                                                                      OtlpExports* exports) {
  absl::StatusOr<std::unique_ptr<OtlpHttpTls>> tls = OtlpHttpTls::Load(settings.ssl);
  if (!tls.ok()) return tls.status();
  auto server = std::make_unique<OtlpHttpServerImpl>(settings, exports, *std::move(tls));
  absl::Status status = server->Start(settings.http_address);
  if (!status.ok()) return status;
  return server;
}

}  // namespace shipper
