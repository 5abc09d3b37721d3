// ReadItems() over `_bulk` answers shaped as Elasticsearch's Bulk API reference shows them
// (docs-bulk: "Example response", "Bulk API response with errors"; the error types and reasons
// as a cluster words them), in full and as filter_path=errors,items.*.status,items.*.error trims
// them, against the per-item rules elasticsearch_bulk.h states.
#include "shipper/output/elasticsearch/elasticsearch_bulk.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace shipper {
namespace {

constexpr char kHost[] = "http://es:9200";

// The items of a request: event i of the Write() for each, `create` unless `index` is listed.
std::vector<BulkItem> Items(std::vector<size_t> events, std::vector<size_t> index = {}) {
  std::vector<BulkItem> items;
  for (size_t event : events) {
    bool create = true;
    for (size_t i : index) create = create && i != event;
    items.push_back({event, create, ""});
  }
  return items;
}

struct Read {
  absl::Status status;
  Outcome outcome;
  BulkCounts counts;
};

Read ReadAnswer(const std::string& body, const std::vector<BulkItem>& items) {
  Read read;
  read.status = ReadItems(kHost, body, items, &read.outcome, &read.counts);
  return read;
}

// Nothing of a request whose answer cannot be read counts as written, nor as anything else.
void ExpectUnreadable(const Read& read) {
  EXPECT_EQ(read.status.code(), absl::StatusCode::kUnavailable) << read.status;
  EXPECT_TRUE(absl::StrContains(read.status.message(), kHost)) << read.status;
  EXPECT_TRUE(read.outcome.rejected.empty());
  EXPECT_TRUE(read.outcome.failed.empty());
  EXPECT_EQ(read.counts.created, 0u);
  EXPECT_EQ(read.counts.duplicate, 0u);
  EXPECT_EQ(read.counts.retried, 0u);
  EXPECT_EQ(read.counts.dead_lettered, 0u);
}

// Every action created or updated its document.
constexpr char kAllCreated[] = R"json({
  "took": 30,
  "errors": false,
  "items": [
    {"create": {"_index": ".ds-logs-generic-default-2024.05.01-000001", "_id": "kx3zPI8B",
                "_version": 1, "result": "created",
                "_shards": {"total": 2, "successful": 1, "failed": 0},
                "_seq_no": 0, "_primary_term": 1, "status": 201}},
    {"create": {"_index": ".ds-logs-generic-default-2024.05.01-000001", "_id": "lB3zPI8B",
                "_version": 1, "result": "created",
                "_shards": {"total": 2, "successful": 1, "failed": 0},
                "_seq_no": 1, "_primary_term": 1, "status": 201}},
    {"index": {"_index": "test", "_id": "1", "_version": 2, "result": "updated",
               "_shards": {"total": 2, "successful": 1, "failed": 0},
               "_seq_no": 2, "_primary_term": 1, "status": 200}}
  ]
})json";

TEST(ReadItemsTest, ErrorsFalseWithAnItemPerEventWritesEveryEvent) {
  const Read read = ReadAnswer(kAllCreated, Items({0, 1, 2}, {2}));
  ASSERT_TRUE(read.status.ok()) << read.status;
  EXPECT_TRUE(read.outcome.rejected.empty());
  EXPECT_TRUE(read.outcome.failed.empty());
  EXPECT_EQ(read.counts.created, 3u);
}

