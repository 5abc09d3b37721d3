#include "shipper/input/otlp/otlp_http_server.h"

#include <algorithm>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "proto/otlp/logs_service.pb.h"
#include "proto/rpc/status.pb.h"
#include "queue/memory_queue.h"
#include "queue/test_util.h"
#include "runtime/memory_budget.h"
#include "shipper/input/otlp/otlp_compress_testing.h"
#include "shipper/input/otlp/otlp_conversion.h"

namespace shipper {
namespace {

namespace collector = opentelemetry::proto::collector::logs::v1;
using ::testing::HasSubstr;

constexpr char kProtobuf[] = "application/x-protobuf";
constexpr char kJson[] = "application/json";

// `n` records with bodies of `body_bytes` bytes.
std::string Request(int n, size_t body_bytes = 10) {
  collector::ExportLogsServiceRequest request;
  auto* scope = request.add_resource_logs()->add_scope_logs();
  for (int i = 0; i < n; ++i) {
    scope->add_log_records()->mutable_body()->set_string_value(std::string(body_bytes, 'a' + i));
  }
  return request.SerializeAsString();
}

google::rpc::Status StatusOf(const httplib::Result& result) {
  google::rpc::Status status;
  EXPECT_TRUE(status.ParseFromString(result->body)) << result->body;
  return status;
}

class OtlpHttpServerTest : public ::testing::Test {
 protected:
  void Start(OtlpAck ack, size_t max_events = 100, size_t budget = 1 << 20,
             size_t queue_bytes = 0) {
    queue::MemoryOptions options;
    options.max_events = max_events;
    options.max_bytes = queue_bytes != 0 ? queue_bytes : budget;
    queue_ = std::move(*queue::MemoryQueue::Create(options));
    budget_ = std::make_unique<runtime::MemoryBudget>(budget);
    OtlpSettings settings;
    settings.ack = ack;
    settings.retry_delay = absl::Milliseconds(1500);
    settings.max_message_size = 64 << 10;
    settings.http_address = "127.0.0.1:0";
    exports_ = std::make_unique<OtlpExports>(queue_.get(), budget_.get(), settings);
    absl::StatusOr<std::unique_ptr<OtlpHttpServer>> server =
        OtlpHttpServer::Start(settings, exports_.get());
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client_->set_keep_alive(true);
  }

  void TearDown() override {
    if (exports_) exports_->Drained();
    client_.reset();  // its kept-alive connection would hold a server thread until it idles out
    server_.reset();
  }

  // Delivers whatever is queued, on another thread, and returns how many.
  size_t DeliverAll() { return queue::testing::DeliverAll(queue_.get()); }

  httplib::Result Post(const std::string& body, const char* type = kProtobuf,
                       const std::string& path = "/v1/logs") {
    return client_->Post(path.c_str(), body, type);
  }

