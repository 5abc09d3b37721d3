#include "shipper/output/elasticsearch/elasticsearch_bulk.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "rapidjson/document.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"
#include "shipper/codec/compression.h"

namespace shipper {

BulkActions::BulkActions(FieldFormat index, std::optional<FieldFormat> pipeline)
    : index_(std::move(index)),
      pipeline_(std::move(pipeline)),
      metadata_id_(*FieldFormat::Parse("%{[@metadata._id]:}", "_id")),
      metadata_op_type_(*FieldFormat::Parse("%{[@metadata.op_type]:}", "op_type")),
      metadata_pipeline_(*FieldFormat::Parse("%{[@metadata.pipeline]:}", "pipeline")) {}

absl::StatusOr<BulkItem> BulkActions::Item(absl::string_view event, size_t i) const {
  absl::StatusOr<std::string> index = index_.Format(event);
  if (!index.ok()) return index.status();
  const std::string id = *metadata_id_.Format(event);
  std::string pipeline = *metadata_pipeline_.Format(event);
  if (pipeline.empty() && pipeline_) {
    absl::StatusOr<std::string> formatted = pipeline_->Format(event);
    if (!formatted.ok()) return formatted.status();
    pipeline = *std::move(formatted);
  }
  const bool create = *metadata_op_type_.Format(event) != "index";
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key(create ? "create" : "index");
  w.StartObject();
  w.Key("_index");
  // Elasticsearch refuses index names with capitals; Beats lowercases them too.
  const std::string lower = absl::AsciiStrToLower(*index);
  w.String(lower.data(), static_cast<rapidjson::SizeType>(lower.size()));
  if (!id.empty()) {
    w.Key("_id");
    w.String(id.data(), static_cast<rapidjson::SizeType>(id.size()));
  }
  if (!pipeline.empty()) {
    w.Key("pipeline");
    w.String(pipeline.data(), static_cast<rapidjson::SizeType>(pipeline.size()));
  }
  w.EndObject();
  w.EndObject();
  return BulkItem{i, create,
                  absl::StrCat(absl::string_view(buffer.GetString(), buffer.GetSize()), "\n")};
}

absl::StatusOr<std::string> BulkBody(const BatchJson& json, absl::Span<const BulkItem> items,
                                     int gzip_level) {
  if (gzip_level > 0) {
    Encoder body(ContentCoding::kGzip, gzip_level);
    for (const BulkItem& item : items) {
      body.Add(item.action);
      body.Add(json.line(item.event));
    }
    return body.Finish();
  }
  size_t size = 0;
  for (const BulkItem& item : items) size += item.action.size() + json.line(item.event).size();
  std::string body;
  body.reserve(size);  // no copies as it grows: a body is megabytes
  for (const BulkItem& item : items) {
    const absl::string_view line = json.line(item.event);
    body.append(item.action).append(line.data(), line.size());
  }
  return body;
}

absl::Status ReadItems(absl::string_view host, absl::string_view body,
                       absl::Span<const BulkItem> items, Outcome* outcome, BulkCounts* counts) {
  rapidjson::Document doc;
  doc.Parse(body.data(), body.size());
  const auto unreadable = [&](absl::string_view why) {
    return absl::UnavailableError(
        absl::StrCat("elasticsearch ", host, ": _bulk answer ", why, ": ", body.substr(0, 200)));
  };
  if (doc.HasParseError() || !doc.IsObject()) return unreadable("is not JSON");
  const auto answered = doc.FindMember("items");
  if (answered == doc.MemberEnd() || !answered->value.IsArray() ||
      answered->value.Size() != items.size()) {
    return unreadable(absl::StrCat("does not hold one item for each of ", items.size()));
  }
  const auto errors = doc.FindMember("errors");
  if (errors != doc.MemberEnd() && errors->value.IsFalse()) {
    counts->created += items.size();
    return absl::OkStatus();
  }
  // Every item is checked before any is applied: an unreadable answer fails them all.
  for (const rapidjson::Value& item : answered->value.GetArray()) {
    if (!item.IsObject() || item.MemberCount() != 1 || !item.MemberBegin()->value.IsObject() ||
        !item.MemberBegin()->value.HasMember("status") ||
        !item.MemberBegin()->value["status"].IsInt()) {
      return unreadable("has an item that is not {action: {status: ...}}");
    }
  }
  for (size_t k = 0; k < items.size(); ++k) {
    const rapidjson::Value& result = answered->value[k].MemberBegin()->value;
    const int code = result["status"].GetInt();
    if (code >= 200 && code < 300) {
      ++counts->created;
      continue;
    }
    if (code == 409 && items[k].create) {
      ++counts->duplicate;
      continue;
    }
    std::string reason = absl::StrCat("elasticsearch ", host, ": ", code);
    const auto error = result.FindMember("error");
    if (error != result.MemberEnd() && error->value.IsObject()) {
      for (const char* part : {"type", "reason"}) {
        const auto member = error->value.FindMember(part);
        if (member != error->value.MemberEnd() && member->value.IsString()) {
          absl::StrAppend(&reason, " ", member->value.GetString());
        }
      }
    }
    if (code == 429 || code >= 500) {
      outcome->Fail(items[k].event, reason);
      ++counts->retried;
    } else {
      outcome->rejected.push_back({items[k].event, std::move(reason)});
      ++counts->dead_lettered;
    }
  }
  return absl::OkStatus();
}

}  // namespace shipper