// One of each per-item rule, in one answer; events 1 and 5 of the Write() are not in the
// request (rejected before it), so each item's event is its own, not its position.
constexpr char kMixed[] = R"json({
  "took": 486,
  "errors": true,
  "items": [
    {"create": {"_index": "logs-app-default", "_id": "a1", "_version": 1, "result": "created",
                "_shards": {"total": 2, "successful": 1, "failed": 0},
                "_seq_no": 5, "_primary_term": 1, "status": 201}},
    {"create": {"_index": "logs-app-default", "_id": "a2", "status": 409,
                "error": {"type": "version_conflict_engine_exception",
                          "reason": "[a2]: version conflict, document already exists (current version [1])",
               "index_uuid" : "aAsFqTI0Tc2W0LCWgPNrOA",
               "shard" : "0",
               "index" : ".ds-logs-app-default-2024.05.01-000001"
}
}
},
    {"create": {"_index": "logs-app-default", "_id": "a3", "status": 429,
                "error": {"type": "es_rejected_execution_exception",
                          "reason": "rejected execution of coordinating operation [coordinating_and_primary_bytes=0, replica_bytes=0, all_bytes=0, coordinating_operation_bytes=1048576, max_coordinating_and_primary_bytes=1048576]"}}},
    {"create": {"_index": "logs-app-default", "_id": "a4", "status": 400,
                "error": {"type": "mapper_parsing_exception",
                          "reason": "failed to parse field [count] of type [long] in document with id 'a4'. Preview of field's value: 'many'",
                          "caused_by": {"type": "illegal_argument_exception",
                                        "reason": "For input string: \"many\""}}}},
    {"create": {"_index": "logs-app-default", "_id": "a5", "status": 503,
                "error": {"type": "unavailable_shards_exception",
                          "reason": "[.ds-logs-app-default-2024.05.01-000001][0] primary shard is not active Timeout: [1m], request: [BulkShardRequest [[.ds-logs-app-default-2024.05.01-000001][0]] containing [1] requests]",
                          "index_uuid": "aAsFqTI0Tc2W0LCWgPNrOA", "shard": "0",
                          "index": ".ds-logs-app-default-2024.05.01-000001"}}},
    {"create": {"_index": "missing", "_id": "a6", "status": 404,
                "error": {"type": "index_not_found_exception", "reason": "no such index [missing]",
                          "resource.type": "index_or_alias", "resource.id": "missing",
                          "index_uuid": "_na_", "index": "missing"}}},
    {"create": {"_index": "logs-app-default", "_id": "a7", "status": 500,
                "error": {"type": "illegal_state_exception",
                          "reason": "pipeline with id [app] could not be loaded"}}}
  ]
})json";

TEST(ReadItemsTest, EachItemByItsStatus) {
  const Read read = ReadAnswer(kMixed, Items({0, 2, 3, 4, 6, 7, 8}));
  ASSERT_TRUE(read.status.ok()) << read.status;
  // 201: written. 409 on create: a retry's duplicate, written. 429, 503, 500: failed for now.
  EXPECT_EQ(read.outcome.failed, (std::vector<size_t>{3, 6, 8}));
  EXPECT_EQ(read.outcome.failure,
            "elasticsearch http://es:9200: 429 es_rejected_execution_exception rejected execution "
            "of coordinating operation [coordinating_and_primary_bytes=0, replica_bytes=0, "
            "all_bytes=0, coordinating_operation_bytes=1048576, "
            "max_coordinating_and_primary_bytes=1048576]");
  // 400, 404: rejected for good, with the error's type and reason for the dead-letter file.
  ASSERT_EQ(read.outcome.rejected.size(), 2u);
  EXPECT_EQ(read.outcome.rejected[0].event, 4u);
  EXPECT_EQ(read.outcome.rejected[0].reason,
            "elasticsearch http://es:9200: 400 mapper_parsing_exception failed to parse field "
            "[count] of type [long] in document with id 'a4'. Preview of field's value: 'many'");
  EXPECT_EQ(read.outcome.rejected[1].event, 7u);
  EXPECT_EQ(read.outcome.rejected[1].reason,
            "elasticsearch http://es:9200: 404 index_not_found_exception no such index [missing]");
  EXPECT_EQ(read.counts.created, 1u);
  EXPECT_EQ(read.counts.duplicate, 1u);
  EXPECT_EQ(read.counts.retried, 3u);
  EXPECT_EQ(read.counts.dead_lettered, 2u);
}

// The same answer as the output asks for it: filter_path keeps each item's status and error.
TEST(ReadItemsTest, FilteredAnswerReadsTheSame) {
  const Read read = ReadAnswer(R"json({"errors": true, "items": [
      {"create": {"status": 201}},
      {"create": {"status": 409, "error": {"type": "version_conflict_engine_exception",
                                           "reason": "[x]: version conflict"}}},
      {"create": {"status": 429, "error": {"type": "es_rejected_execution_exception",
                                           "reason": "rejected execution"}}},
      {"create": {"status": 400, "error": {"type": "mapper_parsing_exception",
                                           "reason": "failed to parse"}}},
      {"create": {"status": 502}}]})json",
                               Items({0, 1, 2, 3, 4}));
  ASSERT_TRUE(read.status.ok()) << read.status;
  EXPECT_EQ(read.outcome.failed, (std::vector<size_t>{2, 4}));
  ASSERT_EQ(read.outcome.rejected.size(), 1u);
  EXPECT_EQ(read.outcome.rejected[0].event, 3u);
  EXPECT_EQ(read.outcome.rejected[0].reason,
            "elasticsearch http://es:9200: 400 mapper_parsing_exception failed to parse");
  EXPECT_EQ(read.counts.created, 1u);
  EXPECT_EQ(read.counts.duplicate, 1u);
}

