#include "shipper/input/otlp/otlp_http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "proto/otlp/logs_service.pb.h"
#include "proto/otlp/trace_service.pb.h"
#include "proto/rpc/status.pb.h"
#include "queue/memory_queue.h"
#include "queue/queue.h"
#include "queue/test_util.h"
#include "runtime/memory_budget.h"
#include "shipper/codec/compression.h"
#include "shipper/input/otlp/otlp_conversion.h"
#include "shipper/metrics/shipper_metrics.h"

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

// The process's count of OTLP/HTTP logs `name` (shipper_input_requests_total,
// shipper_input_records_total) with `label` (code="...", outcome="..."); 0 when none yet.
double Count(absl::string_view name, absl::string_view label) {
  const std::string labels = absl::StrCat(R"({input="otlp_http",)", label, R"(,signal="logs"})");
  for (const metrics::MetricFamily& family : metrics::Collect(metrics::Sources{})) {
    if (family.name != name) continue;
    for (const metrics::MetricFamily::Sample& sample : family.samples) {
      if (sample.labels == labels) return sample.value;
    }
  }
  return 0;
}

// A TCP connection to 127.0.0.1:`port`, connected (the kernel's side: the server may not have
// accepted it yet).
int Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  return fd;
}

// Whether the server closes `fd` within `timeout` (what it sends is read and dropped);
// `meanwhile` runs every 20 ms until then (to trickle bytes in).
bool ClosedWithin(int fd, absl::Duration timeout, const std::function<void()>& meanwhile = {}) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    pollfd event = {fd, POLLIN, 0};
    if (poll(&event, 1, 20) > 0) {
      char bytes[4096];
      if (recv(fd, bytes, sizeof(bytes), 0) <= 0) return true;
    } else if (meanwhile) {
      meanwhile();
    }
  }
  return false;
}

