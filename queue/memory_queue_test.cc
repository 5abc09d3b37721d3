#include "queue/memory_queue.h"

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "queue/test_util.h"

namespace shipper::queue {
namespace {

using testing::AllVariants;
using testing::CountingOwner;
using testing::MakeEvents;
using testing::Tag;
using testing::Variant;
using testing::VariantName;
using testing::VariantOptions;

absl::Time In(absl::Duration d) { return absl::Now() + d; }

// Records what each producer's ACK callback was told.
// (std::mutex, not absl::Mutex: see queue/mutex.h.)
struct AckLog {
  std::mutex mu;
  std::vector<uint64_t> counts;
  std::vector<uint64_t> indexes;  // the persisted index each callback was given
  uint64_t total() {
    std::lock_guard<std::mutex> lock(mu);
    uint64_t sum = 0;
    for (uint64_t c : counts) sum += c;
    return sum;
  }
  AckCallback Callback() {
    return [this](uint64_t count, uint64_t persisted_index) {
      std::lock_guard<std::mutex> lock(mu);
      counts.push_back(count);
      indexes.push_back(persisted_index);
    };
  }
};

class QueueTest : public ::testing::TestWithParam<Variant> {
 protected:
  std::unique_ptr<Queue> NewQueue(MemoryOptions options) {
    auto queue = MemoryQueue::Create(options);
    EXPECT_TRUE(queue.ok()) << queue.status();
    return std::move(*queue);
  }
  MemoryOptions BaseOptions() const { return VariantOptions(GetParam()); }
  bool buffered() const { return GetParam().buffered; }

