// otlp_load: exports OTLP logs to an OTLP server (Shipper's OTLP input, otlp_null_server) as a
// Collector's otlp/otlphttp exporter does, and reports what it sustains.
//
//   otlp_load --target=127.0.0.1:PORT --transport=grpc|http --shape=filebeat --events=600000
//
// --inflight exports are in flight at once (the Collector's sending_queue.num_consumers, 10 by
// default): over gRPC on one channel, as the Collector multiplexes them on one connection; over
// HTTP (protobuf, POST /v1/logs) on one kept-alive connection each. Requests are serialized once,
// up front (a pool of --pool_requests distinct ones, tests/load/otlp_shapes.h), so that the
// client spends its CPU on the transport alone. An export answered UNAVAILABLE (HTTP 503) is sent
// again after --retry_after, as a sender honouring Retry-After would, sooner.
//
// Prints one JSON line: events answered OK per second from the first export to the last reply,
// the reply latency of the exports answered OK, the retries and this process's CPU. Exit status 1
// when an export failed otherwise (after --max_errors of them, at once).
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "httplib.h"
#include "tests/load/event_shapes.h"
#include "tests/load/otlp_shapes.h"

ABSL_FLAG(std::string, target, "", "HOST:PORT of the OTLP server");
ABSL_FLAG(std::string, transport, "grpc", "grpc (LogsService/Export) or http (POST /v1/logs)");
ABSL_FLAG(std::string, shape, "filebeat", "record shape: filebeat, tiny or large");
ABSL_FLAG(int, batch, 500, "records per export");
ABSL_FLAG(int, inflight, 10, "exports in flight");
ABSL_FLAG(uint64_t, events, 600000, "records to export (rounded up to whole exports)");
ABSL_FLAG(int, pool_requests, 16, "distinct requests, serialized once and sent round-robin");
ABSL_FLAG(absl::Duration, retry_after, absl::Milliseconds(1),
          "wait before sending an export answered UNAVAILABLE again");
ABSL_FLAG(absl::Duration, call_timeout, absl::Seconds(30), "deadline of each export");
ABSL_FLAG(uint64_t, max_errors, 10, "give up after this many failed exports");

namespace {

constexpr char kExportMethod[] = "/opentelemetry.proto.collector.logs.v1.LogsService/Export";

enum class Result { kOk, kRetry, kError };

// Sends one pre-serialized export and waits for its reply. One per in-flight slot.
class Sender {
 public:
  virtual ~Sender() = default;
  virtual Result Send(int request, std::string* error) = 0;
};

class GrpcSender final : public Sender {
 public:
  GrpcSender(std::shared_ptr<grpc::Channel> channel, const std::vector<grpc::ByteBuffer>* pool,
             absl::Duration timeout)
      : stub_(std::move(channel)), pool_(pool), timeout_(timeout) {}

  Result Send(int request, std::string* error) override {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + timeout_));
    grpc::ByteBuffer reply;
    grpc::Status status;
    absl::Notification done;
    stub_.UnaryCall(&context, kExportMethod, grpc::StubOptions(), &(*pool_)[request], &reply,
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
  const std::vector<grpc::ByteBuffer>* const pool_;
  const absl::Duration timeout_;
};

class HttpSender final : public Sender {
 public:
  HttpSender(const std::string& host, int port, const std::vector<std::string>* pool,
             absl::Duration timeout)
      : client_(host, port), pool_(pool) {
    client_.set_keep_alive(true);
    client_.set_tcp_nodelay(true);
    client_.set_read_timeout(absl::ToInt64Seconds(timeout));
    client_.set_write_timeout(absl::ToInt64Seconds(timeout));
  }

