// What the OTLP output's encoding costs per event (shipper/output/otlp/otlp_record.h and
// otlp_request.h), per Producer API event shape: each event mapped into its record the way
// OtlpOutput::Write() does (one run of parts, records reused from batch to batch), then the
// batch's requests planned and written.
//
//   bazel run -c opt //tests/load:otlp_record_benchmark -- --reps=9
//
// Times are the thread's CPU time, best rep of --reps. One JSON line per shape. Under callgrind
// (--reps=1 --batches=20) the instruction count says the same without the machine's noise.
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "proto/messages.pb.h"
#include "shipper/event/wire_event.h"
#include "shipper/output/otlp/otlp_record.h"
#include "shipper/output/otlp/otlp_request.h"
#include "tests/load/event_shapes.h"

ABSL_FLAG(int, reps, 9, "repetitions of each measurement; the best is reported");
ABSL_FLAG(int, batches, 400, "batches of 256 events per repetition (large: a tenth)");

namespace shipper::load {
namespace {

namespace msg = ::elastic::agent::shipper::v1::messages;

constexpr int kBatch = 256;

int64_t ThreadCpuNanos() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

void Run(EventShape shape) {
  std::vector<std::string> events(kBatch);  // wire bytes, as queued
  for (int i = 0; i < kBatch; ++i) {
    msg::Event event;
    MakeEvent(shape, i, &event);
    events[i] = event.SerializeAsString();
  }
  const int batches =
      std::max(1, absl::GetFlag(FLAGS_batches) / (shape == EventShape::kLarge ? 10 : 1));
  std::vector<OtlpRecord> records(kBatch);
  size_t request_bytes = 0;
  auto encode = [&] {
    std::optional<wire::EventParts> before;
    for (int i = 0; i < kBatch; ++i) {
      const wire::EventParts parts(events[i]);
      MapEvent(parts, &records[i], before ? &*before : nullptr, i == 0 ? nullptr : &records[i - 1]);
      before = parts;
    }
    const RequestPlan plan = PlanRequests(records, size_t{4} << 20, size_t{1} << 20);
    request_bytes = 0;
    for (const std::vector<size_t>& which : plan.requests) {
      request_bytes += EncodeRequest(records, which).size();
    }
  };
  double best = 1e300;
  for (int rep = 0; rep < absl::GetFlag(FLAGS_reps); ++rep) {
    const int64_t start = ThreadCpuNanos();
    for (int b = 0; b < batches; ++b) encode();
    best = std::min(best, static_cast<double>(ThreadCpuNanos() - start) / (batches * kBatch));
  }
  std::printf(
      "{\"name\": \"otlp_record/%s\", \"ns_per_event\": %.1f, \"request_bytes_per_event\": %.0f}\n",
      std::string(EventShapeName(shape)).c_str(), best,
      static_cast<double>(request_bytes) / kBatch);
  std::fflush(stdout);
}

}  // namespace
}  // namespace shipper::load

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  using shipper::load::EventShape;
  for (EventShape shape : {EventShape::kFilebeat, EventShape::kTiny, EventShape::kLarge}) {
    shipper::load::Run(shape);
  }
}
