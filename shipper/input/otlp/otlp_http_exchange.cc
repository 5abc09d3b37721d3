#include "shipper/input/otlp/otlp_http_exchange.h"

#include <cmath>
#include <cstdint>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "shipper/input/otlp/otlp_json.h"
#include "shipper/input/otlp/otlp_response.h"

namespace shipper {
namespace {

constexpr char kProtobuf[] = "application/x-protobuf";
constexpr char kJson[] = "application/json";

// The signal a path takes (POST /v1/logs, /v1/traces, /v1/metrics), if any.
std::optional<OtlpSignal> SignalOf(absl::string_view path) {
  if (!absl::ConsumePrefix(&path, "/v1/")) return std::nullopt;
  for (OtlpSignal signal : {OtlpSignal::kLogs, OtlpSignal::kTraces, OtlpSignal::kMetrics}) {
    if (path == SignalName(signal)) return signal;
  }
  return std::nullopt;
}

// The media type of a Content-Type header, lowercase, without its parameters.
std::string MediaType(absl::string_view header) {
  return absl::AsciiStrToLower(absl::StripAsciiWhitespace(header.substr(0, header.find(';'))));
}

int HttpCode(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
      return 200;
    case absl::StatusCode::kInvalidArgument:
      return 400;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kUnimplemented:
      return 405;
    case absl::StatusCode::kResourceExhausted:
      return 413;
    case absl::StatusCode::kUnavailable:
      return 503;
    default:
      return 500;
  }
}

// Bytes taken from a MemoryBudget, given back when it goes.
class Charge {
 public:
  explicit Charge(runtime::MemoryBudget* budget) : budget_(budget) {}
  ~Charge() { ReleaseAll(); }
  Charge(const Charge&) = delete;
  Charge& operator=(const Charge&) = delete;

  // Holds at least `total` bytes afterwards, or false (holding what it held) when the budget
  // has no room for them now.
  bool Reserve(size_t total) {
    if (total <= bytes_) return true;
    if (!budget_->TryAcquire(total - bytes_)) return false;
    bytes_ = total;
    return true;
  }
  size_t bytes() const { return bytes_; }
  // Gives back what it holds beyond `total`.
  void ShrinkTo(size_t total) {
    if (total >= bytes_) return;
    budget_->Release(bytes_ - total);
    bytes_ = total;
  }
  void ReleaseAll() {
    budget_->Release(bytes_);
    bytes_ = 0;
  }

 private:
  runtime::MemoryBudget* const budget_;
  size_t bytes_ = 0;
};

}  // namespace

OtlpHttpExchange::OtlpHttpExchange(OtlpExports* exports, OtlpHttpHead head, absl::Time arrival)
    : exports_(exports),
      head_(std::move(head)),
      arrival_(arrival),
      json_(MediaType(head_.content_type) == kJson),
      signal_(SignalOf(head_.path)),
      body_(exports->budget()) {}

std::optional<OtlpHttpAnswer> OtlpHttpExchange::Refusal() {
  if (!signal_) {
    return AnswerOf({absl::NotFoundError(absl::StrCat(
        head_.path, ": not found; OTLP is POST /v1/logs, /v1/traces or /v1/metrics"))});
  }
  if (head_.method != "POST") {
    OtlpHttpAnswer answer = AnswerOf(
        {absl::UnimplementedError(absl::StrCat(head_.method, " ", head_.path, ": only POST"))});
    answer.headers.emplace_back("Allow", "POST");
    return answer;
  }
  if (!json_ && MediaType(head_.content_type) != kProtobuf) {
    OtlpHttpAnswer answer = Answered(exports_->Refused(absl::InvalidArgumentError(absl::StrCat(
        "Content-Type '", head_.content_type, "': OTLP/HTTP takes ", kProtobuf, " or ", kJson))));
    answer.status = 415;
    return answer;
  }
  const std::optional<ContentCoding> coding = ParseContentEncoding(head_.content_encoding);
  if (!coding) {
    OtlpHttpAnswer answer = Answered(exports_->Refused(absl::InvalidArgumentError(
        absl::StrCat("Content-Encoding '", head_.content_encoding,
                     "': OTLP/HTTP takes gzip, deflate, zstd or none"))));
    answer.status = 415;
    return answer;
  }
  coding_ = *coding;
  const size_t limit = exports_->max_message_size();
  if (head_.content_length && *head_.content_length > limit) {
    // Larger than the limit as sent, compressed or not.
    total_ = *head_.content_length;
    stop_ = Stop::kTooLarge;
  } else if (coding_ != ContentCoding::kIdentity) {
    decoder_.emplace(coding_, limit, "shipper.otlp.max_message_size", exports_->budget());
  } else if (head_.content_length && !body_.Expect(*head_.content_length)) {
    total_ = *head_.content_length;
    stop_ = Stop::kNoRoom;
  }
  return std::nullopt;
}

bool OtlpHttpExchange::Keep(const char* data, size_t size) {
  total_ = body_.size() + size;
  if (total_ > exports_->max_message_size()) {
    stop_ = Stop::kTooLarge;
    return false;
  }
  if (!body_.Append(data, size)) {
    stop_ = Stop::kNoRoom;
    return false;
  }
  return true;
}

