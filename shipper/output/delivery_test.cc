// Delivery's retry and dead-letter logic, driven by ScriptedOutput: a fake output that fails or
// rejects as each test scripts (real outputs' failures are tested in tests/outputs/).
#include "shipper/output/delivery.h"

#include <sys/resource.h>

#include <algorithm>
#include <csignal>
#include <deque>
#include <fstream>
#include <map>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"
#include "runtime/mutex.h"
#include "runtime/worker_pool.h"
#include "shipper/metrics/shipper_metrics.h"
#include "shipper/output/queued_events.h"

namespace shipper {
namespace {

namespace pb = elastic::agent::shipper::v1::messages;

// What one Write() call does: fail as a whole, or succeed rejecting some events for good and
// failing others for now (as i in the Events it was given); at once, or `later`, in the finish it
// leaves (Outcome::finish).
struct Step {
  absl::Status status;
  std::vector<size_t> reject;
  std::vector<size_t> fail = {};
  bool later = false;
  absl::Duration retry_after = absl::ZeroDuration();
};

class ScriptedOutput final : public Output {
 public:
  explicit ScriptedOutput(std::deque<Step> script) : script_(std::move(script)) {}

  absl::Status Write(const Events& events, Outcome* outcome) override {
    Step step;  // once the script is over: OK, nothing rejected
    {
      runtime::MutexLock lock(&mu_);
      ++calls_;
      if (!script_.empty()) {
        step = std::move(script_.front());
        script_.pop_front();
      }
      calls_log_.push_back(absl::StrCat("write ", events.index(0)));
    }
    std::vector<uint64_t> indexes;
    for (size_t i = 0; i < events.size(); ++i) indexes.push_back(events.index(i));
    if (!step.later) return Apply(step, indexes, outcome);
    outcome->finish = [this, step, indexes](Outcome* outcome) {
      {
        runtime::MutexLock lock(&mu_);
        calls_log_.push_back(absl::StrCat("finish ", indexes[0]));
      }
      return Apply(step, indexes, outcome);
    };
    return absl::OkStatus();
  }

  int calls() {
    runtime::MutexLock lock(&mu_);
    return calls_;
  }
  // Events of the writes it confirmed, the rejected ones not included.
  size_t written() {
    runtime::MutexLock lock(&mu_);
    size_t n = 0;
    for (const auto& [index, times] : written_) n += times;
    return n;
  }
  // "write <index>" and "finish <index>" per call, by the index of its first event.
  std::vector<std::string> calls_log() {
    runtime::MutexLock lock(&mu_);
    return calls_log_;
  }
  // How often the event with queue index `index` was written.
  int times_written(uint64_t index) {
    runtime::MutexLock lock(&mu_);
    return written_[index];
  }

 private:
  // Does what `step` says to the events with queue indexes `indexes`.
  absl::Status Apply(const Step& step, const std::vector<uint64_t>& indexes, Outcome* outcome) {
    for (size_t i : step.reject) outcome->rejected.push_back({i, absl::StrCat("bad event ", i)});
    for (size_t i : step.fail) outcome->Fail(i, "partition without a leader");
    outcome->retry_after = step.retry_after;
    if (!step.status.ok()) return step.status;
    runtime::MutexLock lock(&mu_);
    for (size_t i = 0; i < indexes.size(); ++i) {
      const bool unwritten = std::count(step.reject.begin(), step.reject.end(), i) +
                                 std::count(step.fail.begin(), step.fail.end(), i) >
                             0;
      if (!unwritten) ++written_[indexes[i]];
    }
    return absl::OkStatus();
  }

