// OTLP/HTTP: POST /v1/logs on shipper.otlp.http.server. What a request gets (routing, bodies,
// memory, the answers) is otlp_http_exchange.h's, each request handed to one exchange: the
// server here only carries them.
//
// The server is libmicrohttpd's, event-driven: kThreads threads, each with its own epoll set,
// serve every connection; a connection costs its socket and a few KiB, not a thread.
// - At most shipper.otlp.http.max_connections are open; one more is closed as soon as it is
//   accepted, before anything of it is read, so that its sender learns at once and retries
//   (every OTLP exporter retries a failed connection) while holding nothing here. A 503 with
//   Retry-After would tell it more, but only after its request head was read, which a refused
//   sender could trickle for as long as the header timeout. When several threads accept at
//   once, as many connections as threads may pass the limit for a moment.
// - A new connection's first request head must arrive within shipper.otlp.http.header_timeout;
//   a kept-alive one's next within shipper.otlp.http.idle_timeout of the last answer (both
//   deadlines, however slowly the bytes trickle in); a body that stalls for idle_timeout
//   (whole seconds) closes its connection too.
// - A request whose answer waits (ack: persisted) suspends its connection, holding no thread,
//   and resumes it when Export() answers.
// - Destruction closes every connection at once, whatever its clients do (a trickled body, a
//   half-open connection): it waits only for a request a thread is converting.
//
// Thread safety: requests run on the server's threads and call OtlpExports from there.
// Construction and destruction from one thread.
#ifndef SHIPPER_SHIPPER_INPUT_OTLP_OTLP_HTTP_SERVER_H_
#define SHIPPER_SHIPPER_INPUT_OTLP_OTLP_HTTP_SERVER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "shipper/input/otlp/otlp_exports.h"
#include "shipper/input/otlp/otlp_settings.h"

namespace shipper {

class OtlpHttpServer {
 public:
  // The threads serving connections. Each converts the requests of its connections itself, so
  // that a long conversion (a 64 MiB export) holds up a quarter of the connections, not all.
  static constexpr int kThreads = 4;

  // Listens on settings.http_address (port 0: a free one, see port()), with TLS when
  // settings.ssl has a certificate. UNAVAILABLE naming shipper.otlp.http.server when it cannot.
  // `exports` must outlive the server.
  static absl::StatusOr<std::unique_ptr<OtlpHttpServer>> Start(const OtlpSettings& settings,
                                                               OtlpExports* exports);
  // Stops listening, closes every connection and joins the threads.
  // REQUIRES: every export it started was answered (the input called exports->Drained()).
  virtual ~OtlpHttpServer() = default;

  // The port it listens on.
  virtual int port() const = 0;
};

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_INPUT_OTLP_OTLP_HTTP_SERVER_H_
