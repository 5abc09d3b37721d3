// Measures AppendEventJson on realistic events: CPU ns per event (the thread's CPU time, so a
// busy machine slows the figure less than wall time would).
#include <time.h>

#include <cstdio>
#include <string>
#include <vector>

#include "shipper/event_json.h"
#include "tests/load/event_shapes.h"

double CpuNanos() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char** argv) {
  namespace pb = elastic::agent::shipper::v1::messages;
  for (auto shape : {shipper::load::EventShape::kFilebeat, shipper::load::EventShape::kTiny,
                     shipper::load::EventShape::kLarge}) {
    if (argc > 1 && shipper::load::EventShapeName(shape) != argv[1]) continue;  // one shape
    std::vector<pb::Event> events(1000);
    for (size_t i = 0; i < events.size(); ++i) shipper::load::MakeEvent(shape, i, &events[i]);
    rapidjson::StringBuffer buffer;
    const int rounds = shape == shipper::load::EventShape::kLarge ? 20 : 200;
    const double start = CpuNanos();
    size_t bytes = 0;
    for (int r = 0; r < rounds; ++r) {
      buffer.Clear();
      for (size_t i = 0; i < events.size(); ++i) shipper::AppendEventJson(events[i], i, &buffer);
      bytes += buffer.GetSize();
    }
    const double ns = (CpuNanos() - start) / (rounds * events.size());
    std::printf("{\"name\": \"encode/%s\", \"cpu_ns_per_event\": %.0f, \"bytes_per_event\": %zu}\n",
                std::string(shipper::load::EventShapeName(shape)).c_str(), ns,
                bytes / (rounds * events.size()));
  }
}