  CountingOwner owner_;
};

TEST_P(QueueTest, IndexesAscendFromOneAcrossProducers) {
  auto queue = NewQueue(BaseOptions());
  auto a = queue->NewProducer(nullptr);
  auto b = queue->NewProducer(nullptr);
  EXPECT_EQ(queue->published_index(), 0);

  auto events = MakeEvents(1, 3, &owner_);
  PublishResult r = a->TryPublish(absl::MakeSpan(events));
  EXPECT_TRUE(r.status.ok());
  EXPECT_EQ(r.accepted, 3);
  EXPECT_EQ(r.last_index, 3);

  auto more = MakeEvents(4, 2, &owner_);
  r = b->Publish(absl::MakeSpan(more), absl::InfiniteFuture());
  EXPECT_TRUE(r.status.ok());
  EXPECT_EQ(r.last_index, 5);
  EXPECT_EQ(queue->published_index(), 5);

  // An empty publish accepts nothing and reports the highest index.
  r = a->TryPublish({});
  EXPECT_TRUE(r.status.ok());
  EXPECT_EQ(r.accepted, 0);
  EXPECT_EQ(r.last_index, 5);

  Batch batch = queue->Get(10, In(absl::Seconds(5)));
  ASSERT_EQ(batch.size(), 5);
  EXPECT_EQ(batch.first_index(), 1);
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(Tag(batch.event(i)), i + 1);
  batch.Done();
  EXPECT_TRUE(batch.empty());
  EXPECT_EQ(queue->persisted_index(), 5);
  EXPECT_EQ(owner_.released(), 5);
}

TEST_P(QueueTest, PublishMovesEventsIn) {
  auto queue = NewQueue(BaseOptions());
  auto p = queue->NewProducer(nullptr);
  auto events = MakeEvents(1, 2, &owner_);
  p->TryPublish(absl::MakeSpan(events));
  events.clear();  // the moved-from handles release nothing
  EXPECT_EQ(owner_.released(), 0);
  Batch batch = queue->Get(2);
  ASSERT_EQ(batch.size(), 2);
  batch.Done();
  EXPECT_EQ(owner_.released(), 2);
}

TEST_P(QueueTest, GetTakesAtMostMaxEventsAndConsumersGetDisjointRanges) {
  auto queue = NewQueue(BaseOptions());
  auto p = queue->NewProducer(nullptr);
  auto events = MakeEvents(1, 20, &owner_);
  p->TryPublish(absl::MakeSpan(events));
  Batch first = queue->Get(8);
  Batch second = queue->Get(8);
  Batch third = queue->Get(8);
  EXPECT_EQ(first.first_index(), 1);
  EXPECT_EQ(first.size(), 8);
  EXPECT_EQ(second.first_index(), 9);
  EXPECT_EQ(second.size(), 8);
  EXPECT_EQ(third.first_index(), 17);
  EXPECT_EQ(third.size(), 4);
  first.Done();
  second.Done();
  third.Done();
  EXPECT_EQ(queue->Get(0).size(), 0);
}

TEST_P(QueueTest, TryPublishAcceptsThePrefixThatFits) {
  MemoryOptions options = BaseOptions();
  options.max_events = 8;
  auto queue = NewQueue(options);
  auto p = queue->NewProducer(nullptr);
  auto events = MakeEvents(1, 10, &owner_);
  PublishResult r = p->TryPublish(absl::MakeSpan(events));
  EXPECT_EQ(r.accepted, 8);
  EXPECT_EQ(r.last_index, 8);
  EXPECT_EQ(r.status.code(), absl::StatusCode::kResourceExhausted);
  // The rest stays with the caller, untouched.
  EXPECT_EQ(Tag(events[8]), 9);
  EXPECT_EQ(Tag(events[9]), 10);

  r = p->TryPublish(absl::MakeSpan(events).subspan(8));
  EXPECT_EQ(r.accepted, 0);
  EXPECT_EQ(r.last_index, 8);
  EXPECT_EQ(r.status.code(), absl::StatusCode::kResourceExhausted);

  Batch batch = queue->Get(3);
  batch.Done();
  r = p->TryPublish(absl::MakeSpan(events).subspan(8));
  EXPECT_TRUE(r.status.ok());
  EXPECT_EQ(r.accepted, 2);
  EXPECT_EQ(r.last_index, 10);
  EXPECT_EQ(queue->stats().events, 7);
}

TEST_P(QueueTest, ByteLimitWhicheverComesFirst) {
  MemoryOptions options = BaseOptions();
  options.max_events = 100;
  options.max_bytes = 100;
  auto queue = NewQueue(options);
  auto p = queue->NewProducer(nullptr);
  auto events = MakeEvents(1, 5, &owner_, /*bytes=*/40);
  PublishResult r = p->TryPublish(absl::MakeSpan(events));
  EXPECT_EQ(r.accepted, 2);
  EXPECT_EQ(r.status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(queue->stats().bytes, 80);
  Batch batch = queue->Get(10);
  EXPECT_EQ(batch.size(), 2);
  batch.Done();
  EXPECT_EQ(queue->stats().bytes, 0);
  EXPECT_EQ(queue->stats().events, 0);
}

TEST_P(QueueTest, EventLargerThanMaxBytesGoesAloneIntoAnEmptyQueue) {
  MemoryOptions options = BaseOptions();
  options.max_bytes = 100;
  auto queue = NewQueue(options);
  auto p = queue->NewProducer(nullptr);
  auto small = MakeEvents(1, 1, &owner_, 10);
  auto big = MakeEvents(2, 2, &owner_, 500);
  ASSERT_EQ(p->TryPublish(absl::MakeSpan(small)).accepted, 1);
  EXPECT_EQ(p->TryPublish(absl::MakeSpan(big)).accepted, 0);  // not empty
  Batch batch = queue->Get(10);
  batch.Done();
  PublishResult r = p->TryPublish(absl::MakeSpan(big));
  EXPECT_EQ(r.accepted, 1);  // alone, and nothing after it
  EXPECT_EQ(queue->stats().bytes, 500);
  batch = queue->Get(10);
  EXPECT_EQ(batch.size(), 1);
  batch.Done();
}

TEST_P(QueueTest, TryPublishAllTakesEveryEventOrNone) {
  MemoryOptions options = BaseOptions();
  options.max_events = 8;
  options.max_bytes = 100;
  auto queue = NewQueue(options);
  auto p = queue->NewProducer(nullptr);
  auto first = MakeEvents(1, 4, &owner_, /*bytes=*/20);
  PublishResult r = p->TryPublishAll(absl::MakeSpan(first));
  EXPECT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.accepted, 4);
  EXPECT_EQ(r.last_index, 4);

  // Room for 4 more events but only 20 more bytes: TryPublish would take a prefix, this none.
  auto second = MakeEvents(5, 2, &owner_, /*bytes=*/20);
  r = p->TryPublishAll(absl::MakeSpan(second));
  EXPECT_EQ(r.status.code(), absl::StatusCode::kResourceExhausted) << r.status;
  EXPECT_EQ(r.accepted, 0);
  EXPECT_EQ(r.last_index, 4);
  EXPECT_EQ(queue->stats().events, 4);
  EXPECT_EQ(queue->stats().bytes, 80);
  // Left as they were, for the caller to try again.
  EXPECT_EQ(Tag(second[0]), 5);
  EXPECT_EQ(Tag(second[1]), 6);
  EXPECT_EQ(owner_.released(), 0);

  // By events too: 5 do not fit beside 4 in 8 slots.
  auto five = MakeEvents(7, 5, &owner_, /*bytes=*/1);
  EXPECT_EQ(p->TryPublishAll(absl::MakeSpan(five)).status.code(),
            absl::StatusCode::kResourceExhausted);

  Batch batch = queue->Get(10);
  ASSERT_EQ(batch.size(), 4);
  batch.Done();
  r = p->TryPublishAll(absl::MakeSpan(second));
  EXPECT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.accepted, 2);
  EXPECT_EQ(r.last_index, 6);
  batch = queue->Get(10);
  ASSERT_EQ(batch.size(), 2);
  EXPECT_EQ(Tag(batch.event(0)), 5);
  batch.Done();
}

TEST_P(QueueTest, TryPublishAllSaysWhenEventsCanNeverFitTogether) {
  MemoryOptions options = BaseOptions();
  options.max_events = 4;
  options.max_bytes = 100;
  auto queue = NewQueue(options);
  auto p = queue->NewProducer(nullptr);
  auto many = MakeEvents(1, 5, &owner_);
  EXPECT_EQ(p->TryPublishAll(absl::MakeSpan(many)).status.code(), absl::StatusCode::kOutOfRange);
  auto heavy = MakeEvents(10, 2, &owner_, /*bytes=*/60);
  EXPECT_EQ(p->TryPublishAll(absl::MakeSpan(heavy)).status.code(), absl::StatusCode::kOutOfRange);
  // One event larger than the byte limit still goes alone into the empty queue, as with
  // TryPublish.
  auto big = MakeEvents(20, 1, &owner_, /*bytes=*/500);
  PublishResult r = p->TryPublishAll(absl::MakeSpan(big));
  EXPECT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.accepted, 1);
  EXPECT_EQ(queue->stats().events, 1);
  Batch batch = queue->Get(10);
  batch.Done();
}

