#include "shipper/metrics/shipper_metrics.h"

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "queue/memory_queue.h"

namespace shipper::metrics {
namespace {

// The value of the sample `name` + `labels`; -1 when there is none.
double Value(const std::vector<MetricFamily>& families, absl::string_view name,
             absl::string_view labels = "") {
  for (const MetricFamily& family : families) {
    if (family.name != name) continue;
    for (const MetricFamily::Sample& sample : family.samples) {
      if (sample.labels == labels) return sample.value;
    }
  }
  return -1;
}

const MetricFamily* Find(const std::vector<MetricFamily>& families, absl::string_view name) {
  for (const MetricFamily& family : families) {
    if (family.name == name) return &family;
  }
  return nullptr;
}

class ShipperMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    queue::MemoryOptions options;
    options.max_events = 100;
    options.max_bytes = 1 << 20;
    absl::StatusOr<std::unique_ptr<queue::Queue>> queue = queue::MemoryQueue::Create(options);
    ASSERT_TRUE(queue.ok()) << queue.status();
    queue_ = *std::move(queue);
    producer_ = queue_->NewProducer(
        [](uint64_t, uint64_t persisted) { ShipperMetrics::Get().Persisted(persisted); });
    sources_.queue = queue_.get();
    sources_.queue_max_events = options.max_events;
    sources_.queue_max_bytes = options.max_bytes;
    sources_.output_workers = [] { return 3; };
    sources_.grpc_workers = [] { return 4; };
  }

  // Publishes `n` events of 10 bytes through the queue, as PublishEvents would.
  queue::PublishResult Publish(size_t n) {
    std::vector<queue::Event> events;
    for (size_t i = 0; i < n; ++i) events.emplace_back(&events, 10, nullptr);
    const absl::Time start = absl::Now();
    queue::PublishResult result = producer_->TryPublish(absl::MakeSpan(events));
    ShipperMetrics::Get().Published(n, result.accepted, result.last_index, absl::StatusCode::kOk,
                                    start);
    return result;
  }

  std::unique_ptr<queue::Queue> queue_;
  std::unique_ptr<queue::Producer> producer_;
  Sources sources_;
};

TEST_F(ShipperMetricsTest, CountsWhatWasPublishedAcceptedRejectedAndPersisted) {
  const std::vector<MetricFamily> before = Collect(sources_);
  ShipperMetrics& m = ShipperMetrics::Get();
  m.Published(7, 0, 0, absl::StatusCode::kFailedPrecondition, absl::Now());
  m.Published(2, 0, 0, absl::StatusCode::kInvalidArgument, absl::Now());
  EXPECT_EQ(Publish(60).accepted, 60u);
  EXPECT_EQ(Publish(50).accepted, 40u);  // the queue holds 100: 10 refused as queue_full
  queue::Batch batch = queue_->Get(64);
  ASSERT_EQ(batch.size(), 64u);
  batch.Done();

  const std::vector<MetricFamily> after = Collect(sources_);
  auto delta = [&](absl::string_view name, absl::string_view labels = "") {
    return Value(after, name, labels) - Value(before, name, labels);
  };
  EXPECT_EQ(delta("shipper_events_received_total"), 119);
  EXPECT_EQ(delta("shipper_events_accepted_total"), 100);
  EXPECT_EQ(delta("shipper_events_rejected_total", R"({reason="uuid_mismatch"})"), 7);
  EXPECT_EQ(delta("shipper_events_rejected_total", R"({reason="queue_full"})"), 10);
  EXPECT_EQ(delta("shipper_events_rejected_total", R"({reason="invalid"})"), 2);
  EXPECT_EQ(delta("shipper_events_rejected_total", R"({reason="shutting_down"})"), 0);
  EXPECT_EQ(Value(after, "shipper_events_persisted_total"), 64);
  EXPECT_EQ(Value(after, "shipper_queue_events"), 36);
  EXPECT_EQ(Value(after, "shipper_queue_bytes"), 360);
  EXPECT_EQ(Value(after, "shipper_queue_max_events"), 100);
  EXPECT_EQ(Value(after, "shipper_queue_max_bytes"), 1 << 20);
  EXPECT_EQ(Value(after, "shipper_executor_threads", R"({pool="output"})"), 3);
  EXPECT_EQ(Value(after, "shipper_executor_threads", R"({pool="grpc"})"), 4);
  EXPECT_EQ(Value(after, "shipper_build_info", R"({version="0.1.0"})"), 1);

  // The batch of 64 persisted the first call (index 60) but not the second (up to 100).
  const MetricFamily* persist = Find(after, "shipper_persist_duration_seconds");
  ASSERT_NE(persist, nullptr);
  ASSERT_EQ(persist->histograms.size(), 1u);
  EXPECT_EQ(persist->histograms[0].snapshot.count -
                Find(before, "shipper_persist_duration_seconds")->histograms[0].snapshot.count,
            1u);

  queue::Batch rest = queue_->Get(64);
  rest.Done();
}

