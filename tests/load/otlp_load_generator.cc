#include "tests/load/otlp_load_generator.h"

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "httplib.h"
#include "tests/load/otlp_shapes.h"
#include "tests/load/process_cpu.h"

namespace shipper::load {
namespace {

enum class Result { kOk, kRetry, kError };

// Sends one pre-serialized export and waits for its reply. One per in-flight slot.
class Sender {
 public:
  virtual ~Sender() = default;
  virtual Result Send(int request, std::string* error) = 0;
};

class GrpcSender final : public Sender {
 public:
  GrpcSender(std::shared_ptr<grpc::Channel> channel, OtlpSignal signal,
             const std::vector<grpc::ByteBuffer>* pool, absl::Duration timeout)
      : stub_(std::move(channel)), method_(ExportMethod(signal)), pool_(pool), timeout_(timeout) {}

  Result Send(int request, std::string* error) override {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + timeout_));
    grpc::ByteBuffer reply;
    grpc::Status status;
    absl::Notification done;
    stub_.UnaryCall(&context, method_, grpc::StubOptions(), &(*pool_)[request], &reply,
                    [&](grpc::Status s) {
                      status = std::move(s);
                      done.Notify();
                    });
    done.WaitForNotification();
    if (status.ok()) return Result::kOk;
    if (status.error_code() == grpc::StatusCode::UNAVAILABLE) return Result::kRetry;
    *error = absl::StrFormat("gRPC %d: %s", status.error_code(), status.error_message());
    return Result::kError;
  }

 private:
  grpc::GenericStub stub_;
  const std::string method_;
  const std::vector<grpc::ByteBuffer>* const pool_;
  const absl::Duration timeout_;
};

class HttpSender final : public Sender {
 public:
  HttpSender(const std::string& host, int port, OtlpSignal signal,
             const std::vector<std::string>* pool, absl::Duration timeout)
      : client_(host, port), path_(absl::StrCat("/v1/", SignalName(signal))), pool_(pool) {
    client_.set_keep_alive(true);
    client_.set_tcp_nodelay(true);
    client_.set_read_timeout(absl::ToInt64Seconds(timeout));
    client_.set_write_timeout(absl::ToInt64Seconds(timeout));
  }

  Result Send(int request, std::string* error) override {
    auto response = client_.Post(path_, (*pool_)[request], "application/x-protobuf");
    if (!response) {
      *error = "HTTP: " + httplib::to_string(response.error());
      return Result::kError;
    }
    if (response->status == 200) return Result::kOk;
    if (response->status == 503) return Result::kRetry;
    *error = absl::StrFormat("HTTP %d: %s", response->status, response->body);
    return Result::kError;
  }

 private:
  httplib::Client client_;
  const std::string path_;  // /v1/logs, /v1/traces or /v1/metrics
  const std::vector<std::string>* const pool_;
};

double Percentile(std::vector<double>* values, double p) {
  if (values->empty()) return 0;
  const size_t i = std::min(values->size() - 1, static_cast<size_t>(p * values->size()));
  std::nth_element(values->begin(), values->begin() + i, values->end());
  return (*values)[i];
}

// `s` with what a JSON string cannot hold as it is (quotes, backslashes, control bytes) as '?'.
std::string JsonSafe(std::string s) {
  for (char& c : s) {
    if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20) c = '?';
  }
  return s;
}

}  // namespace

