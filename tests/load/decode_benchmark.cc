// What decoding a PublishRequest costs, per event, by how much of it a server decodes:
//
//   BM_ParseHeap      full protobuf parse, heap allocated (a default gRPC service)
//   BM_ParseArena     full protobuf parse into an arena (null_server)
//   BM_Envelope       uuid + events counted, event bytes skipped (null_server --decode=envelope)
//   BM_Scan           Shipper's ScanPublishRequest (shipper/input/producer/request_validation.h):
//   every event
//                     checked against the schema, UTF-8 and nesting without building messages
//
//   bazel run -c opt //tests/load:decode_benchmark -- --benchmark_counters_tabular=true
#include <string>

#include "benchmark/benchmark.h"
#include "google/protobuf/arena.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/stubs/common.h"
#include "google/protobuf/wire_format_lite.h"
#include "proto/messages.pb.h"
#include "shipper/input/producer/request_validation.h"
#include "tests/load/event_shapes.h"

namespace shipper::load {
namespace {

namespace msg = ::elastic::agent::shipper::v1::messages;
using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedInputStream;

std::string Request(EventShape shape, int events) {
  std::string out;
  for (int i = 0; i < events; ++i) out += MakeSerializedEventEntry(shape, i);
  return out;
}

EventShape ShapeOf(const benchmark::State& state) {
  return static_cast<EventShape>(state.range(0));
}
constexpr int kBatch = 500;

void Finish(benchmark::State& state, const std::string& wire) {
  state.SetItemsProcessed(state.iterations() * kBatch);
  state.SetBytesProcessed(state.iterations() * wire.size());
  state.SetLabel(std::string(EventShapeName(ShapeOf(state))));
}

void BM_ParseHeap(benchmark::State& state) {
  const std::string wire = Request(ShapeOf(state), kBatch);
  for (auto _ : state) {
    msg::PublishRequest request;
    benchmark::DoNotOptimize(request.ParseFromString(wire));
  }
  Finish(state, wire);
}

void BM_ParseArena(benchmark::State& state) {
  const std::string wire = Request(ShapeOf(state), kBatch);
  // Shipper's arena growth (shipper/input/producer/producer_service.cc).
  google::protobuf::ArenaOptions options;
  options.start_block_size = 4096;
  options.max_block_size = 256 << 10;
  size_t used = 0;
  for (auto _ : state) {
    google::protobuf::Arena arena(options);
    auto* request = google::protobuf::Arena::CreateMessage<msg::PublishRequest>(&arena);
    benchmark::DoNotOptimize(request->ParseFromString(wire));
    used = arena.SpaceUsed();
  }
  // What the queue's byte limit counts per event (arena.SpaceUsed() / events).
  state.counters["arena_bytes_per_event"] = static_cast<double>(used) / kBatch;
  Finish(state, wire);
}

bool ScanEnvelope(const std::string& wire, int* events) {
  CodedInputStream in(reinterpret_cast<const uint8_t*>(wire.data()), static_cast<int>(wire.size()));
  while (uint32_t tag = in.ReadTag()) {
    if (tag == (2 << 3 | 2)) {
      uint32_t length;
      if (!in.ReadVarint32(&length) || !in.Skip(static_cast<int>(length))) return false;
      ++*events;
    } else if (!WireFormatLite::SkipField(&in, tag)) {
      return false;
    }
  }
  return in.ConsumedEntireMessage();
}

void BM_Envelope(benchmark::State& state) {
  const std::string wire = Request(ShapeOf(state), kBatch);
  for (auto _ : state) {
    int events = 0;
    benchmark::DoNotOptimize(ScanEnvelope(wire, &events));
  }
  Finish(state, wire);
}

// The scan as Shipper runs it; with shipper.strict_mode when `strict`.
void Scan(benchmark::State& state, bool strict) {
  const std::string wire = Request(ShapeOf(state), kBatch);
  RequestLimits limits;
  limits.strict_mode = strict;
  for (auto _ : state) {
    ScannedRequest scanned;
    if (absl::Status status = ScanPublishRequest(wire, limits, &scanned); !status.ok()) {
      state.SkipWithError(std::string(status.message()).c_str());
      return;
    }
    benchmark::DoNotOptimize(scanned.events.data());
  }
  Finish(state, wire);
}

void BM_Scan(benchmark::State& state) { Scan(state, false); }
void BM_ScanStrict(benchmark::State& state) { Scan(state, true); }

#define SHAPES ->Arg(0)->Arg(1)->Arg(2)
BENCHMARK(BM_ParseHeap) SHAPES;
BENCHMARK(BM_ParseArena) SHAPES;
BENCHMARK(BM_Envelope) SHAPES;
BENCHMARK(BM_Scan) SHAPES;
BENCHMARK(BM_ScanStrict) SHAPES;

}  // namespace
}  // namespace shipper::load

BENCHMARK_MAIN();
