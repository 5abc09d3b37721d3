// OTLP/HTTP: POST /v1/logs on shipper.otlp.http.server, each request handed to OtlpExports
// (otlp_exports.h) and answered with its outcome, as the OTLP specification's "OTLP/HTTP" says.
//
// - Bodies: application/x-protobuf or application/json (OTLP/JSON, otlp_json.h), either with
//   Content-Encoding gzip or deflate (inflated by otlp_gzip.h's Inflater, as gRPC's gzip); the
//   reply is in the request's encoding: 200 with an ExportLogsServiceResponse (partialSuccess
//   only when records were rejected), else a google.rpc.Status saying why, for every error.
// - 400 undecodable (the decode error), 404 other paths (/v1/traces and /v1/metrics say that
//   Shipper takes logs only), 405 other methods, 413 larger than shipper.otlp.max_message_size
//   as sent or once decompressed (a gzip bomb stops there), 415 other content types or
//   encodings, 503 with Retry-After when the queue or the memory budget has no room for all of
//   it now or Shipper is shutting down.
// - Memory: a request's body (decompressed) is held in memory charged to the input's memory
//   budget before it is allocated, as it arrives (otlp_request_body.h); a JSON body is read once
//   more, building nothing, to count what decoding it holds and how many records it has, and
//   that is charged before it is decoded (otlp_json.h JsonDecodingCost). Only the protobuf is
//   held while Export() converts it, however the request was sent; all of it goes back once
//   Export() returned. No room now is a 503; 413 only when the request by itself is larger than
//   the whole budget.
// - Connections are kept alive (HTTP/1.1), each served by one of the server's threads for as
//   long as it stays open and idle no longer than 5 s. A request waits on its thread for
//   Export's answer (with ack: persisted, until its records are persisted): HTTP/1.1 has one
//   request in flight per connection, so waiting there costs the thread alone, nothing else.
//   Connections beyond kThreads wait for a thread, behind kept-alive ones that may not free it
//   for a long time: size kThreads for every connection expected at once. Many senders (an
//   aggregator's hundreds) are gRPC's to take, which multiplexes calls on a few threads.
//
// Thread safety: the handlers run on the server's own threads and call OtlpExports from there.
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
  // Connections served at once. The Collector's otlphttp exporter opens 10 by default
  // (sending_queue.num_consumers), the SDKs one or a few. With 32 threads, 64 connections
  // exporting at once starved half of them (p99 7.5 s, 40k records/s); with 128, 229k records/s
  // and p99 1.3 s (BENCHMARKS.md). An idle thread costs about 75 KB of RSS.
  static constexpr int kThreads = 128;

  // Listens on settings.http_address (port 0: a free one, see port()), with TLS when
  // settings.ssl has a certificate. UNAVAILABLE naming shipper.otlp.http.server when it cannot.
  // `exports` must outlive the server.
  static absl::StatusOr<std::unique_ptr<OtlpHttpServer>> Start(const OtlpSettings& settings,
                                                               OtlpExports* exports);
  // Stops listening, closes the connections and joins the threads, waiting for the requests in
  // flight. REQUIRES: their exports will be answered (the input called exports->Drained()).
  virtual ~OtlpHttpServer() = default;

  // The port it listens on.
  virtual int port() const = 0;
};

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_INPUT_OTLP_OTLP_HTTP_SERVER_H_