  // Before the queue: records still queued when the queue goes give their bytes back to it.
  std::unique_ptr<runtime::MemoryBudget> budget_;
  std::unique_ptr<queue::Queue> queue_;
  std::unique_ptr<OtlpExports> exports_;
  std::unique_ptr<OtlpHttpServer> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(OtlpHttpServerTest, TakesProtobufAndJsonAndAnswersInTheirEncoding) {
  Start(OtlpAck::kQueued);
  httplib::Result protobuf = Post(Request(3));
  ASSERT_TRUE(protobuf);
  EXPECT_EQ(protobuf->status, 200);
  EXPECT_EQ(protobuf->get_header_value("Content-Type"), kProtobuf);
  EXPECT_EQ(protobuf->body, "") << "an empty ExportLogsServiceResponse";
  httplib::Result json =
      Post(R"({"resourceLogs":[{"scopeLogs":[{"logRecords":[{"body":{"stringValue":"j"}}]}]}]})",
           "application/json; charset=utf-8");
  ASSERT_TRUE(json);
  EXPECT_EQ(json->status, 200);
  EXPECT_EQ(json->get_header_value("Content-Type"), kJson);
  EXPECT_EQ(json->body, "{}");
  EXPECT_EQ(DeliverAll(), 4);
  EXPECT_EQ(budget_->in_use(), 0) << "every charge given back";
}

TEST_F(OtlpHttpServerTest, GzipBodiesAreInflatedAndABombStopsAtTheLimit) {
  Start(OtlpAck::kQueued);
  client_->set_compress(true);  // gzip request bodies
  httplib::Result small = Post(Request(2));
  ASSERT_TRUE(small);
  EXPECT_EQ(small->status, 200);
  // 1 MiB of a repeated byte inflates from about 1 KB: past the 64 KiB limit only once inflated.
  httplib::Result bomb = Post(Request(1, 1 << 20));
  ASSERT_TRUE(bomb);
  EXPECT_EQ(bomb->status, 413);
  EXPECT_THAT(StatusOf(bomb).message(), HasSubstr("shipper.otlp.max_message_size"));
  EXPECT_EQ(DeliverAll(), 2);
  EXPECT_EQ(budget_->in_use(), 0);
}

TEST_F(OtlpHttpServerTest, AckPersistedHoldsTheReplyUntilTheRecordsArePersisted) {
  Start(OtlpAck::kPersisted);
  std::future<httplib::Result> reply =
      std::async(std::launch::async, [this] { return Post(Request(3)); });
  while (queue_->stats().events < 3) absl::SleepFor(absl::Milliseconds(1));
  EXPECT_EQ(reply.wait_for(std::chrono::milliseconds(0)), std::future_status::timeout)
      << "answered before the records were persisted";
  EXPECT_EQ(DeliverAll(), 3);
  httplib::Result result = reply.get();
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 200);
}

TEST_F(OtlpHttpServerTest, AWaitingExportIsAnswered503WhenDrained) {
  Start(OtlpAck::kPersisted);
  std::future<httplib::Result> reply =
      std::async(std::launch::async, [this] { return Post(Request(1)); });
  while (queue_->stats().events < 1) absl::SleepFor(absl::Milliseconds(1));
  exports_->Drained();
  httplib::Result result = reply.get();
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 503);
  EXPECT_EQ(result->get_header_value("Retry-After"), "2");
}

TEST_F(OtlpHttpServerTest, AFullQueueIs503WithRetryAfterAndTakesNothing) {
  Start(OtlpAck::kQueued, /*max_events=*/4);
  httplib::Result first = Post(Request(3));
  ASSERT_TRUE(first);
  EXPECT_EQ(first->status, 200);
  httplib::Result second = Post(Request(3));
  ASSERT_TRUE(second);
  EXPECT_EQ(second->status, 503);
  EXPECT_EQ(second->get_header_value("Retry-After"), "2") << "1.5 s, rounded up";
  EXPECT_EQ(StatusOf(second).code(), 14);
  EXPECT_EQ(queue_->stats().events, 3) << "nothing of the refused export queued";
  EXPECT_EQ(DeliverAll(), 3);
  httplib::Result retried = Post(Request(3));
  ASSERT_TRUE(retried);
  EXPECT_EQ(retried->status, 200);
}

TEST_F(OtlpHttpServerTest, TheBodyIsChargedToTheBudgetBeforeItIsRead) {
  // 32 KiB of budget. While Export converts a request, its body and its converted records are
  // both charged: a body of 40 KiB can never fit (413); one of 14 KiB (28 KiB with its records)
  // does not fit beside 8 KiB of queued records (503), and does once they are delivered.
  Start(OtlpAck::kQueued, /*max_events=*/100, /*budget=*/32 << 10);
  httplib::Result too_large = Post(Request(1, 40 << 10));
  ASSERT_TRUE(too_large);
  EXPECT_EQ(too_large->status, 413);
  EXPECT_THAT(StatusOf(too_large).message(), HasSubstr("memory budget"));
  httplib::Result taken = Post(Request(2, 4 << 10));
  ASSERT_TRUE(taken);
  EXPECT_EQ(taken->status, 200);
  ASSERT_GT(budget_->in_use(), 8 << 10) << "the queued records' charge";
  httplib::Result no_room = Post(Request(1, 14 << 10));
  ASSERT_TRUE(no_room);
  EXPECT_EQ(no_room->status, 503);
  EXPECT_EQ(DeliverAll(), 2);
  httplib::Result room = Post(Request(1, 14 << 10));
  ASSERT_TRUE(room);
  EXPECT_EQ(room->status, 200);
  EXPECT_EQ(DeliverAll(), 1);
  EXPECT_EQ(budget_->in_use(), 0);
}

// How a request was sent changes nothing: with exactly the room its body and its records need
// while converted it is taken, with a byte less it is too large (413), whether its body came
// with a Content-Length, gzip-compressed, or chunked.
TEST_F(OtlpHttpServerTest, TheVerdictDoesNotDependOnHowTheBodyWasSent) {
  collector::ExportLogsServiceRequest records;
  auto* scope = records.add_resource_logs()->add_scope_logs();
  for (int i = 0; i < 1000; ++i) {
    auto* record = scope->add_log_records();
    record->mutable_body()->set_string_value("x");
    // A time of its own: the arrival time's nanoseconds would change the converted size.
    record->set_time_unix_nano(1700000000123456789);
  }
  const std::string request = records.SerializeAsString();
  LogsConversion conversion;
  ASSERT_TRUE(conversion.Scan(request, absl::Now(), 64 << 10, 1000).ok());
  const size_t needs = request.size() + conversion.bytes();
  for (size_t budget : {needs - 1, needs}) {
    SCOPED_TRACE(absl::StrCat("budget ", budget, ", the export needs ", needs));
    Start(OtlpAck::kQueued, /*max_events=*/2000, budget, /*queue_bytes=*/1 << 20);
    const int expected = budget < needs ? 413 : 200;
    httplib::Result identity = Post(request);
    ASSERT_TRUE(identity);
    EXPECT_EQ(identity->status, expected) << "identity";
    DeliverAll();
    client_->set_compress(true);
    httplib::Result gzip = Post(request);
    ASSERT_TRUE(gzip);
    EXPECT_EQ(gzip->status, expected) << "gzip";
    DeliverAll();
    client_->set_compress(false);
    httplib::Result chunked = client_->Post(
        "/v1/logs",
        [&](size_t offset, httplib::DataSink& sink) {
          // In pieces of 1000 bytes, as a streaming sender writes them.
          const size_t n = std::min<size_t>(1000, request.size() - offset);
          sink.write(request.data() + offset, n);
          if (offset + n == request.size()) sink.done();
          return true;
        },
        kProtobuf);
    ASSERT_TRUE(chunked);
    EXPECT_EQ(chunked->status, expected) << "chunked";
    DeliverAll();
    EXPECT_EQ(budget_->in_use(), 0);
    TearDown();
    exports_.reset();
    queue_.reset();
  }
}

// 60 KB of `{}` records is within max_message_size and is several MB once decoded: counted
// before it is built, it is too large for a 1 MiB budget, and nothing of it stays charged.
TEST_F(OtlpHttpServerTest, AJsonBodyIsChargedForWhatDecodingItBuilds) {
  Start(OtlpAck::kQueued, /*max_events=*/30000, /*budget=*/1 << 20);
  std::string records;
  for (int i = 0; i < 20000; ++i) absl::StrAppend(&records, i > 0 ? "," : "", "{}");
  const std::string flood =
      absl::StrCat(R"({"resourceLogs":[{"scopeLogs":[{"logRecords":[)", records, "]}]}]}");
  ASSERT_LT(flood.size(), 64 << 10);
  httplib::Result result = Post(flood, kJson);
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 413);
  EXPECT_THAT(result->body, HasSubstr("memory budget"));
  EXPECT_EQ(budget_->in_use(), 0);
  EXPECT_EQ(DeliverAll(), 0);
}

