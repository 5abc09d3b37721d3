#include "shipper/output/kafka/kafka_statistics.h"

#include "absl/status/status.h"
#include "rapidjson/document.h"

namespace shipper {
namespace {

uint64_t Uint(const rapidjson::Value& object, const char* name) {
  auto it = object.FindMember(name);
  return it != object.MemberEnd() && it->value.IsUint64() ? it->value.GetUint64() : 0;
}

std::string String(const rapidjson::Value& object, const char* name) {
  auto it = object.FindMember(name);
  return it != object.MemberEnd() && it->value.IsString() ? it->value.GetString() : "";
}

}  // namespace

absl::StatusOr<KafkaStatistics> ParseKafkaStatistics(absl::string_view json) {
  rapidjson::Document doc;
  doc.Parse(json.data(), json.size());
  if (doc.HasParseError() || !doc.IsObject()) {
    return absl::InvalidArgumentError("librdkafka statistics: not a JSON object");
  }
  KafkaStatistics stats;
  stats.tx_bytes = Uint(doc, "tx_bytes");
  stats.txmsg_bytes = Uint(doc, "txmsg_bytes");
  auto brokers = doc.FindMember("brokers");
  if (brokers == doc.MemberEnd() || !brokers->value.IsObject()) return stats;
  for (const auto& [name, broker] : brokers->value.GetObject()) {
    if (!broker.IsObject()) continue;
    const std::string source = String(broker, "source");
    if (source == "internal" || source == "logical") continue;
    KafkaStatistics::Broker& b = stats.brokers.emplace_back();
    b.name = name.GetString();
    b.state = String(broker, "state");
    auto rtt = broker.FindMember("rtt");
    if (rtt != broker.MemberEnd() && rtt->value.IsObject() && Uint(rtt->value, "cnt") > 0) {
      b.rtt = absl::Microseconds(Uint(rtt->value, "avg"));
    }
  }
  return stats;
}

}  // namespace shipper