TEST_F(ShipperMetricsTest, OutputMetricsAreLabeledByOutput) {
  OutputMetrics& file = ShipperMetrics::Get().Output("file");
  EXPECT_EQ(&ShipperMetrics::Get().Output("file"), &file);
  file.errors.Add(2);
  file.retries.Add(3);
  file.dead_lettered.Add(4);
  file.write_seconds.ObserveDuration(absl::Milliseconds(3));
  file.batch_events.Observe(100);
  const std::vector<MetricFamily> families = Collect(sources_);
  EXPECT_GE(Value(families, "shipper_output_errors_total", R"({output="file"})"), 2);
  EXPECT_GE(Value(families, "shipper_output_retries_total", R"({output="file"})"), 3);
  EXPECT_GE(Value(families, "shipper_events_dead_lettered_total", R"({output="file"})"), 4);
  const MetricFamily* writes = Find(families, "shipper_output_write_duration_seconds");
  ASSERT_NE(writes, nullptr);
  ASSERT_EQ(writes->histograms.size(), 1u);
  EXPECT_EQ(writes->histograms[0].labels, R"({output="file"})");
  const MetricFamily* batches = Find(families, "shipper_output_batch_events");
  ASSERT_NE(batches, nullptr);
  EXPECT_GE(batches->histograms[0].snapshot.count, 1u);
}

TEST_F(ShipperMetricsTest, InputRequestsRecordsAndReplyTimeByInput) {
  ShipperMetrics& m = ShipperMetrics::Get();
  m.InputRequest("otlp_grpc", absl::StatusCode::kOk, absl::Milliseconds(2));
  m.InputRequest("otlp_grpc", absl::StatusCode::kUnavailable, absl::Milliseconds(1));
  m.InputRequest("producer", absl::StatusCode::kOk, absl::Milliseconds(3));
  m.InputRecords("otlp_grpc", RecordOutcome::kAccepted, 5);
  m.InputRecords("otlp_grpc", RecordOutcome::kRetry, 7);
  m.InputRecords("otlp_grpc", RecordOutcome::kRejected, 1);
  m.InputRecords("otlp_http", RecordOutcome::kRejected, 0);  // nothing: no sample
  // The OTLP inputs label what each request carried.
  m.InputRequest("otlp_http", absl::StatusCode::kOk, absl::Milliseconds(1), "traces");
  m.InputRecords("otlp_http", RecordOutcome::kAccepted, 3, "metrics");
  const std::vector<MetricFamily> families = Collect(sources_);
  EXPECT_EQ(Value(families, "shipper_input_requests_total",
                  R"({input="otlp_http",code="OK",signal="traces"})"),
            1);
  EXPECT_EQ(Value(families, "shipper_input_records_total",
                  R"({input="otlp_http",outcome="accepted",signal="metrics"})"),
            3);
  EXPECT_EQ(Value(families, "shipper_input_requests_total", R"({input="otlp_grpc",code="OK"})"), 1);
  EXPECT_EQ(
      Value(families, "shipper_input_requests_total", R"({input="otlp_grpc",code="UNAVAILABLE"})"),
      1);
  EXPECT_EQ(
      Value(families, "shipper_input_records_total", R"({input="otlp_grpc",outcome="accepted"})"),
      5);
  EXPECT_EQ(
      Value(families, "shipper_input_records_total", R"({input="otlp_grpc",outcome="retry"})"), 7);
  EXPECT_EQ(
      Value(families, "shipper_input_records_total", R"({input="otlp_grpc",outcome="rejected"})"),
      1);
  EXPECT_EQ(
      Value(families, "shipper_input_records_total", R"({input="otlp_http",outcome="rejected"})"),
      -1);
  const MetricFamily* replies = Find(families, "shipper_input_reply_duration_seconds");
  ASSERT_NE(replies, nullptr);
  ASSERT_GE(replies->histograms.size(), 2u);
  for (const auto& histogram : replies->histograms) {
    if (histogram.labels == R"({input="otlp_grpc"})") {
      EXPECT_EQ(histogram.snapshot.count, 2u);
    }
  }
}

