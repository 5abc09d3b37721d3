// Many producers (blocking and not), several consumers with random delays and out-of-order Done,
// and a watchdog, in the spirit of the Beats pipeline stress tests. Checks that every event
// reaches a consumer exactly once and is acknowledged to its producer exactly once, in order,
// and only after it was done.
//
// SHIPPER_QUEUE_STRESS_EVENTS (events per producer, default 4000) makes it longer.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "queue/memory_queue.h"
#include "queue/test_util.h"

namespace shipper::queue {
namespace {

using testing::AllVariants;
using testing::CountingOwner;
using testing::Variant;
using testing::VariantName;
using testing::VariantOptions;

constexpr int kProducers = 6;  // even: blocking Publish, odd: TryPublish
constexpr int kConsumers = 3;
constexpr absl::Duration kStall = absl::Seconds(2);

uint64_t EventsPerProducer() {
  const char* env = std::getenv("SHIPPER_QUEUE_STRESS_EVENTS");
  return env != nullptr ? std::strtoull(env, nullptr, 10) : 4000;
}

uint64_t MakeTag(int producer, uint64_t seq) { return (uint64_t{1} + producer) << 40 | seq; }
int TagProducer(uint64_t tag) { return static_cast<int>(tag >> 40) - 1; }
uint64_t TagSeq(uint64_t tag) { return tag & ((uint64_t{1} << 40) - 1); }

// What one producer published and what happened to each of its events.
struct ProducerLog {
  explicit ProducerLog(uint64_t n) : delivered(n), done(n) {}
  CountingOwner owner;
  std::vector<std::atomic<uint32_t>> delivered;  // by seq: times a consumer got it
  std::vector<std::atomic<uint8_t>> done;        // by seq: its batch was marked done
  std::atomic<uint64_t> acked{0};                // written by the callback only
  std::atomic<uint64_t> ack_errors{0};
};

class QueueStressTest : public ::testing::TestWithParam<Variant> {};

TEST_P(QueueStressTest, EveryEventDeliveredAndAckedExactlyOnceInOrder) {
  const uint64_t per_producer = EventsPerProducer();
  MemoryOptions options = VariantOptions(GetParam());
  options.max_events = 256;  // small, so producers keep hitting both limits
  options.max_bytes = 256 * 40;
  auto created = MemoryQueue::Create(options);
  ASSERT_TRUE(created.ok());
  Queue& queue = **created;

  std::vector<std::unique_ptr<ProducerLog>> logs;
  std::vector<std::unique_ptr<Producer>> producers;
  for (int p = 0; p < kProducers; ++p) {
    logs.push_back(std::make_unique<ProducerLog>(per_producer));
    ProducerLog* log = logs.back().get();
    // Each count must cover exactly the next events of this producer, all already done.
    producers.push_back(queue.NewProducer([log](uint64_t count, uint64_t) {
      const uint64_t from = log->acked.load(std::memory_order_relaxed);
      if (count == 0 || from + count > log->done.size()) {
        log->ack_errors.fetch_add(1);
        return;
      }
      for (uint64_t seq = from; seq < from + count; ++seq) {
        if (!log->done[seq].load(std::memory_order_relaxed)) log->ack_errors.fetch_add(1);
      }
      log->acked.store(from + count, std::memory_order_relaxed);
    }));
  }

  std::atomic<uint64_t> progress{0};
  std::atomic<bool> producers_finished{false};
  std::atomic<uint64_t> bad_batches{0};

  std::vector<std::thread> threads;
  for (int p = 0; p < kProducers; ++p) {
    threads.emplace_back([&, p] {
      std::mt19937_64 rng(p);
      const bool blocking = p % 2 == 0;
      uint64_t seq = 0;
      while (seq < per_producer) {
        const size_t n = std::min<uint64_t>(1 + rng() % 64, per_producer - seq);
        std::vector<Event> events;
        for (size_t i = 0; i < n; ++i) {
          events.emplace_back(reinterpret_cast<const void*>(MakeTag(p, seq + i)),
                              static_cast<uint32_t>(1 + rng() % 60), &logs[p]->owner);
        }
        absl::Span<Event> rest = absl::MakeSpan(events);
        while (!rest.empty()) {
          // Producer 0 never gives up: a lost wake-up would leave it asleep.
          const absl::Time deadline =
              p == 0 ? absl::InfiniteFuture() : absl::Now() + absl::Milliseconds(rng() % 20);
          PublishResult r =
              blocking ? producers[p]->Publish(rest, deadline) : producers[p]->TryPublish(rest);
          rest.remove_prefix(r.accepted);
          if (r.accepted > 0) progress.fetch_add(1, std::memory_order_relaxed);
          if (!rest.empty()) {
            const absl::StatusCode want = blocking ? absl::StatusCode::kDeadlineExceeded
                                                   : absl::StatusCode::kResourceExhausted;
            ASSERT_EQ(r.status.code(), want) << r.status;
            if (!blocking) std::this_thread::yield();
          }
        }
        seq += n;
      }
    });
  }

  for (int c = 0; c < kConsumers; ++c) {
    threads.emplace_back([&, c] {
      std::mt19937_64 rng(100 + c);
      std::vector<Batch> held;  // finished out of order
      auto finish_one = [&] {
        const size_t k = rng() % held.size();
        Batch& b = held[k];
        for (size_t i = 0; i < b.size(); ++i) {
          const uint64_t tag = reinterpret_cast<uint64_t>(b.event(i).data());
          logs[TagProducer(tag)]->done[TagSeq(tag)].store(1, std::memory_order_relaxed);
        }
        b.Done();
        held.erase(held.begin() + k);
        progress.fetch_add(1, std::memory_order_relaxed);
      };
      // Consumer 0 waits without a deadline and holds nothing back (it could hold the room
      // producers wait for); Close() ends its wait. The others poll and finish out of order.
      const bool patient = c == 0;
      for (;;) {
        Batch batch = queue.Get(1 + rng() % 100, patient ? absl::InfiniteFuture()
                                                         : absl::Now() + absl::Milliseconds(20));
        if (batch.empty()) {
          while (!held.empty()) finish_one();
          if (patient || (producers_finished.load() && queue.stats().events == 0)) return;
          continue;
        }
        for (size_t i = 0; i < batch.size(); ++i) {
          const uint64_t tag = reinterpret_cast<uint64_t>(batch.event(i).data());
          const int p = TagProducer(tag);
          if (p < 0 || p >= kProducers || TagSeq(tag) >= per_producer) {
            bad_batches.fetch_add(1);
            continue;
          }
          logs[p]->delivered[TagSeq(tag)].fetch_add(1, std::memory_order_relaxed);
        }
        held.push_back(std::move(batch));
        if (rng() % 8 == 0) absl::SleepFor(absl::Microseconds(rng() % 200));
        while (held.size() > (patient ? 0 : rng() % 4)) finish_one();
      }
    });
  }

  // Watchdog: no progress for kStall means a lost wake-up or a deadlock.
  std::atomic<bool> all_done{false};
  std::thread watchdog([&] {
    uint64_t last = progress.load();
    absl::Time last_change = absl::Now();
    while (!all_done.load()) {
      absl::SleepFor(absl::Milliseconds(50));
      const uint64_t now = progress.load();
      if (now != last) {
        last = now;
        last_change = absl::Now();
      } else if (absl::Now() - last_change > kStall) {
        std::string dump = absl::StrCat("queue stalled for ", absl::FormatDuration(kStall), ": ",
                                        queue.DebugString());
        for (int p = 0; p < kProducers; ++p) {
          absl::StrAppend(&dump, "\n  producer ", p, " acked=", logs[p]->acked.load(),
                          " released=", logs[p]->owner.released());
        }
        std::fprintf(stderr, "%s\n", dump.c_str());
        std::abort();
      }
    }
  });

  for (int p = 0; p < kProducers; ++p) threads[p].join();
  producers_finished.store(true);
  for (size_t t = kProducers + 1; t < threads.size(); ++t) threads[t].join();
  queue.Close();
  threads[kProducers].join();
  EXPECT_EQ(queue.Drain(absl::Now() + absl::Seconds(10)), 0);
  all_done.store(true);
  watchdog.join();

  EXPECT_EQ(bad_batches.load(), 0);
  EXPECT_EQ(queue.published_index(), per_producer * kProducers);
  EXPECT_EQ(queue.persisted_index(), per_producer * kProducers);
  for (int p = 0; p < kProducers; ++p) {
    ProducerLog& log = *logs[p];
    uint64_t wrong = 0;
    for (uint64_t seq = 0; seq < per_producer; ++seq) wrong += log.delivered[seq].load() != 1;
    EXPECT_EQ(wrong, 0) << "producer " << p << ": events not delivered exactly once";
    EXPECT_EQ(log.ack_errors.load(), 0) << "producer " << p;
    EXPECT_EQ(log.acked.load(), per_producer) << "producer " << p;
    EXPECT_EQ(log.owner.released(), per_producer) << "producer " << p;
  }
}

INSTANTIATE_TEST_SUITE_P(AllLoopsAndStrategies, QueueStressTest, ::testing::ValuesIn(AllVariants()),
                         [](const auto& info) { return VariantName(info.param); });

}  // namespace
}  // namespace shipper::queue
