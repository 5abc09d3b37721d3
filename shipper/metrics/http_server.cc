#include "shipper/metrics/http_server.h"

#include <sys/socket.h>

#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "glog/logging.h"
#include "httplib.h"
#include "shipper/metrics/metric.h"

namespace shipper::metrics {
namespace {

constexpr int kThreads = 2;

class HttpServerImpl final : public HttpServer {
 public:
  HttpServerImpl(std::function<std::string()> metrics, std::function<bool()> healthy)
      : metrics_(std::move(metrics)), healthy_(std::move(healthy)) {
    server_.new_task_queue = [] { return new httplib::ThreadPool(kThreads); };
    // One request per connection: httplib polls an idle kept-alive connection every 10 ms, which
    // an idle sidecar should not pay for, and a scrape every few seconds gains nothing from it.
    // A client that connects and sends nothing holds a thread (and delays stopping) for 1 s.
    server_.set_keep_alive_max_count(1);
    server_.set_keep_alive_timeout(1);
    // httplib's default adds SO_REUSEPORT, with which a second Shipper on the same port would
    // bind too and the kernel would split the scrapes between the two. SO_REUSEADDR alone still
    // lets a restarted Shipper bind while old connections linger in TIME_WAIT.
    server_.set_socket_options([](int socket) {
      int yes = 1;
      setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    });
    server_.Get("/metrics", [this](const httplib::Request&, httplib::Response& response) {
      response.set_content(metrics_(), kTextContentType);
    });
    server_.Get("/healthz", [this](const httplib::Request&, httplib::Response& response) {
      const bool healthy = healthy_();
      response.status = healthy ? 200 : 503;
      response.set_content(healthy ? "ok\n" : "shutting down\n", "text/plain");
    });
  }

  ~HttpServerImpl() override {
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }

  absl::Status Listen(const std::string& host, int port) {
    if (port == 0) {
      port_ = server_.bind_to_any_port(host);
    } else if (server_.bind_to_port(host, port)) {
      port_ = port;
    }
    if (port_ <= 0) {
      return absl::UnavailableError(absl::StrCat(
          "cannot serve metrics on ", host, ":", port,
          " (address in use or not a local address): change http.host / http.port, or set "
          "http.enabled: false"));
    }
    thread_ = std::thread([this] {
      if (!server_.listen_after_bind()) LOG(ERROR) << "metrics server stopped unexpectedly";
    });
    // stop() does nothing until the accept loop runs: wait for it, so destruction cannot hang.
    while (!server_.is_running()) absl::SleepFor(absl::Milliseconds(1));
    return absl::OkStatus();
  }

  int port() const override { return port_; }

 private:
  const std::function<std::string()> metrics_;
  const std::function<bool()> healthy_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;  // runs the accept loop; the pool's threads serve requests
};

}  // namespace

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const std::string& host, int port,
                                                              std::function<std::string()> metrics,
                                                              std::function<bool()> healthy) {
  auto server = std::make_unique<HttpServerImpl>(std::move(metrics), std::move(healthy));
  absl::Status status = server->Listen(host, port);
  if (!status.ok()) return status;
  return server;
}

}  // namespace shipper::metrics