void Send(int fd, const std::string& bytes) {
  ASSERT_EQ(send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
}

// The head of a protobuf POST /v1/logs of `length` bytes.
std::string Head(size_t length) {
  return absl::StrCat("POST /v1/logs HTTP/1.1\r\nHost: shipper\r\nContent-Type: ", kProtobuf,
                      "\r\nContent-Length: ", length, "\r\n\r\n");
}

class OtlpHttpServerTest : public ::testing::Test {
 protected:
  void Start(
      OtlpAck ack, size_t max_events = 100, size_t budget = 1 << 20, size_t queue_bytes = 0,
      const std::function<void(OtlpSettings&)>& configure = [](OtlpSettings&) {}) {
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
    configure(settings);
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

TEST_F(OtlpHttpServerTest, TakesSpansAndDataPointsOnTheirPathsInBothEncodings) {
  Start(OtlpAck::kQueued);
  opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest traces;
  auto* spans = traces.add_resource_spans()->add_scope_spans();
  for (int i = 0; i < 2; ++i) spans->add_spans()->set_name(absl::StrCat("span ", i));
  httplib::Result protobuf = Post(traces.SerializeAsString(), kProtobuf, "/v1/traces");
  ASSERT_TRUE(protobuf);
  EXPECT_EQ(protobuf->status, 200) << protobuf->body;
  opentelemetry::proto::collector::trace::v1::ExportTraceServiceResponse response;
  EXPECT_TRUE(response.ParseFromString(protobuf->body));
  EXPECT_FALSE(response.has_partial_success());
  httplib::Result json =
      Post(R"({"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"m","gauge":{"dataPoints":[)"
           R"({"asInt":"1"},{"asDouble":2.5},{"asInt":3}]}}]}]}]})",
           kJson, "/v1/metrics");
  ASSERT_TRUE(json);
  EXPECT_EQ(json->status, 200) << json->body;
  EXPECT_EQ(json->body, "{}");
  EXPECT_EQ(DeliverAll(), 5);
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

// Each request is counted once, as it is answered, whether the transport refused it or Export()
// decided it; a record too large ever to be taken is counted rejected once, not again at each
// retry of its export.
TEST_F(OtlpHttpServerTest, EachAnswerAndEachRejectedRecordIsCountedOnce) {
  Start(OtlpAck::kQueued, /*max_events=*/3);
  const auto requests = [](absl::string_view code) {
    return Count("shipper_input_requests_total", absl::StrCat(R"(code=")", code, R"(")"));
  };
  const auto records = [](absl::string_view outcome) {
    return Count("shipper_input_records_total", absl::StrCat(R"(outcome=")", outcome, R"(")"));
  };
  const double ok = requests("OK"), unavailable = requests("UNAVAILABLE"),
               too_large = requests("RESOURCE_EXHAUSTED"), invalid = requests("INVALID_ARGUMENT"),
               accepted = records("accepted"), retry = records("retry"),
               rejected = records("rejected");
  // Two records and one whose event is larger than max_message_size (64 KiB), in a request
  // within it.
  collector::ExportLogsServiceRequest partly;
  auto* scope = partly.add_resource_logs()->add_scope_logs();
  scope->add_log_records()->mutable_body()->set_string_value("one");
  scope->add_log_records()->mutable_body()->set_string_value(std::string((64 << 10) - 60, 'x'));
  scope->add_log_records()->mutable_body()->set_string_value("three");
  const std::string request = partly.SerializeAsString();
  ASSERT_LT(request.size(), size_t{64} << 10);

  httplib::Result fills = Post(Request(3));  // the queue is full then
  ASSERT_TRUE(fills);
  EXPECT_EQ(fills->status, 200);
  httplib::Result full = Post(request);
  ASSERT_TRUE(full);
  EXPECT_EQ(full->status, 503);
  EXPECT_EQ(DeliverAll(), 3);
  httplib::Result retried = Post(request);
  ASSERT_TRUE(retried);
  EXPECT_EQ(retried->status, 200);
  httplib::Result large = Post(std::string((64 << 10) + 1, 'x'));
  ASSERT_TRUE(large);
  EXPECT_EQ(large->status, 413);
  httplib::Result type = Post(Request(1), "text/plain");
  ASSERT_TRUE(type);
  EXPECT_EQ(type->status, 415);

  EXPECT_EQ(requests("OK") - ok, 2);
  EXPECT_EQ(requests("UNAVAILABLE") - unavailable, 1);
  EXPECT_EQ(requests("RESOURCE_EXHAUSTED") - too_large, 1);
  EXPECT_EQ(requests("INVALID_ARGUMENT") - invalid, 1);
  EXPECT_EQ(records("accepted") - accepted, 5);
  EXPECT_EQ(records("retry") - retry, 2) << "the refused export's two records, once";
  EXPECT_EQ(records("rejected") - rejected, 1) << "the record too large, once for both tries";
  EXPECT_EQ(DeliverAll(), 2);
}

TEST_F(OtlpHttpServerTest, TheBodyIsChargedToTheBudgetBeforeItIsRead) {
  // 32 KiB of budget. While Export converts a request, its body, the conversion's bookkeeping
  // and its converted records are all charged: a body of 40 KiB can never fit (413); one of
  // 14 KiB (29 KiB with its bookkeeping and records) does not fit beside 8 KiB of queued records
  // (503), and does once they are delivered.
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

// How a request was sent changes nothing: with exactly the room it needs while converted (its
// body, the conversion's bookkeeping, its records and the events pointing into them) it is
// taken, with a byte less it is too large (413), whether its body came with a Content-Length,
// gzip-compressed, or chunked.
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
  OtlpConversion conversion(OtlpSignal::kLogs);
  ASSERT_TRUE(conversion.Scan(request, absl::Now(), 64 << 10, 1000).ok());
  const size_t needs = request.size() + conversion.bookkeeping_bytes() + conversion.bytes() +
                       conversion.records() * sizeof(queue::Event);
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

std::string Encoded(ContentCoding coding, const std::string& plain) {
  return Encode(coding, plain, 6).value();
}

TEST_F(OtlpHttpServerTest, ContentEncodingsAreOursToDecodeAndOthersAre415) {
  Start(OtlpAck::kQueued);
  const auto post = [&](const std::string& body, const std::string& encoding) {
    return client_->Post("/v1/logs", {{"Content-Encoding", encoding}}, body, kProtobuf);
  };
  const std::string zlib = Encoded(ContentCoding::kDeflate, Request(2));
  const std::string raw_deflate = zlib.substr(2, zlib.size() - 6);  // no header, no Adler-32
  for (const auto& [body, encoding] :
       {std::pair(Encoded(ContentCoding::kGzip, Request(2)), "gzip"), std::pair(zlib, "deflate"),
        std::pair(raw_deflate, "deflate"),
        std::pair(Encoded(ContentCoding::kZstd, Request(2)), "zstd")}) {
    httplib::Result result = post(body, encoding);
    ASSERT_TRUE(result);
    EXPECT_EQ(result->status, 200) << encoding;
  }
  EXPECT_EQ(DeliverAll(), 8);
  for (const char* encoding : {"br", "snappy", "gzip, br"}) {
    httplib::Result result = post(Request(1), encoding);
    ASSERT_TRUE(result);
    EXPECT_EQ(result->status, 415) << encoding;
    EXPECT_THAT(StatusOf(result).message(), HasSubstr("Content-Encoding")) << encoding;
  }
  // A compressed body over the limit as sent is too large (413), not undecodable (400).
  std::string noise(80 << 10, '\0');
  uint32_t x = 1;
  for (char& c : noise) c = static_cast<char>((x = x * 1103515245 + 12345) >> 24);
  httplib::Result large = post(Encoded(ContentCoding::kGzip, noise), "gzip");
  ASSERT_TRUE(large);
  EXPECT_EQ(large->status, 413);
  EXPECT_THAT(StatusOf(large).message(), HasSubstr("shipper.otlp.max_message_size"));
  httplib::Result damaged = post(Encoded(ContentCoding::kGzip, Request(2)).substr(0, 20), "gzip");
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
  httplib::Result profiles = Post(Request(1), kProtobuf, "/v1/profiles");
  ASSERT_TRUE(profiles);
  EXPECT_EQ(profiles->status, 404);
  // Every error body is a google.rpc.Status, in the request's encoding (protobuf by default).
  EXPECT_EQ(profiles->get_header_value("Content-Type"), kProtobuf);
  EXPECT_THAT(StatusOf(profiles).message(), HasSubstr("/v1/logs, /v1/traces or /v1/metrics"));
  httplib::Result json_profiles = Post("{}", kJson, "/v1/profiles");
  ASSERT_TRUE(json_profiles);
  EXPECT_EQ(json_profiles->status, 404);
  EXPECT_EQ(json_profiles->get_header_value("Content-Type"), kJson);
  EXPECT_THAT(json_profiles->body, HasSubstr(R"("message":"/v1/profiles: not found)"));
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

namespace shipper {
namespace {

TEST_F(OtlpHttpServerTest, ThreeHundredIdleConnectionsDoNotDelayAnExport) {
  Start(OtlpAck::kQueued);
  std::vector<int> idle;
  for (int i = 0; i < 300; ++i) idle.push_back(Connect(server_->port()));
  // A thread per connection would have all its threads waiting on the idle ones.
  client_->set_read_timeout(3, 0);
  httplib::Result result = Post(Request(2));
  ASSERT_TRUE(result) << "not answered while 300 connections idle";
  EXPECT_EQ(result->status, 200);
  EXPECT_EQ(DeliverAll(), 2);
  for (int fd : idle) close(fd);
}

TEST_F(OtlpHttpServerTest, ConnectionsBeyondMaxConnectionsAreClosedAtOnce) {
  Start(OtlpAck::kQueued, 100, 1 << 20, 0,
        [](OtlpSettings& settings) { settings.http_max_connections = 4; });
  std::vector<std::unique_ptr<httplib::Client>> open;
  for (int i = 0; i < 4; ++i) {
    open.push_back(std::make_unique<httplib::Client>("127.0.0.1", server_->port()));
    open.back()->set_keep_alive(true);  // served, and its connection stays open
    httplib::Result result = open.back()->Post("/v1/logs", Request(1), kProtobuf);
    ASSERT_TRUE(result);
    ASSERT_EQ(result->status, 200);
  }
  const int beyond = Connect(server_->port());
  EXPECT_TRUE(ClosedWithin(beyond, absl::Seconds(3)))
      << "a connection beyond shipper.otlp.http.max_connections was kept";
  close(beyond);
  // Once one closes, a new one is served.
  open.pop_back();
  bool served = false;
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (!served && absl::Now() < deadline) {
    httplib::Client again("127.0.0.1", server_->port());
    httplib::Result result = again.Post("/v1/logs", Request(1), kProtobuf);
    served = result && result->status == 200;
  }
  EXPECT_TRUE(served);
  EXPECT_EQ(DeliverAll(), 5);
}

TEST_F(OtlpHttpServerTest, AHeadTrickledPastTheHeaderTimeoutIsClosed) {
  Start(OtlpAck::kQueued, 100, 1 << 20, 0,
        [](OtlpSettings& settings) { settings.http_header_timeout = absl::Milliseconds(300); });
  const int silent = Connect(server_->port());
  const int trickling = Connect(server_->port());
  Send(trickling, "POST /v1/logs HTTP/1.1\r\n");
  EXPECT_TRUE(ClosedWithin(trickling, absl::Seconds(3), [&] { Send(trickling, "X: y\r\n"); }))
      << "a head trickled in was waited for past shipper.otlp.http.header_timeout";
  EXPECT_TRUE(ClosedWithin(silent, absl::Seconds(1))) << "a silent connection was kept";
  close(silent);
  close(trickling);
}

TEST_F(OtlpHttpServerTest, AKeptAliveConnectionIdleForTheIdleTimeoutIsClosed) {
  Start(OtlpAck::kQueued, 100, 1 << 20, 0,
        [](OtlpSettings& settings) { settings.http_idle_timeout = absl::Seconds(1); });
  const int fd = Connect(server_->port());
  const std::string request = Request(1);
  Send(fd, Head(request.size()) + request);
  std::string answer;
  char bytes[4096];
  while (answer.find("\r\n\r\n") == std::string::npos) {
    const ssize_t n = recv(fd, bytes, sizeof(bytes), 0);
    ASSERT_GT(n, 0) << "closed before answering";
    answer.append(bytes, n);
  }
  EXPECT_THAT(answer, ::testing::StartsWith("HTTP/1.1 200"));
  EXPECT_TRUE(ClosedWithin(fd, absl::Seconds(3)))
      << "kept alive idle past shipper.otlp.http.idle_timeout";
  close(fd);
  EXPECT_EQ(DeliverAll(), 1);
}

TEST_F(OtlpHttpServerTest, StoppingClosesTrickledBodiesAtOnce) {
  Start(OtlpAck::kQueued);
  std::vector<int> trickling;
  for (int i = 0; i < 10; ++i) {
    trickling.push_back(Connect(server_->port()));
    Send(trickling.back(), Head(1000) + "0123456789");
  }
  exports_->Drained();
  const absl::Time start = absl::Now();
  server_.reset();
  EXPECT_LT(absl::Now() - start, absl::Seconds(5)) << "the server waited for trickled bodies";
  for (int fd : trickling) {
    EXPECT_TRUE(ClosedWithin(fd, absl::Seconds(1)));
    close(fd);
  }
}

}  // namespace
}  // namespace shipper