TEST_P(QueueTest, PublishWaitsForRoom) {
  MemoryOptions options = BaseOptions();
  options.max_events = 4;
  auto queue = NewQueue(options);
  auto p = queue->NewProducer(nullptr);
  auto events = MakeEvents(1, 6, &owner_);
  PublishResult r;
  std::thread producer([&] { r = p->Publish(absl::MakeSpan(events), absl::InfiniteFuture()); });
  // Let the producer fill the queue and block, then make room twice.
  uint64_t taken = 0;
  while (taken < 6) {
    Batch batch = queue->Get(1, In(absl::Seconds(10)));
    ASSERT_FALSE(batch.empty());
    EXPECT_EQ(Tag(batch.event(0)), taken + 1);
    taken += batch.size();
    batch.Done();
  }
  producer.join();
  EXPECT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.accepted, 6);
  EXPECT_EQ(r.last_index, 6);
}

TEST_P(QueueTest, PublishGivesUpAtItsDeadline) {
  MemoryOptions options = BaseOptions();
  options.max_events = 2;
  auto queue = NewQueue(options);
  auto p = queue->NewProducer(nullptr);
  auto events = MakeEvents(1, 3, &owner_);
  const absl::Time start = absl::Now();
  PublishResult r = p->Publish(absl::MakeSpan(events), start + absl::Milliseconds(30));
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(30));
  EXPECT_EQ(r.accepted, 2);
  EXPECT_EQ(r.last_index, 2);
  EXPECT_EQ(r.status.code(), absl::StatusCode::kDeadlineExceeded);
}

