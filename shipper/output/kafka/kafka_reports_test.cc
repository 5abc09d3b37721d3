#include "shipper/output/kafka/kafka_reports.h"

#include <atomic>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace shipper {
namespace {

using Results = std::vector<rd_kafka_resp_err_t>;

// Reports come from another thread (librdkafka's poller), each on the event its opaque names.
TEST(KafkaReportsTest, AwaitReturnsEachEventsReport) {
  KafkaReports* reports = KafkaReports::New(3);
  std::vector<void*> opaques;
  for (size_t i = 0; i < 3; ++i) opaques.push_back(reports->Expect(i));
  std::thread poller([&] {
    KafkaReports::Report(opaques[2], RD_KAFKA_RESP_ERR_NO_ERROR);
    KafkaReports::Report(opaques[0], RD_KAFKA_RESP_ERR__MSG_TIMED_OUT);
    KafkaReports::Report(opaques[1], RD_KAFKA_RESP_ERR_NO_ERROR);
  });
  std::atomic<bool> cancelled{false};
  absl::StatusOr<Results> results = reports->Await(cancelled);
  poller.join();
  ASSERT_TRUE(results.ok()) << results.status();
  EXPECT_EQ(*results, (Results{RD_KAFKA_RESP_ERR__MSG_TIMED_OUT, RD_KAFKA_RESP_ERR_NO_ERROR,
                               RD_KAFKA_RESP_ERR_NO_ERROR}));
}

// A message librdkafka refused to take has no report to wait for; an event never produced has
// none either.
TEST(KafkaReportsTest, RefusedAndUnproducedEventsNeedNoReport) {
  KafkaReports* reports = KafkaReports::New(3);
  reports->Expect(0);
  reports->Refused(0, RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION);
  void* second = reports->Expect(1);
  KafkaReports::Report(second, RD_KAFKA_RESP_ERR_NO_ERROR);
  std::atomic<bool> cancelled{false};
  absl::StatusOr<Results> results = reports->Await(cancelled);
  ASSERT_TRUE(results.ok()) << results.status();
  EXPECT_EQ(*results, (Results{RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION, RD_KAFKA_RESP_ERR_NO_ERROR,
                               RD_KAFKA_RESP_ERR_NO_ERROR}));
}

// At a cancel Await() lets go before the reports come; the last of them frees the reports (a
// leak or a use after free shows under ASan).
TEST(KafkaReportsTest, CancelledAwaitLetsGoAndTheLastReportFrees) {
  KafkaReports* reports = KafkaReports::New(2);
  void* first = reports->Expect(0);
  void* second = reports->Expect(1);
  std::atomic<bool> cancelled{true};
  absl::StatusOr<Results> results = reports->Await(cancelled);
  ASSERT_FALSE(results.ok());
  EXPECT_EQ(results.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(absl::StrContains(results.status().message(), "2 messages unconfirmed"))
      << results.status();
  KafkaReports::Report(first, RD_KAFKA_RESP_ERR__PURGE_INFLIGHT);
  KafkaReports::Report(second, RD_KAFKA_RESP_ERR__PURGE_INFLIGHT);
}

TEST(KafkaReportsTest, SettleSaysWhatBecameOfEachEvent) {
  const Results results = {RD_KAFKA_RESP_ERR_NO_ERROR, RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE,
                           RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION, RD_KAFKA_RESP_ERR_NO_ERROR,
                           RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC};
  const std::vector<std::string> refusals = {"", "", "", "kafka: no field host.name", ""};
  Outcome outcome;
  ASSERT_TRUE(SettleKafkaWrite(results, refusals, 5, false, &outcome).ok());
  ASSERT_EQ(outcome.rejected.size(), 2u);
  EXPECT_EQ(outcome.rejected[0].event, 1u);
  EXPECT_EQ(outcome.rejected[0].reason, KafkaErrorText(RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE));
  EXPECT_EQ(outcome.rejected[1].event, 3u);
  EXPECT_EQ(outcome.rejected[1].reason, "kafka: no field host.name");
  // An unknown topic is failed for now: it may be created, or its metadata still on the way.
  EXPECT_EQ(outcome.failed, (std::vector<size_t>{2, 4}));
  EXPECT_EQ(outcome.failure, KafkaErrorText(RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION));
}

TEST(KafkaReportsTest, SettleFailsWhatACancelLeftUnproduced) {
  const Results results(3, RD_KAFKA_RESP_ERR_NO_ERROR);
  Outcome outcome;
  absl::Status status = SettleKafkaWrite(results, {"", "", ""}, 1, true, &outcome);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_EQ(outcome.failed, (std::vector<size_t>{1, 2}));
}

// Purged messages are failed for now either way; only a cancel makes the whole Write() fail
// (without one they were purged by a producer's replacement after a fatal error).
TEST(KafkaReportsTest, SettlePurgedFailsTheWriteOnlyWhenCancelled) {
  const Results results = {RD_KAFKA_RESP_ERR_NO_ERROR, RD_KAFKA_RESP_ERR__PURGE_QUEUE};
  for (bool cancelled : {false, true}) {
    Outcome outcome;
    absl::Status status = SettleKafkaWrite(results, {"", ""}, 2, cancelled, &outcome);
    EXPECT_EQ(status.ok(), !cancelled) << status;
    EXPECT_EQ(outcome.failed, (std::vector<size_t>{1}));
    EXPECT_TRUE(outcome.rejected.empty());
  }
}

}  // namespace
}  // namespace shipper
