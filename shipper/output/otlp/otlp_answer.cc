#include "shipper/output/otlp/otlp_answer.h"

#include <algorithm>
#include <iterator>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "proto/otlp/logs_service.pb.h"
#include "proto/rpc/status.pb.h"
#include "rapidjson/document.h"

namespace shipper {
namespace {

using opentelemetry::proto::collector::logs::v1::ExportLogsServiceResponse;

// grpc::StatusCode's numbers, which absl::StatusCode shares.
enum Code : int {
  kOk = 0,
  kCancelled = 1,
  kDeadlineExceeded = 4,
  kInvalidArgument = 3,
  kResourceExhausted = 8,
  kAborted = 10,
  kOutOfRange = 11,
  kUnavailable = 14,
  kDataLoss = 15,
};

absl::Duration Capped(absl::Duration delay) {
  return std::clamp(delay, absl::ZeroDuration(), kMaxRetryDelay);
}

// RetryInfo's delay among a google.rpc.Status's details; nullopt: none.
std::optional<absl::Duration> RetryDelay(const google::rpc::Status& status) {
  for (const google::protobuf::Any& detail : status.details()) {
    google::rpc::RetryInfo info;
    if (absl::EndsWith(detail.type_url(), "/google.rpc.RetryInfo") && detail.UnpackTo(&info)) {
      return Capped(absl::Seconds(info.retry_delay().seconds()) +
                    absl::Nanoseconds(info.retry_delay().nanos()));
    }
  }
  return std::nullopt;
}

// The three signals' responses number their fields alike (partial_success 1; in it the rejected
// count 1, error_message 2): ExportLogsServiceResponse reads each.
void PartialSuccess(const ExportLogsServiceResponse& response, ExportAnswer* answer) {
  if (!response.has_partial_success()) return;
  answer->rejected = response.partial_success().rejected_log_records();
  answer->rejected_message = response.partial_success().error_message();
}

bool IsJson(absl::string_view content_type) {
  return absl::StartsWithIgnoreCase(absl::StripLeadingAsciiWhitespace(content_type),
                                    "application/json");
}

// Retry-After: seconds, or an HTTP date.
absl::Duration RetryAfter(absl::string_view header) {
  header = absl::StripAsciiWhitespace(header);
  int64_t seconds;
  if (absl::SimpleAtoi(header, &seconds)) return Capped(absl::Seconds(seconds));
  absl::Time when;
  std::string error;
  if (absl::ParseTime("%a, %d %b %Y %H:%M:%S", std::string(absl::StripSuffix(header, " GMT")),
                      absl::UTCTimeZone(), &when, &error)) {
    return Capped(when - absl::Now());
  }
  return absl::ZeroDuration();
}

const rapidjson::Value* Member(const rapidjson::Value& v, const char* name) {
  if (!v.IsObject()) return nullptr;
  const auto it = v.FindMember(name);
  return it == v.MemberEnd() ? nullptr : &it->value;
}

// A JSON Export*ServiceResponse's partial success; false when `body` is not JSON.
bool JsonPartialSuccess(absl::string_view body, ExportAnswer* answer) {
  rapidjson::Document doc;
  doc.Parse(body.data(), body.size());
  if (doc.HasParseError()) return false;
  const rapidjson::Value* partial = Member(doc, "partialSuccess");
  if (partial == nullptr) return true;
  // Each signal's response names its count: one of them is there.
  for (const char* name : {"rejectedLogRecords", "rejectedSpans", "rejectedDataPoints"}) {
    const rapidjson::Value* n = Member(*partial, name);
    if (n == nullptr) continue;
    // int64 is a string in the protobuf JSON mapping; a number is taken too.
    if (n->IsString() && !absl::SimpleAtoi(n->GetString(), &answer->rejected)) {
      answer->rejected = 0;
    }
    if (n->IsInt64()) answer->rejected = n->GetInt64();
  }
  if (const rapidjson::Value* m = Member(*partial, "errorMessage"); m && m->IsString()) {
    answer->rejected_message = m->GetString();
  }
  return true;
}

// The message of an error answer's google.rpc.Status, or the body's start when it is not one.
std::string ErrorMessage(absl::string_view content_type, absl::string_view body) {
  if (IsJson(content_type)) {
    rapidjson::Document doc;
    doc.Parse(body.data(), body.size());
    if (const rapidjson::Value* m = doc.HasParseError() ? nullptr : Member(doc, "message");
        m && m->IsString()) {
      return m->GetString();
    }
  } else if (absl::StartsWithIgnoreCase(content_type, "application/x-protobuf")) {
    google::rpc::Status status;
    if (status.ParseFromArray(body.data(), static_cast<int>(body.size())) &&
        !status.message().empty()) {
      return status.message();
    }
  }
  return std::string(body.substr(0, 300));
}

}  // namespace

ExportAnswer GrpcAnswer(int code, absl::string_view message, absl::string_view details,
                        absl::string_view response) {
  ExportAnswer answer;
  answer.status = absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
  answer.message = absl::StrCat(answer.status, ": ", message);
  google::rpc::Status status;
  std::optional<absl::Duration> delay;
  if (!details.empty() && status.ParseFromArray(details.data(), static_cast<int>(details.size()))) {
    delay = RetryDelay(status);
  }
  switch (code) {
    case kOk: {
      answer.verdict = ExportAnswer::kWritten;
      answer.message.clear();
      ExportLogsServiceResponse parsed;
      if (parsed.ParseFromArray(response.data(), static_cast<int>(response.size()))) {
        PartialSuccess(parsed, &answer);
      }
      return answer;
    }
    case kInvalidArgument:
      answer.verdict = ExportAnswer::kInvalid;
      break;
    case kResourceExhausted:
      answer.verdict = delay ? ExportAnswer::kRetry : ExportAnswer::kTooLarge;
      break;
    case kUnavailable:
    case kDeadlineExceeded:
    case kAborted:
    case kOutOfRange:
    case kDataLoss:
    case kCancelled:
      answer.verdict = ExportAnswer::kRetry;
      break;
    default:
      answer.verdict = ExportAnswer::kRefused;
  }
  if (delay) answer.retry_delay = *delay;
  return answer;
}

ExportAnswer HttpAnswer(long status, absl::string_view error, absl::string_view content_type,
                        absl::string_view retry_after, absl::string_view body) {
  ExportAnswer answer;
  if (status == 0) {
    answer.status = "none";
    answer.message = std::string(error);
    answer.verdict = ExportAnswer::kRetry;
    return answer;
  }
  answer.status = absl::StrCat(status);
  if (status >= 200 && status < 300) {
    answer.verdict = ExportAnswer::kWritten;
    if (IsJson(content_type)) {
      JsonPartialSuccess(body, &answer);
    } else {
      ExportLogsServiceResponse parsed;
      if (parsed.ParseFromArray(body.data(), static_cast<int>(body.size()))) {
        PartialSuccess(parsed, &answer);
      }
    }
    return answer;
  }
  answer.message = absl::StrCat(status, ": ", ErrorMessage(content_type, body));
  switch (status) {
    case 429:
    case 502:
    case 503:
    case 504:
      answer.verdict = ExportAnswer::kRetry;
      answer.retry_delay = RetryAfter(retry_after);
      break;
    case 413:
      answer.verdict = ExportAnswer::kTooLarge;
      break;
    case 400:
      answer.verdict = ExportAnswer::kInvalid;
      break;
    default:
      answer.verdict = ExportAnswer::kRefused;
  }
  return answer;
}

}  // namespace shipper