TEST_P(QueueTest, CancelWakesBlockedPublishAndRefusesLaterOnes) {
  MemoryOptions options = BaseOptions();
  options.max_events = 2;
  auto queue = NewQueue(options);
  AckLog acks;
  auto p = queue->NewProducer(acks.Callback());
  auto events = MakeEvents(1, 3, &owner_);
  PublishResult r;
  std::thread producer([&] { r = p->Publish(absl::MakeSpan(events), absl::InfiniteFuture()); });
  while (queue->published_index() < 2) absl::SleepFor(absl::Milliseconds(1));
  absl::SleepFor(absl::Milliseconds(10));  // most likely asleep by now; either way it must stop
  p->Cancel();
  producer.join();
  EXPECT_EQ(r.accepted, 2);
  EXPECT_EQ(r.status.code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(p->TryPublish(absl::MakeSpan(events).subspan(2)).status.code(),
            absl::StatusCode::kCancelled);

  // What was accepted is still delivered and acknowledged.
  Batch batch = queue->Get(10);
  EXPECT_EQ(batch.size(), 2);
  batch.Done();
  EXPECT_EQ(acks.total(), 2);
}

TEST_P(QueueTest, GetGivesUpAtItsDeadline) {
  auto queue = NewQueue(BaseOptions());
  const absl::Time start = absl::Now();
  Batch batch = queue->Get(10, start + absl::Milliseconds(20));
  EXPECT_TRUE(batch.empty());
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(20));
}

TEST_P(QueueTest, GetWakesWhenEventsArrive) {
  auto queue = NewQueue(BaseOptions());
  auto p = queue->NewProducer(nullptr);
  std::thread producer([&] {
    absl::SleepFor(absl::Milliseconds(20));
    auto events = MakeEvents(1, 8, &owner_);
    p->Publish(absl::MakeSpan(events), absl::InfiniteFuture());
  });
  Batch batch = queue->Get(8);  // infinite deadline
  producer.join();
  EXPECT_EQ(batch.first_index(), 1);
  uint64_t got = batch.size();
  batch.Done();
  while (got < 8) {
    batch = queue->Get(8);
    got += batch.size();
    batch.Done();
  }
  EXPECT_EQ(got, 8);
}

TEST_P(QueueTest, FlushPolicy) {
  // A flush timeout long enough that "at once" and "after the timeout" stay apart on a loaded
  // machine under a sanitizer.
  MemoryOptions options = BaseOptions();
  if (buffered()) options.flush_timeout = absl::Milliseconds(250);
  auto queue = NewQueue(options);
  auto p = queue->NewProducer(nullptr);
  auto one = MakeEvents(1, 1, &owner_);
  absl::Time start = absl::Now();  // before the publish, which starts the flush timer
  p->TryPublish(absl::MakeSpan(one));
  Batch batch = queue->Get(100, In(absl::Seconds(10)));
  absl::Duration waited = absl::Now() - start;
  EXPECT_EQ(batch.size(), 1);
  batch.Done();
  if (buffered()) {
    // Fewer than flush_min_events: returned once flush_timeout passed (10 ms for the clocks).
    EXPECT_GE(waited, absl::Milliseconds(240));
  } else {
    EXPECT_LT(waited, absl::Milliseconds(200));
  }

  // flush_min_events (8) gathered: returned at once in both loops.
  auto eight = MakeEvents(2, 8, &owner_);
  p->TryPublish(absl::MakeSpan(eight));
  start = absl::Now();
  batch = queue->Get(100, In(absl::Seconds(10)));
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(200));
  EXPECT_EQ(batch.size(), 8);
  batch.Done();

  // Buffered: the deadline passing before the flush returns an empty batch.
  p->TryPublish(absl::MakeSpan(one).subspan(0, 0));
  auto late = MakeEvents(10, 1, &owner_);
  p->TryPublish(absl::MakeSpan(late));
  batch = queue->Get(100, In(absl::Milliseconds(5)));
  EXPECT_EQ(batch.empty(), buffered());
  batch.Done();
  if (buffered()) {
    batch = queue->Get(100);
    EXPECT_EQ(batch.size(), 1);
    batch.Done();
  }
}