void OtlpHttpExchange::Feed(absl::string_view data) {
  if (stop_ != Stop::kNo) return;  // read past, dropped
  sent_ += data.size();
  if (sent_ > exports_->max_message_size()) {
    total_ = sent_;
    stop_ = Stop::kTooLarge;
  } else if (!decoder_) {
    Keep(data.data(), data.size());
  } else {
    const absl::Status status =
        decoder_->Feed(data, [this](const char* piece, size_t size) { return Keep(piece, size); });
    if (absl::IsResourceExhausted(status)) {
      total_ = decoder_->decoded();
      stop_ = Stop::kTooLarge;
    } else if (absl::IsUnavailable(status)) {
      stop_ = Stop::kNoRoom;  // the decoder's own state
    } else if (!status.ok() && stop_ == Stop::kNo) {
      undecodable_ = status;
      stop_ = Stop::kUndecodable;
    }
  }
  if (stop_ != Stop::kNo) {
    body_.Clear();
    decoder_.reset();
  }
}

ExportOutcome OtlpHttpExchange::BodyOutcome() {
  if (stop_ == Stop::kNo && decoder_) {
    undecodable_ = decoder_->Finish();
    decoder_.reset();  // zstd's window is not held while the request is converted
    if (!undecodable_.ok()) stop_ = Stop::kUndecodable;
  }
  switch (stop_) {
    case Stop::kTooLarge:
      return exports_->TooLarge(total_);
    case Stop::kNoRoom:
      return NoRoom(total_);
    case Stop::kUndecodable:
      return exports_->Refused(undecodable_);
    case Stop::kNo:
      break;
  }
  if (!body_.Flatten()) {
    // Its copy is the transport's doing, not the request's size: told to retry, never 413.
    return NoRoom(body_.size());
  }
  return ExportOutcome{absl::OkStatus()};
}

void OtlpHttpExchange::Finish(Answer answer) {
  std::string decoded;
  Charge decoding(exports_->budget());
  // What it held goes back before the sender hears of it.
  const auto refuse = [&](const ExportOutcome& outcome) {
    body_.Clear();
    decoding.ReleaseAll();
    answer(Answered(outcome));
  };
  const ExportOutcome refused = BodyOutcome();
  if (!refused.status.ok()) {
    refuse(refused);
    return;
  }
  absl::string_view protobuf = body_.bytes();
  if (json_) {
    // Counted first, built only once charged: what the decoding holds is not the JSON's size
    // (`{}` is 3 bytes and about 300 once decoded).
    absl::StatusOr<otlp::JsonCost> cost =
        otlp::JsonDecodingCost(body_.bytes(), OtlpExports::kMaxRecords, *signal_);
    if (!cost.ok()) {
      refuse(exports_->Refused(cost.status()));
      return;
    }
    // The body and its decoding are held together until the decoding is built.
    const size_t holds = body_.charged() + cost->bytes;
    if (absl::Status fits = exports_->Fits(holds, "decoding the OTLP/JSON request"); !fits.ok()) {
      refuse(exports_->Refused(std::move(fits)));
      return;
    }
    if (!decoding.Reserve(cost->bytes)) {
      refuse(NoRoom(holds));
      return;
    }
    absl::Status status = otlp::JsonToProtobufRequest(body_.bytes(), &decoded, *signal_);
    if (!status.ok()) {
      refuse(exports_->Refused(status));
      return;
    }
    // Only the protobuf is held while Export() converts it, as when it came as protobuf.
    body_.Clear();
    decoding.ShrinkTo(decoded.capacity());
    protobuf = decoded;
  }
  exports_->Export(
      OtlpTransport::kHttp, *signal_, protobuf, arrival_,
      [this, answer = std::move(answer)](const ExportOutcome& outcome) mutable {
        answer(Answered(outcome));
      },
      json_ ? decoding.bytes() : body_.charged());
  // Export() no longer needs them: the budget gets them back before the wait for the ack.
  body_.Clear();
}

ExportOutcome OtlpHttpExchange::NoRoom(size_t bytes) {
  if (absl::Status fits = exports_->Fits(bytes, "the request"); !fits.ok()) {
    return exports_->Refused(std::move(fits));
  }
  return exports_->Unavailable("no room in the memory budget for the request's body now");
}

OtlpHttpAnswer OtlpHttpExchange::Answered(const ExportOutcome& outcome) const {
  OtlpExports::CountAnswer(OtlpTransport::kHttp, *signal_, arrival_, outcome);
  return AnswerOf(outcome);
}

OtlpHttpAnswer OtlpHttpExchange::AnswerOf(const ExportOutcome& outcome) const {
  OtlpHttpAnswer answer;
  answer.status = HttpCode(outcome.status.code());
  answer.content_type = json_ ? kJson : kProtobuf;
  if (!outcome.status.ok()) {
    if (outcome.status.code() == absl::StatusCode::kUnavailable) {
      const double seconds = std::ceil(absl::ToDoubleSeconds(outcome.retry_delay));
      answer.headers.emplace_back("Retry-After", absl::StrCat(static_cast<int64_t>(seconds)));
    }
    answer.body = otlp::StatusBody(outcome.status, json_);
    return answer;
  }
  const std::unique_ptr<google::protobuf::Message> reply = ExportResponse(*signal_, outcome);
  answer.body = json_ ? otlp::ResponseToJson(*reply) : reply->SerializeAsString();
  return answer;
}

}  // namespace shipper
