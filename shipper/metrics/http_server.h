// The monitoring HTTP endpoint (http.*): GET /metrics in the Prometheus text format and
// GET /healthz, served by cpp-httplib on two threads of its own (a scrape is rare and quick; two
// let a kept-alive Prometheus connection and a probe be served at once).
//
// Thread safety: the handlers run on the server's threads, so `metrics` and `healthy` must be
// thread-safe and must outlive the server. Destroying the server stops it and joins its threads.
#ifndef SHIPPER_SHIPPER_METRICS_HTTP_SERVER_H_
#define SHIPPER_SHIPPER_METRICS_HTTP_SERVER_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace shipper::metrics {

class HttpServer {
 public:
  // Listens on host:port (port 0: a free one, see port()). /metrics answers metrics();
  // /healthz answers 200 "ok" while healthy(), else 503 "shutting down". UNAVAILABLE, naming the
  // keys to change, when it cannot listen.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(const std::string& host, int port,
                                                           std::function<std::string()> metrics,
                                                           std::function<bool()> healthy);
  virtual ~HttpServer() = default;

  // The port it listens on.
  virtual int port() const = 0;
};

}  // namespace shipper::metrics

#endif  // SHIPPER_SHIPPER_METRICS_HTTP_SERVER_H_