  runtime::Mutex mu_;
  std::deque<Step> script_ ABSL_GUARDED_BY(mu_);
  int calls_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::string> calls_log_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, int> written_ ABSL_GUARDED_BY(mu_);  // queue index -> times written
};

std::vector<pb::Event> TestEvents(int n) {
  std::vector<pb::Event> events(n);
  for (int i = 0; i < n; ++i) {
    (*events[i].mutable_fields()->mutable_data())["seq"].set_int64_value(i);
  }
  return events;
}

Delivery::Options FastOptions() {
  Delivery::Options options;
  options.batch_max_events = 10;
  options.backoff_init = absl::Milliseconds(1);
  options.backoff_max = absl::Milliseconds(4);
  options.poll = absl::Milliseconds(10);
  // A name of its own per test: the output's metrics are what the tests read.
  options.name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  return options;
}

const metrics::OutputMetrics& Metrics(const Delivery::Options& options) {
  return metrics::ShipperMetrics::Get().Output(options.name);
}

// Runs one worker on `delivery` until every event of `events` is persisted.
void DeliverAll(Delivery& delivery, QueuedEvents& events) {
  runtime::WorkerPool pool("deliver", 1,
                           [&](const runtime::WorkerPool::Worker&) { delivery.Run(); });
  const uint64_t last = events.queue().published_index();
  EXPECT_EQ(events.queue().WaitPersisted(last - 1, absl::Now() + absl::Seconds(10)), last);
}

TEST(DeliveryTest, RetriesTransientFailuresUntilTheOutputConfirms) {
  QueuedEvents events(TestEvents(10));
  auto output = std::make_unique<ScriptedOutput>(std::deque<Step>{
      {absl::UnavailableError("down"), {}}, {absl::UnavailableError("still down"), {}}});
  ScriptedOutput* script = output.get();
  const Delivery::Options options = FastOptions();
  Delivery delivery(&events.queue(), std::move(output), *DeadLetters::Open(""), options);
  DeliverAll(delivery, events);
  EXPECT_EQ(script->calls(), 3);
  EXPECT_EQ(Metrics(options).errors.value(), 2u);
  EXPECT_EQ(Metrics(options).retries.value(), 2u);
  EXPECT_EQ(script->written(), 10u);
  EXPECT_EQ(Metrics(options).dead_lettered.value(), 0u);
}

TEST(DeliveryTest, RejectedEventsGoToTheDeadLetterFileAndCountAsPersisted) {
  const std::string path = absl::StrCat(getenv("TEST_TMPDIR"), "/dead.ndjson");
  QueuedEvents events(TestEvents(10));
  auto output = std::make_unique<ScriptedOutput>(std::deque<Step>{{absl::OkStatus(), {2, 7}}});
  ScriptedOutput* script = output.get();
  absl::StatusOr<std::unique_ptr<DeadLetters>> dead_letters = DeadLetters::Open(path);
  ASSERT_TRUE(dead_letters.ok()) << dead_letters.status();
  const Delivery::Options options = FastOptions();
  Delivery delivery(&events.queue(), std::move(output), *std::move(dead_letters), options);
  DeliverAll(delivery, events);
  EXPECT_EQ(Metrics(options).dead_lettered.value(), 2u);
  EXPECT_EQ(script->written(), 8u);
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    rapidjson::Document doc;
    doc.Parse(lines[i].c_str());
    ASSERT_FALSE(doc.HasParseError()) << lines[i];
    const int position = i == 0 ? 2 : 7;
    EXPECT_EQ(std::string(doc["reason"].GetString()), absl::StrCat("bad event ", position));
    EXPECT_EQ(doc["event"]["seq"].GetInt64(), position);
    EXPECT_EQ(doc["event"]["@metadata"]["index"].GetUint64(), position + 1u);
  }
}

// A Record that fails part way (the disk full; here RLIMIT_FSIZE) leaves no fragment for the
// next Record's first line to be glued to.
TEST(DeliveryTest, ADeadLetterRecordThatFailsPartWayLeavesNoTornLine) {
  std::signal(SIGXFSZ, SIG_IGN);  // EFBIG instead of the signal
  const std::string path = absl::StrCat(getenv("TEST_TMPDIR"), "/torn.ndjson");
  absl::StatusOr<std::unique_ptr<DeadLetters>> dead_letters = DeadLetters::Open(path);
  ASSERT_TRUE(dead_letters.ok()) << dead_letters.status();
  QueuedEvents events(TestEvents(20));
  queue::Batch batch = events.Take(20);
  std::vector<Rejection> all;
  for (size_t i = 0; i < 20; ++i) all.push_back({i, "refused"});
  rlimit old;
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  rlimit small = old;
  small.rlim_cur = 500;  // less than the 20 lines
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  const absl::Status failed = (*dead_letters)->Record(Events(batch), all);
  ::setrlimit(RLIMIT_FSIZE, &old);
  EXPECT_FALSE(failed.ok());
  ASSERT_TRUE((*dead_letters)->Record(Events(batch), all).ok());
  std::ifstream in(path);
  size_t lines = 0;
  for (std::string line; std::getline(in, line); ++lines) {
    rapidjson::Document doc;
    doc.Parse(line.c_str());
    EXPECT_FALSE(doc.HasParseError()) << line;
  }
  EXPECT_EQ(lines, 20u);
  batch.Done();
}

TEST(DeliveryTest, RetriesOnlyTheEventsThatFailedForNow) {
  const std::string path = absl::StrCat(getenv("TEST_TMPDIR"), "/partial.ndjson");
  QueuedEvents events(TestEvents(10));
  // Events 1, 4 and 8 fail for now and 6 is rejected; of the three retried (as i 0, 1, 2),
  // the second fails again; then it is written.
  auto output = std::make_unique<ScriptedOutput>(
      std::deque<Step>{{absl::OkStatus(), {6}, {1, 4, 8}}, {absl::OkStatus(), {}, {1}}});
  ScriptedOutput* script = output.get();
  const Delivery::Options options = FastOptions();
  Delivery delivery(&events.queue(), std::move(output), *DeadLetters::Open(path), options);
  DeliverAll(delivery, events);
  EXPECT_EQ(script->calls(), 3);
  for (uint64_t index = 1; index <= 10; ++index) {
    EXPECT_EQ(script->times_written(index), index == 7 ? 0 : 1) << "event with index " << index;
  }
  EXPECT_EQ(Metrics(options).dead_lettered.value(), 1u);
  EXPECT_EQ(Metrics(options).retries.value(), 2u);
}

TEST(DeliveryTest, ARetryWaitsAtLeastAsLongAsTheDestinationAsked) {
  QueuedEvents events(TestEvents(10));
  Step throttled{absl::OkStatus(), {}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}};
  throttled.retry_after = absl::Milliseconds(300);
  auto output = std::make_unique<ScriptedOutput>(std::deque<Step>{throttled});
  ScriptedOutput* script = output.get();
  Delivery::Options options = FastOptions();  // backoff waits of 4 ms at most
  options.backoff_max = absl::Seconds(10);    // caps what a destination may ask
  Delivery delivery(&events.queue(), std::move(output), *DeadLetters::Open(""), options);
  const absl::Time start = absl::Now();
  DeliverAll(delivery, events);
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(300));
  EXPECT_EQ(script->calls(), 2);
  EXPECT_EQ(script->written(), 10u);
}