// An `index` action overwrites: a 409 there is a real conflict (Beats would count it as a
// duplicate), so the event is a dead letter.
TEST(ReadItemsTest, ConflictOnIndexIsRejected) {
  const Read read = ReadAnswer(R"json({"errors": true, "items": [
      {"index": {"status": 409, "error": {"type": "version_conflict_engine_exception",
                                          "reason": "[1]: version conflict, required seqNo [3], primary term [1]. current document has seqNo [4] and primary term [1]"}}}]})json",
                               Items({0}, {0}));
  ASSERT_TRUE(read.status.ok()) << read.status;
  ASSERT_EQ(read.outcome.rejected.size(), 1u);
  EXPECT_TRUE(
      absl::StrContains(read.outcome.rejected[0].reason, "409 version_conflict_engine_exception"))
      << read.outcome.rejected[0].reason;
  EXPECT_EQ(read.counts.duplicate, 0u);
  EXPECT_EQ(read.counts.dead_lettered, 1u);
}

// An error without type or reason still names the status.
TEST(ReadItemsTest, RejectionWithoutErrorDetailNamesTheStatus) {
  const Read read =
      ReadAnswer(R"json({"errors": true, "items": [{"create": {"status": 403}}]})json", Items({0}));
  ASSERT_TRUE(read.status.ok()) << read.status;
  ASSERT_EQ(read.outcome.rejected.size(), 1u);
  EXPECT_EQ(read.outcome.rejected[0].reason, "elasticsearch http://es:9200: 403");
}

TEST(ReadItemsTest, ItemWithoutStatusFailsTheRequest) {
  ExpectUnreadable(ReadAnswer(R"json({"errors": true, "items": [
      {"create": {"status": 201}},
      {"create": {"error": {"type": "mapper_parsing_exception", "reason": "failed to parse"}}}]})json",
                              Items({0, 1})));
}

TEST(ReadItemsTest, ItemOfAnotherShapeFailsTheRequest) {
  ExpectUnreadable(ReadAnswer(R"json({"errors": true, "items": [
      {"create": {"status": 201}}, {"create": {"status": "201"}}]})json",
                              Items({0, 1})));
  ExpectUnreadable(ReadAnswer(R"json({"errors": true, "items": [
      {"create": {"status": 201}}, {"create": {"status": 201}, "index": {"status": 201}}]})json",
                              Items({0, 1})));
}

TEST(ReadItemsTest, NotJsonFailsTheRequest) {
  ExpectUnreadable(ReadAnswer("<html>502 Bad Gateway</html>", Items({0, 1})));
  ExpectUnreadable(ReadAnswer(R"json([{"create": {"status": 201}}])json", Items({0})));
}

// Items are matched to events by position: with some missing, none can be trusted, and the
// missing ones were never confirmed.
TEST(ReadItemsTest, FewerItemsThanTheRequestWritesNothing) {
  ExpectUnreadable(ReadAnswer(R"json({"errors": true, "items": [
      {"create": {"status": 201}}, {"create": {"status": 429}}]})json",
                              Items({0, 1, 2})));
  ExpectUnreadable(ReadAnswer(R"json({"errors": false, "items": [
      {"create": {"status": 201}}, {"create": {"status": 201}}]})json",
                              Items({0, 1, 2})));
  ExpectUnreadable(ReadAnswer(R"json({"errors": false})json", Items({0, 1, 2})));
}

TEST(ReadItemsTest, MoreItemsThanTheRequestWritesNothing) {
  ExpectUnreadable(ReadAnswer(R"json({"errors": true, "items": [
      {"create": {"status": 201}}, {"create": {"status": 429}}, {"create": {"status": 201}}]})json",
                              Items({0, 1})));
  ExpectUnreadable(ReadAnswer(R"json({"errors": false, "items": [
      {"create": {"status": 201}}, {"create": {"status": 201}}, {"create": {"status": 201}}]})json",
                              Items({0, 1})));
}

}  // namespace
}  // namespace shipper