TEST_F(ShipperMetricsTest, ProcessAndCpuMetricsAreRead) {
  runtime::CpuQuotaOptions options;
  options.override_cpus = 2;
  runtime::CpuMonitor cpu(options, absl::ZeroDuration());
  sources_.cpu = &cpu;
  const std::vector<MetricFamily> families = Collect(sources_);
  EXPECT_EQ(Value(families, "shipper_cpu_effective", R"({source="override"})"), 2);
  EXPECT_GE(Value(families, "shipper_cpu_host"), 1);
  EXPECT_GE(Value(families, "shipper_cpu_retunes_total"), 0);
  EXPECT_GE(Value(families, "shipper_connections_refused_total"), 0);
  EXPECT_GE(Value(families, "shipper_otlp_http_connections_refused_total"), 0);
  EXPECT_GT(Value(families, "process_resident_memory_bytes"), 0);
  EXPECT_GE(Value(families, "process_threads"), 1);
  EXPECT_GE(Value(families, "process_open_fds"), 3);
  EXPECT_GE(Value(families, "shipper_uptime_seconds"), 0);
  EXPECT_LT(Value(families, "shipper_uptime_seconds"), 600);
}

TEST_F(ShipperMetricsTest, MemoryLimitBudgetsAndWhatIsInUse) {
  EXPECT_EQ(Find(Collect(sources_), "shipper_memory_budget_bytes"), nullptr);  // no budget given
  runtime::MemoryBudget budget(1000);
  ASSERT_TRUE(budget.TryAcquire(300));
  sources_.budget = &budget;
  sources_.max_receive_memory = 2000;
  std::vector<MetricFamily> families = Collect(sources_);
  EXPECT_EQ(Find(families, "shipper_memory_limit_bytes"), nullptr);  // no limit: absent
  EXPECT_EQ(Value(families, "shipper_memory_budget_bytes", R"({part="requests"})"), 1000);
  EXPECT_EQ(Value(families, "shipper_memory_budget_bytes", R"({part="receive"})"), 2000);
  EXPECT_EQ(Value(families, "shipper_memory_budget_in_use_bytes", R"({part="requests"})"), 300);
  sources_.memory_limit.source = "cgroup2";
  sources_.memory_limit.bytes = 256 << 20;
  families = Collect(sources_);
  EXPECT_EQ(Value(families, "shipper_memory_limit_bytes", R"({source="cgroup2"})"), 256 << 20);
  budget.Release(300);
}

TEST_F(ShipperMetricsTest, EveryFamilyHasHelpAndAType) {
  ShipperMetrics::Get().Output("file").errors.Add();
  ShipperMetrics::Get()
      .GrpcRequests("/elastic.agent.shipper.v1.Producer/PublishEvents", "OK")
      .Add();
  runtime::CpuMonitor cpu(runtime::CpuQuotaOptions{}, absl::ZeroDuration());
  sources_.cpu = &cpu;
  // promtool checks the whole page of a running Shipper in tests/metrics.
  for (const MetricFamily& family : Collect(sources_)) {
    EXPECT_FALSE(family.help.empty()) << family.name;
    if (family.type == MetricFamily::Type::kCounter) {
      EXPECT_TRUE(absl::EndsWith(family.name, "_total")) << family.name;
    }
  }
}

}  // namespace
}  // namespace shipper::metrics
