#include "shipper/input/otlp/otlp_exports.h"

#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/messages.pb.h"
#include "proto/otlp/logs_service.pb.h"
#include "queue/memory_queue.h"
#include "queue/queue.h"
#include "queue/test_util.h"
#include "runtime/memory_budget.h"
#include "shipper/input/otlp/otlp_conversion.h"

namespace shipper {
namespace {

namespace collector = opentelemetry::proto::collector::logs::v1;
using ::testing::HasSubstr;

// `n` records with bodies of `body_bytes` bytes.
std::string Request(int n, size_t body_bytes = 10) {
  collector::ExportLogsServiceRequest request;
  auto* scope = request.add_resource_logs()->add_scope_logs();
  for (int i = 0; i < n; ++i) {
    scope->add_log_records()->mutable_body()->set_string_value(std::string(body_bytes, 'a' + i));
  }
  return request.SerializeAsString();
}

// What one export's `done` was given, and on which thread.
struct Answer {
  absl::Notification called;
  ExportOutcome outcome;
  std::thread::id thread;

  OtlpExports::Done Done() {
    return [this](const ExportOutcome& o) {
      ASSERT_FALSE(called.HasBeenNotified()) << "done called twice";
      outcome = o;
      thread = std::this_thread::get_id();
      called.Notify();
    };
  }
};

class OtlpExportsTest : public ::testing::Test {
 protected:
  void Start(OtlpAck ack, size_t max_events = 100, size_t budget = 1 << 20) {
    queue::MemoryOptions options;
    options.max_events = max_events;
    options.max_bytes = budget;
    queue_ = std::move(*queue::MemoryQueue::Create(options));
    budget_ = std::make_unique<runtime::MemoryBudget>(budget);
    settings_.ack = ack;
    settings_.retry_delay = absl::Milliseconds(1500);
    settings_.max_message_size = 64 << 10;
    exports_ = std::make_unique<OtlpExports>(queue_.get(), budget_.get(), settings_);
  }

  // With shipper.queue.mem.bytes: 0 (no budget), ack: queued, and a queue of 1 GiB.
  void StartWithoutABudget() {
    queue::MemoryOptions options;
    options.max_events = 100000;
    options.max_bytes = size_t{1} << 30;
    queue_ = std::move(*queue::MemoryQueue::Create(options));
    budget_ = std::make_unique<runtime::MemoryBudget>(0);
    settings_.ack = OtlpAck::kQueued;
    settings_.max_message_size = 64 << 10;
    exports_ = std::make_unique<OtlpExports>(queue_.get(), budget_.get(), settings_);
  }

  // Delivers whatever is queued, on another thread, and returns how many.
  size_t DeliverAll() { return queue::testing::DeliverAll(queue_.get()); }

