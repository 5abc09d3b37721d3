// One OTLP/HTTP request, from its head to its answer, whatever HTTP server carries it: what the
// OTLP specification's "OTLP/HTTP" asks of a receiver of logs, traces and metrics, kept apart
// from the server so that the server can change without touching it.
//
// - Routing: POST /v1/logs, /v1/traces and /v1/metrics, each handed to Export() with its
//   signal. 404 for other paths, 405 for other methods on these; 415 for content types other
//   than application/x-protobuf and application/json, and for Content-Encodings other than gzip,
//   deflate and zstd (shipper/codec/compression.h). These are answered from the head, the body
//   unread.
// - The body: a Content-Length beyond shipper.otlp.max_message_size is 413 at once (the body is
//   still read past, unkept, so that a sender still sending reads the answer). The rest arrives
//   through Feed(), decompressed there (never past max_message_size: a gzip bomb stops there,
//   413) into memory charged to the memory budget before it is allocated (otlp_request_body.h);
//   a JSON body is read once more, building nothing, to count what decoding it holds, charged
//   before it is decoded (otlp_json.h JsonDecodingCost). No room now is 503 with Retry-After; 413
//   only when the request by itself holds more than OtlpExports::ceiling() (the whole budget,
//   or 16 x max_message_size without one).
// - The answer: Export()'s outcome (otlp_exports.h) in the request's encoding: 200 with an
//   Export*ServiceResponse of the signal (otlp_response.h), else a google.rpc.Status for every
//   error, 404/405/415 included (in JSON when the request's Content-Type is JSON, else protobuf).
//
// Thread safety: an exchange is driven by one thread at a time (Refusal, Feed, Finish in that
// order); the answer it gives to Finish's callback may come on another thread (the queue's ACK
// path, with ack: persisted). Destroy it only once Finish() returned and its answer came, or
// without Finish() (the connection went away).
#ifndef SHIPPER_SHIPPER_INPUT_OTLP_OTLP_HTTP_EXCHANGE_H_
#define SHIPPER_SHIPPER_INPUT_OTLP_OTLP_HTTP_EXCHANGE_H_

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "shipper/codec/compression.h"
#include "shipper/input/otlp/otlp_exports.h"
#include "shipper/input/otlp/otlp_request_body.h"

namespace shipper {

// What an exchange needs of a request's head.
struct OtlpHttpHead {
  std::string method;
  std::string path;
  std::string content_type;      // the Content-Type header as sent
  std::string content_encoding;  // every Content-Encoding header, joined by ","
  std::optional<size_t> content_length;
};

// What the server sends back.
struct OtlpHttpAnswer {
  int status = 200;
  const char* content_type = "";
  std::string body;
  std::vector<std::pair<const char*, std::string>> headers;  // Retry-After, Allow
};

class OtlpHttpExchange {
 public:
  using Answer = absl::AnyInvocable<void(OtlpHttpAnswer)>;

  // `exports` must outlive the exchange; `arrival` is when the head arrived.
  OtlpHttpExchange(OtlpExports* exports, OtlpHttpHead head, absl::Time arrival);
  OtlpHttpExchange(const OtlpHttpExchange&) = delete;
  OtlpHttpExchange& operator=(const OtlpHttpExchange&) = delete;

  // The answer to send now, without reading the body (another path, method, content type or
  // encoding): the server then closes the connection once it is sent, since the body was not
  // read. nullopt: the body goes to Feed().
  std::optional<OtlpHttpAnswer> Refusal();
  // The next bytes of the body as sent. Once the request is refused (too large, no room,
  // undecodable) the rest is read past and dropped.
  void Feed(absl::string_view data);
  // The whole body arrived: calls `answer` once, before returning or later (ack: persisted) from
  // the queue's ACK path or the thread calling OtlpExports::Drained(). `answer` must be quick.
  void Finish(Answer answer);

 private:
  enum class Stop { kNo, kTooLarge, kNoRoom, kUndecodable };

  // Keeps `size` decompressed bytes; false when the request stops here.
  bool Keep(const char* data, size_t size);
  // The outcome of the whole body, once it has ended: OK when Export() is to take it.
  ExportOutcome BodyOutcome();
  // No room in the budget for `bytes` now: 503, or 413 when they are more than all of it.
  ExportOutcome NoRoom(size_t bytes);
  // Answers `outcome` in the request's encoding.
  OtlpHttpAnswer AnswerOf(const ExportOutcome& outcome) const;
  // AnswerOf(outcome), counted (OtlpExports::CountAnswer): every answer to a request of a
  // signal goes through it once, but 404 and 405, which are not exports.
  OtlpHttpAnswer Answered(const ExportOutcome& outcome) const;

  OtlpExports* const exports_;
  const OtlpHttpHead head_;
  const absl::Time arrival_;
  bool json_ = false;
  // The path's; Refusal() answers 404 when it has none, and nothing else runs then.
  const std::optional<OtlpSignal> signal_;
  ContentCoding coding_ = ContentCoding::kIdentity;
  RequestBody body_;
  std::optional<Decoder> decoder_;
  Stop stop_ = Stop::kNo;
  absl::Status undecodable_;
  size_t sent_ = 0;   // what arrived, as sent
  size_t total_ = 0;  // what arrived, decompressed (or as sent, when it stopped for its size)
};

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_INPUT_OTLP_OTLP_HTTP_EXCHANGE_H_
