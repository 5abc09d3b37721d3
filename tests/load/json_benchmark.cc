// What the outputs' JSON encoding costs per event (shipper/event_json.h), per event shape.
//
//   bazel run -c opt //tests/load:json_benchmark
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "proto/messages.pb.h"
#include "rapidjson/stringbuffer.h"
#include "shipper/event_json.h"
#include "tests/load/event_shapes.h"

namespace shipper::load {
namespace {

namespace msg = ::elastic::agent::shipper::v1::messages;

void BM_AppendEventJson(benchmark::State& state) {
  const EventShape shape = static_cast<EventShape>(state.range(0));
  std::vector<msg::Event> events(256);
  for (size_t i = 0; i < events.size(); ++i) MakeEvent(shape, i, &events[i]);
  rapidjson::StringBuffer out;
  size_t i = 0;
  for (auto _ : state) {
    out.Clear();
    AppendEventJson(events[i++ % events.size()], i, &out);
    benchmark::DoNotOptimize(out.GetString());
  }
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(std::string(EventShapeName(shape)) + ", " + std::to_string(out.GetSize()) +
                 " bytes");
}
BENCHMARK(BM_AppendEventJson)->Arg(0)->Arg(1)->Arg(2);

}  // namespace
}  // namespace shipper::load

BENCHMARK_MAIN();