  OtlpSettings settings_;
  // Before the queue: records still queued when the queue goes give their bytes back to it.
  std::unique_ptr<runtime::MemoryBudget> budget_;
  std::unique_ptr<queue::Queue> queue_;
  std::unique_ptr<OtlpExports> exports_;
};

TEST_F(OtlpExportsTest, AckQueuedAnswersAtOnce) {
  Start(OtlpAck::kQueued);
  Answer a;
  exports_->Export(OtlpTransport::kGrpc, OtlpSignal::kLogs, Request(3), absl::Now(), a.Done());
  ASSERT_TRUE(a.called.HasBeenNotified()) << "answered before Export returned";
  EXPECT_TRUE(a.outcome.status.ok()) << a.outcome.status;
  EXPECT_EQ(a.outcome.rejected_records, 0);
  EXPECT_EQ(a.thread, std::this_thread::get_id());
  EXPECT_EQ(queue_->stats().events, 3);
  EXPECT_GT(budget_->in_use(), 0);
  EXPECT_EQ(DeliverAll(), 3);
  EXPECT_EQ(budget_->in_use(), 0) << "the charge goes back with the last record";
}

TEST_F(OtlpExportsTest, AckPersistedAnswersFromTheAckPathOnceEveryRecordIsPersisted) {
  Start(OtlpAck::kPersisted);
  Answer a;
  exports_->Export(OtlpTransport::kGrpc, OtlpSignal::kLogs, Request(3), absl::Now(), a.Done());
  EXPECT_FALSE(a.called.HasBeenNotified());
  // Two of three done: still waiting.
  queue::Batch two = queue_->Get(2, absl::Now());
  ASSERT_EQ(two.size(), 2);
  two.Done();
  EXPECT_FALSE(a.called.HasBeenNotified());
  std::thread::id consumer;
  std::thread([&] {
    consumer = std::this_thread::get_id();
    queue::Batch last = queue_->Get(10, absl::Now());
    ASSERT_EQ(last.size(), 1);
    last.Done();
  }).join();
  ASSERT_TRUE(a.called.HasBeenNotified());
  EXPECT_TRUE(a.outcome.status.ok()) << a.outcome.status;
  EXPECT_EQ(a.thread, consumer) << "called back from the consumer's Done()";
}

TEST_F(OtlpExportsTest, ARetryJoinsItsWaitingExportAndIsAnsweredWithIt) {
  Start(OtlpAck::kPersisted);
  Answer first, retry, other;
  exports_->Export(OtlpTransport::kGrpc, OtlpSignal::kLogs, Request(3), absl::Now(), first.Done());
  // The sender's deadline passed: it sends the same bytes again, over either transport.
  exports_->Export(OtlpTransport::kHttp, OtlpSignal::kLogs, Request(3), absl::Now(), retry.Done());
  exports_->Export(OtlpTransport::kGrpc, OtlpSignal::kLogs, Request(3, 11), absl::Now(),
                   other.Done());
  EXPECT_FALSE(retry.called.HasBeenNotified()) << "waits with the export it repeats";
  EXPECT_EQ(queue_->published_index(), 6) << "the retry's records are not queued again";
  EXPECT_EQ(DeliverAll(), 6);
  ASSERT_TRUE(first.called.HasBeenNotified());
  ASSERT_TRUE(retry.called.HasBeenNotified());
  EXPECT_TRUE(retry.outcome.status.ok()) << retry.outcome.status;
  EXPECT_TRUE(other.outcome.status.ok()) << other.outcome.status;
}

TEST_F(OtlpExportsTest, ARetryOfAPersistedExportIsAnsweredOkWithinTheWindow) {
  settings_.retry_window = absl::Hours(1);
  Start(OtlpAck::kPersisted);
  Answer first, late_retry;
  exports_->Export(OtlpTransport::kGrpc, OtlpSignal::kLogs, Request(2), absl::Now(), first.Done());
  EXPECT_EQ(DeliverAll(), 2);
  ASSERT_TRUE(first.called.HasBeenNotified());
  exports_->Export(OtlpTransport::kGrpc, OtlpSignal::kLogs, Request(2), absl::Now(),
                   late_retry.Done());
  ASSERT_TRUE(late_retry.called.HasBeenNotified()) << "answered at once";
  EXPECT_TRUE(late_retry.outcome.status.ok()) << late_retry.outcome.status;
  EXPECT_EQ(queue_->published_index(), 2) << "not queued again";
}

TEST_F(OtlpExportsTest, WithoutAWindowAPersistedExportIsTakenAgain) {
  settings_.retry_window = absl::ZeroDuration();
  Start(OtlpAck::kPersisted);
  Answer first, again;
  exports_->Export(OtlpTransport::kGrpc, OtlpSignal::kLogs, Request(2), absl::Now(), first.Done());
  EXPECT_EQ(DeliverAll(), 2);
  exports_->Export(OtlpTransport::kGrpc, OtlpSignal::kLogs, Request(2), absl::Now(), again.Done());
  EXPECT_EQ(queue_->published_index(), 4);
  EXPECT_EQ(DeliverAll(), 2);
  EXPECT_TRUE(again.outcome.status.ok()) << again.outcome.status;
}

TEST_F(OtlpExportsTest, DrainedAnswersAJoinedRetryToo) {
  Start(OtlpAck::kPersisted);
  Answer first, retry;
  exports_->Export(OtlpTransport::kGrpc, OtlpSignal::kLogs, Request(1), absl::Now(), first.Done());
  exports_->Export(OtlpTransport::kGrpc, OtlpSignal::kLogs, Request(1), absl::Now(), retry.Done());
  exports_->StopAccepting();
  exports_->Drained();
  ASSERT_TRUE(retry.called.HasBeenNotified());
  EXPECT_EQ(retry.outcome.status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(first.outcome.status.code(), absl::StatusCode::kUnavailable);
  queue_->Close();
  queue::Batch rest = queue_->Get(10, absl::Now());
  rest.Done();
}

TEST_F(OtlpExportsTest, AFullQueueTakesNothingAndAsksToRetryLater) {
  Start(OtlpAck::kQueued, /*max_events=*/4);
  Answer first, second;
  exports_->Export(OtlpTransport::kGrpc, OtlpSignal::kLogs, Request(3), absl::Now(), first.Done());
  ASSERT_TRUE(first.outcome.status.ok());
  exports_->Export(OtlpTransport::kHttp, OtlpSignal::kLogs, Request(2), absl::Now(), second.Done());
  ASSERT_TRUE(second.called.HasBeenNotified());
  EXPECT_EQ(second.outcome.status.code(), absl::StatusCode::kUnavailable) << second.outcome.status;
  EXPECT_EQ(second.outcome.retry_delay, absl::Milliseconds(1500));
  EXPECT_EQ(queue_->stats().events, 3) << "nothing of the refused export is queued";
  EXPECT_EQ(queue_->published_index(), 3);
  // Once there is room, the same export is taken whole.
  EXPECT_EQ(DeliverAll(), 3);
  Answer retried;
  exports_->Export(OtlpTransport::kHttp, OtlpSignal::kLogs, Request(2), absl::Now(),
                   retried.Done());
  EXPECT_TRUE(retried.outcome.status.ok()) << retried.outcome.status;
  EXPECT_EQ(queue_->stats().events, 2);
  // More records than the queue ever holds: too large, no retry.
  Answer huge;
  exports_->Export(OtlpTransport::kGrpc, OtlpSignal::kLogs, Request(5), absl::Now(), huge.Done());
  EXPECT_EQ(huge.outcome.status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(huge.outcome.retry_delay, absl::ZeroDuration());
}

// An export of 10 records holds 6.4 KB while converted (its request, the bookkeeping, its records
// and their events), of which its bookkeeping, records and events (4.4 KB) are charged, and
// 3.1 KB once queued: a second does not fit beside the first in 7 KiB.
TEST_F(OtlpExportsTest, AFullBudgetAsksToRetryLater) {
  Start(OtlpAck::kQueued, 100, /*budget=*/7 << 10);
  Answer a, b;
  exports_->Export(OtlpTransport::kGrpc, OtlpSignal::kLogs, Request(10, 200), absl::Now(),
                   a.Done());
  ASSERT_TRUE(a.outcome.status.ok()) << a.outcome.status;
  exports_->Export(OtlpTransport::kGrpc, OtlpSignal::kLogs, Request(10, 200), absl::Now(),
                   b.Done());
  EXPECT_EQ(b.outcome.status.code(), absl::StatusCode::kUnavailable) << b.outcome.status;
  EXPECT_THAT(b.outcome.status.message(), HasSubstr("shipper.queue.mem.bytes"));
  EXPECT_EQ(b.outcome.retry_delay, absl::Milliseconds(1500));
  EXPECT_EQ(queue_->stats().events, 10);
}

// With shipper.queue.mem.bytes: 0 nothing else bounds what an export's records take: 60 KB
// (a 30 KB resource attribute over 15,000 empty records, each copying it) would be 450 MB once
// converted. Refused by its own size before any of it is made.
TEST_F(OtlpExportsTest, WithoutABudgetAnExportHoldsABoundedMultipleOfItsSize) {
  StartWithoutABudget();
  collector::ExportLogsServiceRequest request;
  auto* rl = request.add_resource_logs();
  auto* attribute = rl->mutable_resource()->add_attributes();
  attribute->set_key("big");
  attribute->mutable_value()->set_string_value(std::string(30 << 10, 'r'));
  auto* scope = rl->add_scope_logs();
  for (int i = 0; i < 15000; ++i) scope->add_log_records();
  const std::string bytes = request.SerializeAsString();
  ASSERT_LT(bytes.size(), settings_.max_message_size);
  Answer answer;
  exports_->Export(OtlpTransport::kHttp, OtlpSignal::kLogs, bytes, absl::Now(), answer.Done());
  EXPECT_EQ(answer.outcome.status.code(), absl::StatusCode::kResourceExhausted)
      << answer.outcome.status;
  EXPECT_THAT(answer.outcome.status.message(), HasSubstr("shipper.otlp.max_message_size"));
  EXPECT_EQ(queue_->stats().events, 0);
  EXPECT_EQ(budget_->in_use(), 0);
}

// With shipper.queue.mem.bytes: 0 the bound (16 x max_message_size) counts everything the export
// holds at once: its request, the conversion's bookkeeping, its records and their events. An
// export whose records alone fit under it but not with the rest is refused by its own size
// before its records are made; with fewer records it is taken.
TEST_F(OtlpExportsTest, WithoutABudgetTheBoundCountsEverythingAnExportHolds) {
  StartWithoutABudget();
  const size_t bound = OtlpExports::kUnbudgetedMultiple * settings_.max_message_size;
  ASSERT_EQ(exports_->ceiling(), bound);
  // An 8 KiB resource attribute copied into each record's event, 3 records of 8,000 empty array
  // values (4 bytes of bookkeeping per 2 bytes of request), and `empty` empty records.
  const auto request = [](int empty) {
    collector::ExportLogsServiceRequest request;
    auto* rl = request.add_resource_logs();
    auto* attribute = rl->mutable_resource()->add_attributes();
    attribute->set_key("big");
    attribute->mutable_value()->set_string_value(std::string(8 << 10, 'r'));
    auto* scope = rl->add_scope_logs();
    for (int i = 0; i < 3; ++i) {
      auto* values = scope->add_log_records()->mutable_body()->mutable_array_value();
      for (int j = 0; j < 8000; ++j) values->add_values();
    }
    for (int i = 0; i < empty; ++i) scope->add_log_records();
    return request.SerializeAsString();
  };
  const auto holds = [](const std::string& bytes, bool* records_fit) {
    OtlpConversion conversion(OtlpSignal::kLogs);
    EXPECT_TRUE(conversion.Scan(bytes, absl::Now(), 64 << 10, OtlpExports::kMaxRecords).ok());
    *records_fit = conversion.bytes() <= OtlpExports::kUnbudgetedMultiple * (64 << 10);
    return bytes.size() + conversion.bookkeeping_bytes() + conversion.bytes() +
           conversion.records() * sizeof(queue::Event);
  };

  const std::string over = request(100);
  ASSERT_LT(over.size(), settings_.max_message_size);
  bool records_fit = false;
  ASSERT_GT(holds(over, &records_fit), bound);
  ASSERT_TRUE(records_fit) << "its records alone are within the bound";
  Answer refused;
  exports_->Export(OtlpTransport::kGrpc, OtlpSignal::kLogs, over, absl::Now(), refused.Done());
  EXPECT_EQ(refused.outcome.status.code(), absl::StatusCode::kResourceExhausted)
      << refused.outcome.status;
  EXPECT_THAT(refused.outcome.status.message(), HasSubstr("shipper.otlp.max_message_size"));
  EXPECT_EQ(queue_->stats().events, 0);
  EXPECT_EQ(budget_->in_use(), 0);

  const std::string under = request(50);
  ASSERT_LE(holds(under, &records_fit), bound);
  Answer taken;
  exports_->Export(OtlpTransport::kGrpc, OtlpSignal::kLogs, under, absl::Now(), taken.Done());
  EXPECT_TRUE(taken.outcome.status.ok()) << taken.outcome.status;
  EXPECT_EQ(queue_->stats().events, 53);
  EXPECT_EQ(DeliverAll(), 53);
  EXPECT_EQ(budget_->in_use(), 0);
}

TEST_F(OtlpExportsTest, TooLargeUndecodableAndPartlyTooLarge) {
  Start(OtlpAck::kQueued, 100, /*budget=*/8192);
  Answer large, garbage, partial;
  exports_->Export(OtlpTransport::kGrpc, OtlpSignal::kLogs, Request(1, 70 << 10), absl::Now(),
                   large.Done());
  EXPECT_EQ(large.outcome.status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(large.outcome.status.message(), HasSubstr("shipper.otlp.max_message_size"));
  EXPECT_EQ(large.outcome.retry_delay, absl::ZeroDuration());

  exports_->Export(OtlpTransport::kGrpc, OtlpSignal::kLogs, "\x0a\x05\x01", absl::Now(),
                   garbage.Done());
  EXPECT_EQ(garbage.outcome.status.code(), absl::StatusCode::kInvalidArgument);

  // The middle record is larger than the whole budget once converted (its bytes become base64),
  // though the request fits: rejected, the others taken.
  collector::ExportLogsServiceRequest request;
  auto* scope = request.add_resource_logs()->add_scope_logs();
  scope->add_log_records()->mutable_body()->set_string_value("one");
  scope->add_log_records()->mutable_body()->set_bytes_value(std::string(6200, 'x'));
  scope->add_log_records()->mutable_body()->set_string_value("three");
  exports_->Export(OtlpTransport::kGrpc, OtlpSignal::kLogs, request.SerializeAsString(),
                   absl::Now(), partial.Done());
  EXPECT_TRUE(partial.outcome.status.ok()) << partial.outcome.status;
  EXPECT_EQ(partial.outcome.rejected_records, 1);
  EXPECT_THAT(partial.outcome.error_message, HasSubstr("too large"));
  EXPECT_EQ(queue_->stats().events, 2);
}

TEST_F(OtlpExportsTest, ShutdownRefusesNewExportsAndDrainedAnswersTheWaiting) {
  Start(OtlpAck::kPersisted);
  Answer waiting, persisted_in_drain, late;
  exports_->Export(OtlpTransport::kGrpc, OtlpSignal::kLogs, Request(1), absl::Now(),
                   persisted_in_drain.Done());
  exports_->Export(OtlpTransport::kGrpc, OtlpSignal::kLogs, Request(1, 11), absl::Now(),
                   waiting.Done());
  exports_->StopAccepting();
  exports_->Export(OtlpTransport::kGrpc, OtlpSignal::kLogs, Request(1, 12), absl::Now(),
                   late.Done());
  EXPECT_EQ(late.outcome.status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(late.outcome.retry_delay, absl::Milliseconds(1500));
  // During the drain an export whose records persist is answered OK.
  queue::Batch first = queue_->Get(1, absl::Now());
  ASSERT_EQ(first.size(), 1);
  first.Done();
  ASSERT_TRUE(persisted_in_drain.called.HasBeenNotified());
  EXPECT_TRUE(persisted_in_drain.outcome.status.ok());
  EXPECT_FALSE(waiting.called.HasBeenNotified());
  exports_->Drained();
  ASSERT_TRUE(waiting.called.HasBeenNotified());
  EXPECT_EQ(waiting.outcome.status.code(), absl::StatusCode::kUnavailable);
  queue_->Close();
  queue::Batch rest = queue_->Get(10, absl::Now());
  rest.Done();
}

}  // namespace
}  // namespace shipper