TEST_P(QueueTest, BufferedGetFlushesEarlyForBlockedProducers) {
  MemoryOptions options = BaseOptions();
  options.max_events = 8;
  options.max_bytes = 40;  // full by bytes with 4 events, below flush_min_events
  options.flush_timeout = absl::Seconds(30);
  auto queue = NewQueue(options);
  auto p = queue->NewProducer(nullptr);
  auto events = MakeEvents(1, 6, &owner_, 10);
  std::thread producer([&] { p->Publish(absl::MakeSpan(events), absl::InfiniteFuture()); });
  const absl::Time start = absl::Now();
  Batch batch = queue->Get(100, In(absl::Seconds(10)));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_EQ(batch.size(), 4);
  batch.Done();
  producer.join();
  queue->Close();  // flushes the last two at once
  batch = queue->Get(100);
  EXPECT_EQ(batch.size(), 2);
  batch.Done();
}

TEST_P(QueueTest, PersistedIndexFollowsOutOfOrderDone) {
  auto queue = NewQueue(BaseOptions());
  auto p = queue->NewProducer(nullptr);
  auto events = MakeEvents(1, 9, &owner_);
  p->TryPublish(absl::MakeSpan(events));
  Batch a = queue->Get(3);
  Batch b = queue->Get(3);
  Batch c = queue->Get(3);
  ASSERT_EQ(c.first_index(), 7);
  c.Done();
  EXPECT_EQ(queue->persisted_index(), 0);
  EXPECT_EQ(owner_.released(), 0);
  a.Done();
  EXPECT_EQ(queue->persisted_index(), 3);
  EXPECT_EQ(owner_.released(), 3);
  b.Done();
  EXPECT_EQ(queue->persisted_index(), 9);
  EXPECT_EQ(owner_.released(), 9);
}

// Each callback reports the next `count` events of its producer: after every Done, a producer's
// ACK total is exactly the number of its events with index <= persisted_index(), and the index
// the callback was given covers them.
TEST_P(QueueTest, AcksArriveInPublishOrderExactlyOnce) {
  auto queue = NewQueue(BaseOptions());
  AckLog logs[3];
  std::unique_ptr<Producer> producers[3];
  for (int i = 0; i < 3; ++i) producers[i] = queue->NewProducer(logs[i].Callback());
  std::vector<int> publisher_of = {0};  // by index; index 0 unused
  uint64_t tag = 1;
  for (int round = 0; round < 10; ++round) {
    for (int i = 0; i < 3; ++i) {
      const size_t n = 1 + (round * 7 + i * 3) % 5;
      auto events = MakeEvents(tag, n, &owner_);
      tag += n;
      ASSERT_EQ(producers[i]->TryPublish(absl::MakeSpan(events)).accepted, n);
      publisher_of.insert(publisher_of.end(), n, i);
    }
  }
  std::vector<Batch> batches;
  for (Batch b = queue->Get(4); !b.empty(); b = queue->Get(4, In(absl::Milliseconds(50)))) {
    batches.push_back(std::move(b));
  }
  ASSERT_EQ(batches.back().first_index() + batches.back().size() - 1, publisher_of.size() - 1);
  // Finish in a scrambled order.
  for (size_t k = 0; k < batches.size(); ++k) {
    batches[(k * 5 + 3) % batches.size()].Done();
    const uint64_t persisted = queue->persisted_index();
    for (int i = 0; i < 3; ++i) {
      uint64_t expected = 0;
      for (uint64_t idx = 1; idx <= persisted; ++idx) expected += publisher_of[idx] == i;
      EXPECT_EQ(logs[i].total(), expected) << "producer " << i << " after " << k;
    }
  }
  EXPECT_EQ(queue->persisted_index(), publisher_of.size() - 1);
  EXPECT_EQ(owner_.released(), publisher_of.size() - 1);
  for (int i = 0; i < 3; ++i) {
    std::vector<uint64_t> mine;  // producer i's indexes, in publish order
    for (uint64_t idx = 1; idx < publisher_of.size(); ++idx) {
      if (publisher_of[idx] == i) mine.push_back(idx);
    }
    uint64_t acked = 0, last_index = 0;
    for (size_t j = 0; j < logs[i].counts.size(); ++j) {
      acked += logs[i].counts[j];
      EXPECT_LE(mine[acked - 1], logs[i].indexes[j]) << "producer " << i << ", callback " << j;
      EXPECT_GE(logs[i].indexes[j], last_index);
      last_index = logs[i].indexes[j];
    }
    EXPECT_EQ(acked, mine.size());
  }
}

