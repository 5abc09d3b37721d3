// What the outputs' JSON encoding costs per event (shipper/event_json.h), per event shape.
//
//   bazel run -c opt //tests/load:json_benchmark
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "proto/messages.pb.h"
#include "rapidjson/stringbuffer.h"
#include "shipper/event/event_json.h"
#include "tests/load/event_shapes.h"

namespace shipper::load {
namespace {

namespace msg = ::elastic::agent::shipper::v1::messages;

// one_writer:1 encodes as the outputs do a batch (shipper/output/batch_json.h), one
// EventJsonWriter for all events; one_writer:0 calls AppendEventJson for each.
void BM_AppendEventJson(benchmark::State& state) {
  const EventShape shape = static_cast<EventShape>(state.range(0));
  const bool one_writer = state.range(1) != 0;
  std::vector<std::string> events(256);  // wire bytes, as queued
  for (size_t i = 0; i < events.size(); ++i) {
    msg::Event event;
    MakeEvent(shape, i, &event);
    events[i] = event.SerializeAsString();
  }
  rapidjson::StringBuffer out;
  EventJsonWriter writer(&out);
  size_t i = 0;
  for (auto _ : state) {
    out.Clear();
    const std::string& event = events[++i % events.size()];
    if (one_writer) {
      writer.Append(event, i);
    } else {
      AppendEventJson(event, i, &out);
    }
    benchmark::DoNotOptimize(out.GetString());
  }
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(std::string(EventShapeName(shape)) + ", " + std::to_string(out.GetSize()) +
                 " bytes");
}
BENCHMARK(BM_AppendEventJson)->ArgsProduct({{0, 1, 2}, {0, 1}})->ArgNames({"shape", "one_writer"});

}  // namespace
}  // namespace shipper::load

BENCHMARK_MAIN();