TEST(DeliveryTest, AWorkerWritesItsNextBatchBeforeItFinishesThePreviousOne) {
  QueuedEvents events(TestEvents(30));
  const Step later{absl::OkStatus(), {}, {}, true};
  auto output = std::make_unique<ScriptedOutput>(std::deque<Step>{later, later, later});
  ScriptedOutput* script = output.get();
  Delivery::Options options = FastOptions();
  // Run() writes ahead for up to `poll`: long enough that a slow (sanitized) build gets there.
  options.poll = absl::Seconds(1);
  Delivery delivery(&events.queue(), std::move(output), *DeadLetters::Open(""), options);
  DeliverAll(delivery, events);
  EXPECT_EQ(script->calls_log(), (std::vector<std::string>{"write 1", "write 11", "finish 1",
                                                           "write 21", "finish 11", "finish 21"}));
  EXPECT_EQ(script->written(), 30u);
}

TEST(DeliveryTest, AFinishThatFailsIsRetriedAsAWholeWrite) {
  QueuedEvents events(TestEvents(10));
  auto output = std::make_unique<ScriptedOutput>(std::deque<Step>{
      {absl::UnavailableError("sync failed"), {}, {}, true}, {absl::OkStatus(), {}, {3}, true}});
  ScriptedOutput* script = output.get();
  const Delivery::Options options = FastOptions();
  Delivery delivery(&events.queue(), std::move(output), *DeadLetters::Open(""), options);
  DeliverAll(delivery, events);
  // The whole batch again after the failed finish, then only the event that failed for now.
  EXPECT_EQ(script->calls_log(),
            (std::vector<std::string>{"write 1", "finish 1", "write 1", "finish 1", "write 4"}));
  for (uint64_t index = 1; index <= 10; ++index) {
    EXPECT_EQ(script->times_written(index), 1) << "event with index " << index;
  }
  EXPECT_EQ(Metrics(options).retries.value(), 2u);
}

TEST(DeliveryTest, GivingUpAbandonsAFailingBatchWithoutReportingIt) {
  QueuedEvents events(TestEvents(5));
  std::deque<Step> failures(1000, Step{absl::UnavailableError("down"), {}});
  auto output = std::make_unique<ScriptedOutput>(std::move(failures));
  ScriptedOutput* script = output.get();
  Delivery::Options options = FastOptions();
  options.backoff_init = options.backoff_max = absl::Milliseconds(50);
  Delivery delivery(&events.queue(), std::move(output), *DeadLetters::Open(""), options);
  runtime::WorkerPool pool("deliver", 1,
                           [&](const runtime::WorkerPool::Worker&) { delivery.Run(); });
  // Failing and retrying: written, refused, written again.
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (script->calls() < 2 && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(1));
  ASSERT_GE(script->calls(), 2);
  events.queue().Close();
  EXPECT_EQ(events.queue().Drain(absl::Now() + absl::Milliseconds(100)), 5u);
  delivery.GiveUp();
  delivery.GiveUp();  // idempotent
  pool.Stop();
  EXPECT_EQ(events.queue().persisted_index(), 0u);
  EXPECT_GE(Metrics(options).errors.value(), 2u);
}

TEST(DeliveryTest, DeadLetterFileThatCannotBeOpenedNamesTheKey) {
  absl::StatusOr<std::unique_ptr<DeadLetters>> dl = DeadLetters::Open("/proc/nope/dead.ndjson");
  ASSERT_FALSE(dl.ok());
  EXPECT_NE(dl.status().message().find("shipper.dead_letter.path"), std::string::npos);
}

}  // namespace
}  // namespace shipper
