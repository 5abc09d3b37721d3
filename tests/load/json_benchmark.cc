// What the outputs' JSON encoding costs per event (shipper/event/event_json.h), per event shape,
// against its limit in the same run: a memcpy of the same documents.
//
//   ./dev bench json   (or: bazel run -c opt //tests/load:json_benchmark -- --reps=9)
//
// Each rep encodes a batch of 256 events the way the outputs do (one EventJsonWriter, one buffer
// reused from batch to batch), then copies the documents it wrote from one buffer to another;
// reps interleave the two so that load from other processes hurts both alike. Times are the
// thread's CPU time, best rep of --reps. One JSON line per shape.
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "proto/messages.pb.h"
#include "rapidjson/stringbuffer.h"
#include "shipper/event/event_json.h"
#include "tests/load/event_shapes.h"

ABSL_FLAG(int, reps, 9, "repetitions of each measurement; the best is reported");
ABSL_FLAG(int, batches, 2000, "batches of 256 events per repetition (large: a tenth)");

namespace shipper::load {
namespace {

namespace msg = ::elastic::agent::shipper::v1::messages;

constexpr int kBatch = 256;

int64_t ThreadCpuNanos() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

template <typename Work>
double NanosPerEvent(int batches, Work work) {
  const int64_t start = ThreadCpuNanos();
  for (int b = 0; b < batches; ++b) work(b);
  return static_cast<double>(ThreadCpuNanos() - start) / (static_cast<double>(batches) * kBatch);
}

void Run(EventShape shape) {
  std::vector<std::string> events(kBatch);  // wire bytes, as queued
  for (int i = 0; i < kBatch; ++i) {
    msg::Event event;
    MakeEvent(shape, i, &event);
    events[i] = event.SerializeAsString();
  }
  const int batches = absl::GetFlag(FLAGS_batches) / (shape == EventShape::kLarge ? 10 : 1);
  rapidjson::StringBuffer out;
  EventJsonWriter writer(&out);
  auto encode = [&](int b) {
    out.Clear();
    for (int i = 0; i < kBatch; ++i) writer.Append(events[i], uint64_t{1} + b * kBatch + i);
  };
  encode(0);
  const std::string documents(out.GetString(), out.GetSize());
  std::string copy(documents.size(), '\0');
  auto memcpy_documents = [&](int) {
    std::memcpy(&copy[0], documents.data(), documents.size());
    // The copy must be observed, or the compiler may drop it.
    asm volatile("" : : "r"(copy.data()) : "memory");
  };
  double best_encode = 1e300, best_memcpy = 1e300;
  for (int rep = 0; rep < absl::GetFlag(FLAGS_reps); ++rep) {
    best_encode = std::min(best_encode, NanosPerEvent(batches, encode));
    best_memcpy = std::min(best_memcpy, NanosPerEvent(batches, memcpy_documents));
  }
  const double bytes = static_cast<double>(documents.size()) / kBatch;
  std::printf(
      "{\"name\": \"json/%s\", \"ns_per_event\": %.1f, \"memcpy_ns_per_event\": %.1f, "
      "\"memcpy_ratio\": %.1f, \"document_bytes\": %.0f, \"encode_mb_per_sec\": %.0f}\n",
      std::string(EventShapeName(shape)).c_str(), best_encode, best_memcpy,
      best_encode / best_memcpy, bytes, bytes / best_encode * 1e3);
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