using testing::Compress;

TEST_F(OtlpHttpServerTest, ContentEncodingsAreOursToDecodeAndOthersAre415) {
  Start(OtlpAck::kQueued);
  const auto post = [&](const std::string& body, const std::string& encoding) {
    return client_->Post("/v1/logs", {{"Content-Encoding", encoding}}, body, kProtobuf);
  };
  for (int bits : {16 + 15, 15, -15}) {
    httplib::Result result = post(Compress(Request(2), bits), bits > 16 ? "gzip" : "deflate");
    ASSERT_TRUE(result);
    EXPECT_EQ(result->status, 200) << bits;
  }
  EXPECT_EQ(DeliverAll(), 6);
  for (const char* encoding : {"zstd", "br", "snappy", "gzip, br"}) {
    httplib::Result result = post(Request(1), encoding);
    ASSERT_TRUE(result);
    EXPECT_EQ(result->status, 415) << encoding;
    EXPECT_THAT(StatusOf(result).message(), HasSubstr("Content-Encoding")) << encoding;
  }
  // A compressed body over the limit as sent is too large (413), not undecodable (400).
  std::string noise(80 << 10, '\0');
  uint32_t x = 1;
  for (char& c : noise) c = static_cast<char>((x = x * 1103515245 + 12345) >> 24);
  httplib::Result large = post(Compress(noise, 16 + 15), "gzip");
  ASSERT_TRUE(large);
  EXPECT_EQ(large->status, 413);
  EXPECT_THAT(StatusOf(large).message(), HasSubstr("shipper.otlp.max_message_size"));
  httplib::Result damaged = post(Compress(Request(2), 16 + 15).substr(0, 20), "gzip");
  ASSERT_TRUE(damaged);
  EXPECT_EQ(damaged->status, 400);
  EXPECT_EQ(DeliverAll(), 0);
  EXPECT_EQ(budget_->in_use(), 0);
}