  Result Send(int request, std::string* error) override {
    auto response = client_.Post("/v1/logs", (*pool_)[request], "application/x-protobuf");
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
  const std::vector<std::string>* const pool_;
};

// `s` with what a JSON string cannot hold as it is (quotes, backslashes, control bytes) as '?'.
std::string JsonSafe(std::string s) {
  for (char& c : s) {
    if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20) c = '?';
  }
  return s;
}

double CpuSeconds() {
  rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
         (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

double Percentile(std::vector<double>* values, double p) {
  if (values->empty()) return 0;
  const size_t i = std::min(values->size() - 1, static_cast<size_t>(p * values->size()));
  std::nth_element(values->begin(), values->begin() + i, values->end());
  return (*values)[i];
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("Exports OTLP logs with N exports in flight; prints JSON.");
  absl::ParseCommandLine(argc, argv);
  const std::string target = absl::GetFlag(FLAGS_target);
  const std::string transport = absl::GetFlag(FLAGS_transport);
  const int batch = absl::GetFlag(FLAGS_batch);
  const int inflight = absl::GetFlag(FLAGS_inflight);
  const int pool_size = absl::GetFlag(FLAGS_pool_requests);
  auto shape = shipper::load::ParseEventShape(absl::GetFlag(FLAGS_shape));
  const size_t colon = target.rfind(':');
  int port = 0;
  if (!shape.ok() || colon == std::string::npos ||
      !absl::SimpleAtoi(absl::string_view(target).substr(colon + 1), &port) ||
      (transport != "grpc" && transport != "http") || batch <= 0 || inflight <= 0 ||
      pool_size <= 0) {
    std::cerr << "otlp_load: needs --target=HOST:PORT, --transport=grpc|http, a valid --shape "
                 "and positive --batch, --inflight, --pool_requests\n";
    return 2;
  }
  const uint64_t exports = (absl::GetFlag(FLAGS_events) + batch - 1) / batch;

  std::vector<std::string> pool;
  std::vector<grpc::ByteBuffer> buffers;
  for (int i = 0; i < pool_size; ++i) {
    pool.push_back(shipper::load::MakeOtlpRequest(*shape, static_cast<uint64_t>(i) * batch, batch));
    grpc::Slice slice(pool.back());
    buffers.emplace_back(&slice, 1);
  }
  const double request_bytes = static_cast<double>(pool[0].size());

  std::vector<std::unique_ptr<Sender>> senders;
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  auto channel = grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
  for (int i = 0; i < inflight; ++i) {
    if (transport == "grpc") {
      senders.push_back(std::make_unique<GrpcSender>(channel, &buffers,
                                                     absl::GetFlag(FLAGS_call_timeout)));
    } else {
      senders.push_back(std::make_unique<HttpSender>(target.substr(0, colon), port, &pool,
                                                     absl::GetFlag(FLAGS_call_timeout)));
    }
  }

  std::atomic<uint64_t> next{0}, ok{0}, retries{0}, errors{0};
  absl::Mutex mu;
  std::string first_error;
  std::vector<double> latencies_ms;
  absl::Time last_reply;
  const uint64_t max_errors = absl::GetFlag(FLAGS_max_errors);
  const absl::Duration retry_after = absl::GetFlag(FLAGS_retry_after);
  const double cpu0 = CpuSeconds();
  const absl::Time start = absl::Now();
  std::vector<std::thread> threads;
  for (int t = 0; t < inflight; ++t) {
    threads.emplace_back([&, t] {
      std::vector<double> mine;
      for (uint64_t n; (n = next.fetch_add(1)) < exports && errors.load() < max_errors;) {
        const absl::Time sent = absl::Now();
        for (;;) {
          std::string error;
          const Result result = senders[t]->Send(static_cast<int>(n % pool_size), &error);
          if (result == Result::kOk) {
            mine.push_back(absl::ToDoubleMilliseconds(absl::Now() - sent));
            ok.fetch_add(1);
            break;
          }
          if (result == Result::kError) {
            absl::MutexLock lock(&mu);
            if (errors.fetch_add(1) == 0) first_error = error;
            break;
          }
          retries.fetch_add(1);
          absl::SleepFor(retry_after);
        }
      }
      absl::MutexLock lock(&mu);
      latencies_ms.insert(latencies_ms.end(), mine.begin(), mine.end());
      last_reply = std::max(last_reply, absl::Now());
    });
  }
  for (auto& thread : threads) thread.join();
  const double seconds = absl::ToDoubleSeconds(last_reply - start);
  const uint64_t events = ok.load() * batch;
  absl::PrintF(
      "{\"transport\": \"%s\", \"shape\": \"%s\", \"batch\": %d, \"inflight\": %d, "
      "\"events\": %d, \"seconds\": %.3f, \"events_per_sec\": %.0f, \"exports\": %d, "
      "\"retries\": %d, \"errors\": %d, \"first_error\": \"%s\", \"request_bytes\": %.0f, "
      "\"p50_ms\": %.2f, \"p99_ms\": %.2f, \"client_cpu_sec\": %.2f}\n",
      transport, absl::GetFlag(FLAGS_shape), batch, inflight,
      events, seconds, seconds > 0 ? events / seconds : 0.0, ok.load(), retries.load(),
      errors.load(),
      JsonSafe(first_error.substr(0, 200)), request_bytes,
      Percentile(&latencies_ms, 0.5), Percentile(&latencies_ms, 0.99), CpuSeconds() - cpu0);
  std::fflush(stdout);
  return errors.load() == 0 ? 0 : 1;
}