TEST_P(QueueTest, DestroyedProducerGetsNoCallbacksButItsEventsAreFreed) {
  auto queue = NewQueue(BaseOptions());
  AckLog acks;
  auto p = queue->NewProducer(acks.Callback());
  auto events = MakeEvents(1, 8, &owner_);
  p->TryPublish(absl::MakeSpan(events));
  p.reset();
  Batch batch = queue->Get(8);
  ASSERT_EQ(batch.size(), 8);
  batch.Done();
  EXPECT_EQ(acks.total(), 0);
  EXPECT_EQ(owner_.released(), 8);
}

TEST_P(QueueTest, QueueDestructionFreesWhatIsLeft) {
  {
    auto queue = NewQueue(BaseOptions());
    auto p = queue->NewProducer(nullptr);
    auto events = MakeEvents(1, 8, &owner_);
    p->TryPublish(absl::MakeSpan(events));
    Batch batch = queue->Get(3);
    batch.Done();
  }
  EXPECT_EQ(owner_.released(), 8);
}

TEST_P(QueueTest, CloseRefusesEventsButLetsConsumersDrain) {
  // A flush timeout no Get below could wait out unnoticed.
  MemoryOptions options = BaseOptions();
  if (buffered()) options.flush_timeout = absl::Seconds(30);
  auto queue = NewQueue(options);
  auto p = queue->NewProducer(nullptr);
  auto events = MakeEvents(1, 5, &owner_);
  p->TryPublish(absl::MakeSpan(events).subspan(0, 4));
  queue->Close();
  PublishResult r = p->Publish(absl::MakeSpan(events).subspan(4), absl::InfiniteFuture());
  EXPECT_EQ(r.status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(r.accepted, 0);
  EXPECT_EQ(r.last_index, 4);
  EXPECT_EQ(p->TryPublish(absl::MakeSpan(events).subspan(4)).status.code(),
            absl::StatusCode::kUnavailable);

  // Closed: a buffered Get returns at once with what is there.
  const absl::Time start = absl::Now();
  Batch batch = queue->Get(3);
  EXPECT_EQ(batch.size(), 3);
  Batch rest = queue->Get(10);
  EXPECT_EQ(rest.size(), 1);
  EXPECT_TRUE(queue->Get(10).empty());  // closed and nothing left: no wait
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));

  EXPECT_EQ(queue->Drain(In(absl::Milliseconds(10))), 4);
  batch.Done();
  EXPECT_EQ(queue->Drain(In(absl::Milliseconds(10))), 1);
  rest.Done();
  EXPECT_EQ(queue->Drain(In(absl::Seconds(10))), 0);
}

TEST_P(QueueTest, AbandonedBatchesStayUndoneAndAreFreedWithTheQueue) {
  AckLog acks;
  {
    auto queue = NewQueue(BaseOptions());
    auto p = queue->NewProducer(acks.Callback());
    auto events = MakeEvents(1, 8, &owner_);
    p->TryPublish(absl::MakeSpan(events));
    queue->Close();
    Batch first = queue->Get(3);
    Batch rest = queue->Get(10);
    ASSERT_EQ(rest.size(), 5);
    first.Done();
    rest.Abandon();  // the output is gone: never written, never done
    EXPECT_TRUE(rest.empty());
    EXPECT_EQ(queue->Drain(In(absl::Milliseconds(10))), 5);
    EXPECT_EQ(queue->persisted_index(), 3);
    EXPECT_EQ(acks.total(), 3);
    EXPECT_EQ(owner_.released(), 3);
    p.reset();
  }
  EXPECT_EQ(acks.total(), 3);  // no ACK for what was abandoned
  EXPECT_EQ(owner_.released(), 8);
}

