// What the file output's JSON encoding costs per event (shipper/event_json.h), and how much of it
// is the RFC 3339 timestamp: snprintf + absl civil time (as event_json.cc does it) against a
// hand-rolled formatter (a prototype, here only to size the gain).
//
//   bazel run -c opt //tests/load:json_benchmark
#include <cstdio>
#include <string>
#include <vector>

#include "absl/time/civil_time.h"
#include "absl/time/time.h"
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

// As event_json.cc formats timestamps today.
int TimestampSnprintf(int64_t seconds, int32_t nanos, char* buf) {
  absl::CivilSecond c = absl::ToCivilSecond(absl::FromUnixSeconds(seconds), absl::UTCTimeZone());
  return std::snprintf(buf, 64, "%04lld-%02d-%02dT%02d:%02d:%02d.%09dZ",
                       static_cast<long long>(c.year()), c.month(), c.day(), c.hour(), c.minute(),
                       c.second(), static_cast<int>(nanos));
}

// Civil-from-days (Howard Hinnant's algorithm) and fixed-width digits: no locale, no parsing.
void Digits(uint32_t v, int width, char* p) {
  for (int i = width - 1; i >= 0; --i) {
    p[i] = static_cast<char>('0' + v % 10);
    v /= 10;
  }
}
int TimestampFast(int64_t seconds, int32_t nanos, char* buf) {
  int64_t days = seconds >= 0 ? seconds / 86400 : (seconds - 86399) / 86400;
  int64_t sod = seconds - days * 86400;
  days += 719468;
  const int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  const uint32_t doe = static_cast<uint32_t>(days - era * 146097);
  const uint32_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const uint32_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const uint32_t mp = (5 * doy + 2) / 153;
  const uint32_t d = doy - (153 * mp + 2) / 5 + 1;
  const uint32_t m = mp < 10 ? mp + 3 : mp - 9;
  const int64_t y = static_cast<int64_t>(yoe) + era * 400 + (m <= 2);
  Digits(static_cast<uint32_t>(y), 4, buf);
  buf[4] = '-';
  Digits(m, 2, buf + 5);
  buf[7] = '-';
  Digits(d, 2, buf + 8);
  buf[10] = 'T';
  Digits(static_cast<uint32_t>(sod / 3600), 2, buf + 11);
  buf[13] = ':';
  Digits(static_cast<uint32_t>(sod / 60 % 60), 2, buf + 14);
  buf[16] = ':';
  Digits(static_cast<uint32_t>(sod % 60), 2, buf + 17);
  buf[19] = '.';
  Digits(static_cast<uint32_t>(nanos), 9, buf + 20);
  buf[29] = 'Z';
  return 30;
}

void BM_TimestampSnprintf(benchmark::State& state) {
  char buf[64];
  int64_t s = 1796032800;
  for (auto _ : state) benchmark::DoNotOptimize(TimestampSnprintf(s++, 123456789, buf));
}
BENCHMARK(BM_TimestampSnprintf);

void BM_TimestampFast(benchmark::State& state) {
  char a[64], b[64];
  for (int64_t s : {0LL, 951782400LL, 1796032800LL, 4102444799LL}) {  // sanity: same text
    if (TimestampFast(s, 5, a) != TimestampSnprintf(s, 5, b) || std::string(a, 30) != b) {
      state.SkipWithError("the fast formatter disagrees with snprintf");
      return;
    }
  }
  int64_t s = 1796032800;
  for (auto _ : state) benchmark::DoNotOptimize(TimestampFast(s++, 123456789, a));
}
BENCHMARK(BM_TimestampFast);

}  // namespace
}  // namespace shipper::load

BENCHMARK_MAIN();
