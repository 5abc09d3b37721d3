#include "shipper/output/otlp/otlp_request.h"

#include <algorithm>
#include <memory>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "absl/strings/escaping.h"
#include "google/protobuf/util/json_util.h"
#include "proto/otlp/logs_service.pb.h"
#include "proto/otlp/metrics_service.pb.h"
#include "proto/otlp/trace_service.pb.h"
#include "rapidjson/document.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"
#include "shipper/input/otlp/otlp_fields.h"
#include "shipper/output/otlp/otlp_wire_writer.h"

namespace shipper {
namespace {

constexpr size_t kOverhead = WireWriter::kFieldOverhead;

// What makes one Resource* message: its resource and schema_url.
using ResourceKey = std::pair<absl::string_view, absl::string_view>;
ResourceKey ResourceOf(const OtlpRecord& r) { return {r.resource, r.resource_schema_url}; }
// What makes one Scope* message: its Resource*'s, and its scope and schema_url.
using ScopeKey =
    std::tuple<absl::string_view, absl::string_view, absl::string_view, absl::string_view>;
ScopeKey ScopeOf(const OtlpRecord& r) {
  return {r.resource, r.resource_schema_url, r.scope, r.scope_schema_url};
}
// What makes one Metric (the only group of its scope for logs and spans): its Scope*'s, and the
// Metric's fields.
using GroupKey = std::tuple<ScopeKey, absl::string_view, absl::string_view, uint32_t>;
GroupKey GroupOf(const OtlpRecord& r) {
  return {ScopeOf(r), r.metric, r.metric_data, r.metric_type};
}

}  // namespace

RequestPlan PlanRequests(absl::Span<const OtlpRecord> records, size_t max_bytes,
                         size_t fill_bytes) {
  fill_bytes = std::min(fill_bytes, max_bytes);
  RequestPlan plan;
  // One signal after the other: a request holds one signal's records.
  for (const OtlpSignal signal : {OtlpSignal::kLogs, OtlpSignal::kTraces, OtlpSignal::kMetrics}) {
    absl::flat_hash_set<GroupKey> groups;  // of the request being filled
    size_t bytes = 0;
    bool open = false;  // whether plan.requests.back() is this signal's, being filled
    const OtlpRecord* last = nullptr;  // the request's last record
    for (size_t i = 0; i < records.size(); ++i) {
      const OtlpRecord& r = records[i];
      if (r.signal != signal) continue;
      const size_t record = r.record.size() + kOverhead;
      // A new group costs its Resource*, Scope* and (points) Metric and its data, with their
      // resource, scope and metric.
      const size_t group = r.resource.size() + r.resource_schema_url.size() + r.scope.size() +
                           r.scope_schema_url.size() + r.metric.size() + r.metric_data.size() +
                           8 * kOverhead;
      if (record + group > max_bytes) {
        plan.too_large.push_back(i);
        continue;
      }
      // Records of one export follow each other in one group: no lookup for those.
      bool known = open && ((last != nullptr && GroupOf(*last) == GroupOf(r)) ||
                            groups.contains(GroupOf(r)));
      if (!open || bytes + record + (known ? 0 : group) > fill_bytes) {
        plan.requests.emplace_back();
        groups.clear();
        bytes = 0;
        open = true;
        known = false;
      }
      if (!known) {
        groups.insert(GroupOf(r));
        bytes += group;
      }
      bytes += record;
      plan.requests.back().push_back(i);
      last = &r;
    }
  }
  std::sort(plan.too_large.begin(), plan.too_large.end());
  return plan;
}

std::string EncodeRequest(absl::Span<const OtlpRecord> records, absl::Span<const size_t> which) {
  // Resources in order of first appearance, and within each its scopes, within each its groups
  // (one per Metric; one for logs and spans), within each its records.
  struct Group {
    const OtlpRecord* first;  // says what the group's Metric is
    std::vector<size_t> records;
  };
  struct Scope {
    absl::string_view scope, schema_url;
    std::vector<Group> groups;
    size_t size = 0;  // of its ScopeLogs/Spans/Metrics message's contents
  };
  struct Resource {
    absl::string_view resource, schema_url;
    std::vector<Scope> scopes;
    size_t size = 0;  // of its ResourceLogs/Spans/Metrics message's contents
  };
  std::vector<Resource> resources;
  absl::flat_hash_map<ResourceKey, size_t> resource_at;
  absl::flat_hash_map<ScopeKey, size_t> scope_at;
  absl::flat_hash_map<GroupKey, size_t> group_at;
  const OtlpRecord* last = nullptr;
  std::vector<size_t>* last_group = nullptr;  // last's group's records
  for (size_t i : which) {
    const OtlpRecord& r = records[i];
    // Records of one export follow each other in one group: no lookup for those.
    if (last != nullptr && GroupOf(*last) == GroupOf(r)) {
      last_group->push_back(i);
      continue;
    }
    auto [res, new_resource] = resource_at.emplace(ResourceOf(r), resources.size());
    if (new_resource) resources.push_back({r.resource, r.resource_schema_url, {}});
    std::vector<Scope>& scopes = resources[res->second].scopes;
    auto [sc, new_scope] = scope_at.emplace(ScopeOf(r), scopes.size());
    if (new_scope) scopes.push_back({r.scope, r.scope_schema_url, {}});
    std::vector<Group>& groups = scopes[sc->second].groups;
    auto [g, new_group] = group_at.emplace(GroupOf(r), groups.size());
    if (new_group) groups.push_back({&r, {}});
    groups[g->second].records.push_back(i);
    last = &r;
    last_group = &groups[g->second].records;
  }
  // The sizes of the Resource* and Scope* messages first, so that the request is written once,
  // into a buffer of its size, without moving what is in them to put their lengths in front.
  const auto field = [](uint32_t number, size_t size) {
    return WireWriter::FieldSize(number, size);
  };
  const auto optional = [&](uint32_t number, absl::string_view bytes) {
    return bytes.empty() ? 0 : field(number, bytes.size());
  };
  size_t total = 0;
  for (Resource& resource : resources) {
    resource.size = optional(otlp::kResource, resource.resource) +
                    optional(otlp::kSchemaUrl, resource.schema_url);
    for (Scope& scope : resource.scopes) {
      scope.size =
          optional(otlp::kScope, scope.scope) + optional(otlp::kSchemaUrl, scope.schema_url);
      for (const Group& group : scope.groups) {
        const OtlpRecord& first = *group.first;
        const bool metric = first.signal == OtlpSignal::kMetrics;
        size_t items = metric ? first.metric_data.size() : 0;
        for (size_t i : group.records) {
          items += field(metric ? uint32_t{otlp::metric::kDataPoints} : uint32_t{otlp::kItems},
                         records[i].record.size());
        }
        scope.size +=
            metric ? field(otlp::kItems, first.metric.size() + field(first.metric_type, items))
                   : items;
      }
      resource.size += field(otlp::kScopeItems, scope.size);
    }
    total += field(otlp::kResourceItems, resource.size);
  }
  std::string out;
  out.reserve(total);
  WireWriter w(&out);
  for (const Resource& resource : resources) {
    w.Header(otlp::kResourceItems, resource.size);
    if (!resource.resource.empty()) w.Bytes(otlp::kResource, resource.resource);
    for (const Scope& scope : resource.scopes) {
      w.Header(otlp::kScopeItems, scope.size);
      if (!scope.scope.empty()) w.Bytes(otlp::kScope, scope.scope);
      for (const Group& group : scope.groups) {
        const OtlpRecord& first = *group.first;
        if (first.signal != OtlpSignal::kMetrics) {
          for (size_t i : group.records) w.Bytes(otlp::kItems, records[i].record);
          continue;
        }
        w.Message(otlp::kItems, [&](WireWriter& metric) {
          metric.Raw(first.metric);
          metric.Message(first.metric_type, [&](WireWriter& data) {
            for (size_t i : group.records) data.Bytes(otlp::metric::kDataPoints, records[i].record);
            data.Raw(first.metric_data);
          });
        });
      }
      if (!scope.schema_url.empty()) w.Bytes(otlp::kSchemaUrl, scope.schema_url);
    }
    if (!resource.schema_url.empty()) w.Bytes(otlp::kSchemaUrl, resource.schema_url);
  }
  return out;
}

namespace {

// Every id (traceId, spanId, parentSpanId of records, spans, links and exemplars), from the
// protobuf JSON mapping's base64 to hex. Attributes cannot collide: their names are under "key".
void HexIds(rapidjson::Value& value, rapidjson::Document::AllocatorType& allocator) {
  if (value.IsArray()) {
    for (rapidjson::Value& item : value.GetArray()) HexIds(item, allocator);
    return;
  }
  if (!value.IsObject()) return;
  for (auto& member : value.GetObject()) {
    const absl::string_view name(member.name.GetString(), member.name.GetStringLength());
    rapidjson::Value& v = member.value;
    if ((name == "traceId" || name == "spanId" || name == "parentSpanId") && v.IsString()) {
      std::string raw;
      absl::Base64Unescape(absl::string_view(v.GetString(), v.GetStringLength()), &raw);
      const std::string hex = absl::BytesToHexString(raw);
      v.SetString(hex.data(), static_cast<rapidjson::SizeType>(hex.size()), allocator);
    } else {
      HexIds(v, allocator);
    }
  }
}

// The ExportXServiceRequest of `signal` that `request` is; null when it is not one.
std::unique_ptr<google::protobuf::Message> ParseRequest(OtlpSignal signal,
                                                        absl::string_view request) {
  std::unique_ptr<google::protobuf::Message> message;
  switch (signal) {
    case OtlpSignal::kLogs:
      message =
          std::make_unique<opentelemetry::proto::collector::logs::v1::ExportLogsServiceRequest>();
      break;
    case OtlpSignal::kTraces:
      message =
          std::make_unique<opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest>();
      break;
    case OtlpSignal::kMetrics:
      message = std::make_unique<
          opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest>();
      break;
  }
  if (!message->ParseFromArray(request.data(), static_cast<int>(request.size()))) return nullptr;
  return message;
}

}  // namespace

absl::StatusOr<std::string> RequestJson(OtlpSignal signal, absl::string_view request) {
  const std::unique_ptr<google::protobuf::Message> message = ParseRequest(signal, request);
  if (message == nullptr) return absl::InternalError("otlp: the request does not parse");
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_enums_as_ints = true;
  std::string json;
  if (!google::protobuf::util::MessageToJsonString(*message, &json, options).ok()) {
    return absl::InternalError("otlp: the request has no JSON form");
  }
  rapidjson::Document doc;
  doc.Parse(json.data(), json.size());
  if (doc.HasParseError()) return absl::InternalError("otlp: protobuf's JSON does not parse");
  HexIds(doc, doc.GetAllocator());
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  doc.Accept(writer);
  return std::string(buffer.GetString(), buffer.GetSize());
}

}  // namespace shipper
