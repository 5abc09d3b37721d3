#include "tests/kafka/delivery_checks.h"

#include <cstdlib>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "httplib.h"

namespace shipper::testing {

std::vector<std::string> KafkaShipperArgs(const std::string& bootstraps, const std::string& topic) {
  return {"-E", "shipper.output.kafka.enabled=true",
          "-E", absl::StrCat("shipper.output.kafka.hosts=", bootstraps),
          "-E", absl::StrCat("shipper.output.kafka.topic=", topic),
          "-E", "shipper.output.kafka.timeout=5s",
          "-E", "shipper.output.backoff.init=50ms",
          "-E", "shipper.output.backoff.max=500ms",
          "-E", "shipper.queue.mem.events=16384"};
}

std::string TempDir(absl::string_view name) {
  std::string dir = absl::StrCat(getenv("TEST_TMPDIR"), "/", name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// How many copies of each test_seq the messages hold; -1 counts what is not a test event.
std::map<int64_t, int> Copies(const std::vector<KafkaMessage>& messages) {
  std::map<int64_t, int> copies;
  for (const KafkaMessage& m : messages) ++copies[TestSeq(m.value)];
  return copies;
}

// Fails for every seq in [0, events) without a copy; returns the duplicates.
int CheckNothingLost(const std::map<int64_t, int>& copies, uint64_t events) {
  int duplicates = 0;
  for (uint64_t seq = 0; seq < events; ++seq) {
    auto it = copies.find(static_cast<int64_t>(seq));
    EXPECT_TRUE(it != copies.end()) << "event " << seq << " lost";
    if (it != copies.end()) duplicates += it->second - 1;
  }
  return duplicates;
}

// The shipper's /metrics page; empty when it does not answer.
std::string MetricsPage(const ShipperProcess& shipper) {
  const std::string& address = shipper.metrics_address();
  httplib::Client http(address.substr(0, address.rfind(':')),
                       std::stoi(address.substr(address.rfind(':') + 1)));
  httplib::Result page = http.Get("/metrics");
  return page ? page->body : "";
}

// The samples of `metric` on a /metrics page, by their labels.
std::map<std::string, double> Samples(const std::string& page, absl::string_view metric) {
  std::map<std::string, double> samples;
  for (absl::string_view line : absl::StrSplit(page, '\n')) {
    if (!absl::StartsWith(line, metric)) continue;
    const size_t space = line.rfind(' ');
    const absl::string_view labels = line.substr(metric.size(), space - metric.size());
    if (!labels.empty() && labels[0] != '{') continue;  // another metric, named longer
    samples[std::string(labels)] = std::stod(std::string(line.substr(space + 1)));
  }
  return samples;
}

}  // namespace shipper::testing
