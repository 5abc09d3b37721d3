// otlp_load: exports OTLP logs, spans or data points to an OTLP server (Shipper's OTLP input,
// otlp_null_server) as a Collector's exporter does (otlp_load_generator.h), and reports what it
// sustains.
//
//   otlp_load --target=127.0.0.1:PORT --transport=grpc|http --shape=filebeat --events=600000
//
// Prints one JSON line (OtlpLoadResultJson): records answered OK per second from the first
// export to the last reply, the reply latency, the retries and this process's CPU. Exit status 1
// when an export failed other than with UNAVAILABLE, 2 on bad flags.
#include <cstdio>
#include <iostream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/time/time.h"
#include "tests/load/otlp_load_generator.h"

ABSL_FLAG(std::string, target, "", "HOST:PORT of the OTLP server");
ABSL_FLAG(std::string, transport, "grpc",
          "grpc (the shape's signal's Export) or http (POST /v1/logs, /v1/traces, /v1/metrics)");
ABSL_FLAG(std::string, shape, "filebeat",
          "record shape: filebeat, tiny or large (log records), span, gauge or histogram");
ABSL_FLAG(int, batch, 500, "records per export");
ABSL_FLAG(int, inflight, 10, "exports in flight");
ABSL_FLAG(uint64_t, events, 600000,
          "records (log records, spans or data points) to export (rounded up to whole exports)");
ABSL_FLAG(int, pool_requests, 16, "distinct requests, serialized once and sent round-robin");
ABSL_FLAG(absl::Duration, retry_after, absl::Milliseconds(1),
          "wait before sending an export answered UNAVAILABLE again");
ABSL_FLAG(absl::Duration, call_timeout, absl::Seconds(30), "deadline of each export");
ABSL_FLAG(uint64_t, max_errors, 10, "give up after this many failed exports");

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("Exports OTLP records with N exports in flight; prints JSON.");
  absl::ParseCommandLine(argc, argv);
  shipper::load::OtlpLoadOptions o;
  o.target = absl::GetFlag(FLAGS_target);
  const std::string transport = absl::GetFlag(FLAGS_transport);
  auto shape = shipper::load::ParseOtlpShape(absl::GetFlag(FLAGS_shape));
  if (transport != "grpc" && transport != "http") {
    std::cerr << "otlp_load: --transport must be grpc or http\n";
    return 2;
  }
  if (!shape.ok()) {
    std::cerr << "otlp_load: --shape: " << shape.status().message() << "\n";
    return 2;
  }
  o.transport = transport == "grpc" ? shipper::load::OtlpTransport::kGrpc
                                    : shipper::load::OtlpTransport::kHttp;
  o.shape = *shape;
  o.batch = absl::GetFlag(FLAGS_batch);
  o.inflight = absl::GetFlag(FLAGS_inflight);
  o.events = absl::GetFlag(FLAGS_events);
  o.pool_requests = absl::GetFlag(FLAGS_pool_requests);
  o.retry_after = absl::GetFlag(FLAGS_retry_after);
  o.call_timeout = absl::GetFlag(FLAGS_call_timeout);
  o.max_errors = absl::GetFlag(FLAGS_max_errors);
  auto result = shipper::load::RunOtlpLoad(o);
  if (!result.ok()) {
    std::cerr << "otlp_load: " << result.status().message() << "\n";
    return 2;
  }
  std::printf("%s\n", shipper::load::OtlpLoadResultJson(o, *result).c_str());
  std::fflush(stdout);
  return result->errors == 0 ? 0 : 1;
}