TEST_F(OtlpHttpServerTest, UndecodableBodiesAre400WithTheErrorInTheirEncoding) {
  Start(OtlpAck::kQueued);
  httplib::Result protobuf = Post("\x0a\xff\xff\xff");
  ASSERT_TRUE(protobuf);
  EXPECT_EQ(protobuf->status, 400);
  EXPECT_EQ(StatusOf(protobuf).code(), 3);
  httplib::Result json =
      Post(R"({"resourceLogs":[{"scopeLogs":[{"logRecords":[{"spanId":1}]}]}]})", kJson);
  ASSERT_TRUE(json);
  EXPECT_EQ(json->status, 400);
  EXPECT_EQ(json->get_header_value("Content-Type"), kJson);
  EXPECT_THAT(json->body, HasSubstr("logRecords[0].spanId"));
  EXPECT_EQ(queue_->stats().events, 0);
}

TEST_F(OtlpHttpServerTest, OtherPathsMethodsAndTypesAreRefusedAndTheServerCarriesOn) {
  Start(OtlpAck::kQueued);
  httplib::Result traces = Post(Request(1), kProtobuf, "/v1/traces");
  ASSERT_TRUE(traces);
  EXPECT_EQ(traces->status, 404);
  // Every error body is a google.rpc.Status, in the request's encoding (protobuf by default).
  EXPECT_EQ(traces->get_header_value("Content-Type"), kProtobuf);
  EXPECT_THAT(StatusOf(traces).message(), HasSubstr("Shipper takes logs only"));
  httplib::Result json_traces = Post("{}", kJson, "/v1/traces");
  ASSERT_TRUE(json_traces);
  EXPECT_EQ(json_traces->status, 404);
  EXPECT_EQ(json_traces->get_header_value("Content-Type"), kJson);
  EXPECT_THAT(json_traces->body, HasSubstr(R"("message":"/v1/traces: Shipper takes logs only)"));
  httplib::Result get = client_->Get("/v1/logs");
  ASSERT_TRUE(get);
  EXPECT_EQ(get->status, 405);
  EXPECT_EQ(get->get_header_value("Allow"), "POST");
  EXPECT_THAT(StatusOf(get).message(), HasSubstr("only POST"));
  httplib::Result text = Post(std::string(100000, 'x'), "text/plain");
  ASSERT_TRUE(text);
  EXPECT_EQ(text->status, 415);
  EXPECT_EQ(text->get_header_value("Connection"), "close");
  EXPECT_EQ(StatusOf(text).code(), static_cast<int>(absl::StatusCode::kInvalidArgument));
  // The refusals left their bodies unread and closed their connections; the next one works.
  httplib::Result after = Post(Request(1));
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 200);
  EXPECT_EQ(DeliverAll(), 1);
}

}  // namespace
}  // namespace shipper