TEST_P(QueueTest, CloseWakesBlockedCallers) {
  MemoryOptions options = BaseOptions();
  options.max_events = 1;
  options.flush_min_events = 1;
  auto queue = NewQueue(options);
  auto p = queue->NewProducer(nullptr);
  auto events = MakeEvents(1, 2, &owner_);
  ASSERT_EQ(p->TryPublish(absl::MakeSpan(events)).accepted, 1);
  PublishResult r;
  std::thread producer(
      [&] { r = p->Publish(absl::MakeSpan(events).subspan(1), absl::InfiniteFuture()); });
  uint64_t persisted = 99;
  std::thread waiter([&] { persisted = queue->WaitPersisted(0, absl::InfiniteFuture()); });
  Batch batch = queue->Get(1);
  absl::SleepFor(absl::Milliseconds(20));
  queue->Close();
  producer.join();
  EXPECT_EQ(r.status.code(), absl::StatusCode::kUnavailable);
  batch.Done();
  waiter.join();
  EXPECT_EQ(persisted, 1);

  std::thread consumer([&] { EXPECT_TRUE(queue->Get(1).empty()); });
  consumer.join();
}

TEST_P(QueueTest, WaitPersistedWakesOnDone) {
  auto queue = NewQueue(BaseOptions());
  auto p = queue->NewProducer(nullptr);
  auto events = MakeEvents(1, 8, &owner_);
  p->TryPublish(absl::MakeSpan(events));
  EXPECT_EQ(queue->WaitPersisted(0, In(absl::Milliseconds(5))), 0);
  uint64_t persisted = 0;
  std::thread waiter([&] { persisted = queue->WaitPersisted(0, In(absl::Seconds(10))); });
  Batch batch = queue->Get(8);
  absl::SleepFor(absl::Milliseconds(5));
  batch.Done();
  waiter.join();
  EXPECT_EQ(persisted, 8);
}

TEST_P(QueueTest, BatchMoves) {
  auto queue = NewQueue(BaseOptions());
  auto p = queue->NewProducer(nullptr);
  auto events = MakeEvents(1, 8, &owner_);
  p->TryPublish(absl::MakeSpan(events));
  Batch a = queue->Get(8);
  Batch b(std::move(a));
  EXPECT_TRUE(a.empty());
  Batch c;
  c = std::move(b);
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(c.size(), 8);
  EXPECT_EQ(Tag(c.event(7)), 8);
  a.Done();  // empty: nothing happens
  c.Done();
  EXPECT_EQ(queue->persisted_index(), 8);
}

INSTANTIATE_TEST_SUITE_P(AllLoopsAndStrategies, QueueTest, ::testing::ValuesIn(AllVariants()),
                         [](const auto& info) { return VariantName(info.param); });

TEST(ParseWaitStrategyTest, KnowsTheConfigNames) {
  EXPECT_EQ(*ParseWaitStrategy("blocking"), WaitStrategy::kBlocking);
  EXPECT_EQ(*ParseWaitStrategy("phased"), WaitStrategy::kPhased);
  EXPECT_EQ(*ParseWaitStrategy("sleeping"), WaitStrategy::kSleeping);
  auto bad = ParseWaitStrategy("spinning");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("wait_strategy"), absl::string_view::npos);
  EXPECT_FALSE(ParseWaitStrategy("").ok());
  EXPECT_FALSE(ParseWaitStrategy("Blocking").ok());
}

TEST(CreateTest, RejectsBadOptionsNamingThem) {
  MemoryOptions options;
  options.max_events = 0;
  auto q = MemoryQueue::Create(options);
  EXPECT_EQ(q.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(q.status().message().find("mem.events"), absl::string_view::npos);

  options = MemoryOptions();
  options.flush_timeout = -absl::Milliseconds(1);
  EXPECT_FALSE(MemoryQueue::Create(options).ok());

  options = MemoryOptions();
  options.wait_strategy = WaitStrategy::kSleeping;
  options.sleep_min = absl::Milliseconds(5);
  options.sleep_max = absl::Milliseconds(1);
  EXPECT_FALSE(MemoryQueue::Create(options).ok());

  EXPECT_TRUE(MemoryQueue::Create(MemoryOptions()).ok());
}

}  // namespace
}  // namespace shipper::queue
