#include "shipper/output/otlp/otlp_request.h"

#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "absl/strings/escaping.h"
#include "google/protobuf/util/json_util.h"
#include "proto/otlp/logs_service.pb.h"
#include "rapidjson/document.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"
#include "shipper/output/otlp/otlp_wire_writer.h"

namespace shipper {
namespace {

constexpr uint32_t kResourceLogs = 1;              // ExportLogsServiceRequest
constexpr uint32_t kResource = 1, kScopeLogs = 2;  // ResourceLogs
constexpr uint32_t kScope = 1, kLogRecords = 2;    // ScopeLogs
constexpr size_t kOverhead = WireWriter::kFieldOverhead;

using GroupKey = std::pair<absl::string_view, absl::string_view>;  // resource, scope

}  // namespace

RequestPlan PlanRequests(absl::Span<const OtlpLogRecord> records, size_t max_bytes) {
  RequestPlan plan;
  absl::flat_hash_set<GroupKey> groups;  // of the request being filled
  size_t bytes = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    const OtlpLogRecord& r = records[i];
    const size_t record = r.record.size() + kOverhead;
    // A new group costs its ResourceLogs and ScopeLogs, with their resource and scope.
    const size_t group = r.resource.size() + r.scope.size() + 4 * kOverhead;
    if (record + group > max_bytes) {
      plan.too_large.push_back(i);
      continue;
    }
    if (plan.requests.empty() ||
        bytes + record + (groups.contains(GroupKey(r.resource, r.scope)) ? 0 : group) > max_bytes) {
      plan.requests.emplace_back();
      groups.clear();
      bytes = 0;
    }
    if (groups.insert(GroupKey(r.resource, r.scope)).second) bytes += group;
    bytes += record;
    plan.requests.back().push_back(i);
  }
  return plan;
}

std::string EncodeRequest(absl::Span<const OtlpLogRecord> records, absl::Span<const size_t> which) {
  // Resources in order of first appearance, and within each its scopes, and within each its
  // records.
  struct Scope {
    absl::string_view scope;
    std::vector<size_t> records;
  };
  struct Resource {
    absl::string_view resource;
    std::vector<Scope> scopes;
  };
  std::vector<Resource> resources;
  absl::flat_hash_map<absl::string_view, size_t> resource_at;
  absl::flat_hash_map<GroupKey, size_t> scope_at;
  for (size_t i : which) {
    const OtlpLogRecord& r = records[i];
    auto [res, new_resource] = resource_at.emplace(r.resource, resources.size());
    if (new_resource) resources.push_back({r.resource, {}});
    std::vector<Scope>& scopes = resources[res->second].scopes;
    auto [sc, new_scope] = scope_at.emplace(GroupKey(r.resource, r.scope), scopes.size());
    if (new_scope) scopes.push_back({r.scope, {}});
    scopes[sc->second].records.push_back(i);
  }
  std::string out;
  WireWriter w(&out);
  for (const Resource& resource : resources) {
    w.Message(kResourceLogs, [&](WireWriter& rl) {
      if (!resource.resource.empty()) rl.Bytes(kResource, resource.resource);
      for (const Scope& scope : resource.scopes) {
        rl.Message(kScopeLogs, [&](WireWriter& sl) {
          if (!scope.scope.empty()) sl.Bytes(kScope, scope.scope);
          for (size_t i : scope.records) sl.Bytes(kLogRecords, records[i].record);
        });
      }
    });
  }
  return out;
}

namespace {

// The ids of every record, from the protobuf JSON mapping's base64 to hex.
void HexIds(rapidjson::Value& value, rapidjson::Document::AllocatorType& allocator) {
  const auto each = [](rapidjson::Value& v, const char* name, auto f) {
    if (!v.IsObject() || !v.HasMember(name) || !v[name].IsArray()) return;
    for (rapidjson::Value& item : v[name].GetArray()) f(item);
  };
  each(value, "resourceLogs", [&](rapidjson::Value& rl) {
    each(rl, "scopeLogs", [&](rapidjson::Value& sl) {
      each(sl, "logRecords", [&](rapidjson::Value& record) {
        for (const char* id : {"traceId", "spanId"}) {
          if (!record.HasMember(id) || !record[id].IsString()) continue;
          std::string raw;
          absl::Base64Unescape(
              absl::string_view(record[id].GetString(), record[id].GetStringLength()), &raw);
          const std::string hex = absl::BytesToHexString(raw);
          record[id].SetString(hex.data(), static_cast<rapidjson::SizeType>(hex.size()), allocator);
        }
      });
    });
  });
}

}  // namespace

absl::StatusOr<std::string> RequestJson(absl::string_view request) {
  opentelemetry::proto::collector::logs::v1::ExportLogsServiceRequest message;
  if (!message.ParseFromArray(request.data(), static_cast<int>(request.size()))) {
    return absl::InternalError("otlp: the request does not parse");
  }
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_enums_as_ints = true;
  std::string json;
  if (!google::protobuf::util::MessageToJsonString(message, &json, options).ok()) {
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