absl::StatusOr<OtlpLoadResult> RunOtlpLoad(const OtlpLoadOptions& o) {
  const size_t colon = o.target.rfind(':');
  int port = 0;
  if (colon == std::string::npos ||
      !absl::SimpleAtoi(absl::string_view(o.target).substr(colon + 1), &port) || o.batch <= 0 ||
      o.inflight <= 0 || o.pool_requests <= 0 ||
      (o.events == 0 && o.duration <= absl::ZeroDuration())) {
    return absl::InvalidArgumentError(
        "needs target HOST:PORT, positive batch, inflight and pool_requests, and events or a "
        "duration");
  }
  const uint64_t exports =
      o.events > 0 ? (o.events + o.batch - 1) / o.batch : std::numeric_limits<uint64_t>::max();

  std::vector<std::string> pool;
  std::vector<grpc::ByteBuffer> buffers;
  for (int i = 0; i < o.pool_requests; ++i) {
    pool.push_back(MakeOtlpRequest(o.shape, static_cast<uint64_t>(i) * o.batch, o.batch));
    grpc::Slice slice(pool.back());
    buffers.emplace_back(&slice, 1);
  }

  std::vector<std::unique_ptr<Sender>> senders;
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  auto channel = grpc::CreateCustomChannel(o.target, grpc::InsecureChannelCredentials(), args);
  for (int i = 0; i < o.inflight; ++i) {
    if (o.transport == OtlpTransport::kGrpc) {
      senders.push_back(
          std::make_unique<GrpcSender>(channel, ShapeSignal(o.shape), &buffers, o.call_timeout));
    } else {
      senders.push_back(std::make_unique<HttpSender>(o.target.substr(0, colon), port,
                                                     ShapeSignal(o.shape), &pool, o.call_timeout));
    }
  }

  // cpp-httplib's client writes without MSG_NOSIGNAL: a server that closes a connection while a
  // request is still being sent (a 413, a refusal) would kill the process.
  signal(SIGPIPE, SIG_IGN);
  OtlpLoadResult result;
  result.request_bytes = static_cast<double>(pool[0].size());
  std::atomic<uint64_t> next{0}, ok{0}, retries{0}, errors{0};
  absl::Mutex mu;
  std::vector<double> latencies_ms;
  absl::Time last_reply = absl::InfinitePast();
  const double cpu0 = ProcessCpuSeconds();
  const absl::Time start = absl::Now();
  const absl::Time end =
      o.duration > absl::ZeroDuration() ? start + o.duration : absl::InfiniteFuture();
  const auto going = [&] { return errors.load() < o.max_errors && absl::Now() < end; };
  std::vector<std::thread> threads;
  for (int t = 0; t < o.inflight; ++t) {
    threads.emplace_back([&, t] {
      std::vector<double> mine;
      for (uint64_t n; going() && (n = next.fetch_add(1)) < exports;) {
        const absl::Time sent = absl::Now();
        while (going()) {
          std::string error;
          const Result r = senders[t]->Send(static_cast<int>(n % o.pool_requests), &error);
          if (r == Result::kOk) {
            mine.push_back(absl::ToDoubleMilliseconds(absl::Now() - sent));
            ok.fetch_add(1);
            break;
          }
          if (r == Result::kError) {
            absl::MutexLock lock(&mu);
            if (errors.fetch_add(1) == 0) result.first_error = error;
            break;
          }
          retries.fetch_add(1);
          absl::SleepFor(o.retry_after);
        }
      }
      absl::MutexLock lock(&mu);
      latencies_ms.insert(latencies_ms.end(), mine.begin(), mine.end());
      last_reply = std::max(last_reply, absl::Now());
    });
  }
  for (auto& thread : threads) thread.join();
  result.exports = ok.load();
  result.events = result.exports * o.batch;
  result.retries = retries.load();
  result.errors = errors.load();
  result.elapsed = last_reply - start;
  const double seconds = absl::ToDoubleSeconds(result.elapsed);
  result.events_per_sec = seconds > 0 ? result.events / seconds : 0;
  result.p50_ms = Percentile(&latencies_ms, 0.5);
  result.p99_ms = Percentile(&latencies_ms, 0.99);
  result.client_cpu_sec = ProcessCpuSeconds() - cpu0;
  return result;
}

std::string OtlpLoadResultJson(const OtlpLoadOptions& o, const OtlpLoadResult& r) {
  return absl::StrFormat(
      "{\"transport\": \"%s\", \"shape\": \"%s\", \"batch\": %d, \"inflight\": %d, "
      "\"events\": %d, \"seconds\": %.3f, \"events_per_sec\": %.0f, \"exports\": %d, "
      "\"retries\": %d, \"errors\": %d, \"first_error\": \"%s\", \"request_bytes\": %.0f, "
      "\"p50_ms\": %.2f, \"p99_ms\": %.2f, \"client_cpu_sec\": %.2f}",
      o.transport == OtlpTransport::kGrpc ? "grpc" : "http", OtlpShapeName(o.shape), o.batch,
      o.inflight, r.events, absl::ToDoubleSeconds(r.elapsed), r.events_per_sec, r.exports,
      r.retries, r.errors, JsonSafe(r.first_error.substr(0, 200)), r.request_bytes, r.p50_ms,
      r.p99_ms, r.client_cpu_sec);
}

}  // namespace shipper::load
