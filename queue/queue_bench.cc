// Throughput of the whole path (publish -> Get -> Done -> producer ACK) against
// moodycamel::BlockingConcurrentQueue moving the same pointers (bulk dequeue, no ACKs), and idle
// CPU and wake-up latency of each wait strategy. Prints one JSON object per line.
//
//   queue_bench [--quick] [--repeat=3] [--filter=<substring of the name>]
#include <pthread.h>
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "concurrentqueue/blockingconcurrentqueue.h"
#include "queue/memory_queue.h"

ABSL_FLAG(bool, quick, false, "short run: fewer events, 1 s idle measurements");
ABSL_FLAG(std::string, filter, "", "only run benchmarks whose name contains this");
ABSL_FLAG(std::string, wait_strategy, "",
          "wait strategy of the queue in the throughput runs; empty: the default");
ABSL_FLAG(bool, baseline, true, "also run the moodycamel baseline (off: for profiling ours)");
ABSL_FLAG(bool, baseline_tokens, true,
          "baseline producers and consumer use moodycamel tokens (its fastest mode)");
ABSL_FLAG(int, repeat, 3,
          "throughput runs per benchmark (queue and baseline alternate); the "
          "best of each is printed, since other processes share the cores");

namespace shipper::queue {
namespace {

constexpr size_t kBatch = 500;    // events per publish in "batch" mode
constexpr size_t kGetMax = 4096;  // events per Get / bulk dequeue

int64_t CpuNanos() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

int64_t ThreadCpuNanos(std::thread& thread) {
  clockid_t clock;
  pthread_getcpuclockid(thread.native_handle(), &clock);
  timespec ts;
  clock_gettime(clock, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

int64_t MonoNanos() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

struct Run {
  double events_per_sec;
  double cpu_ns_per_event;
};

// Starts `producers` threads that each call publish(thread, count) once, and one consumer;
// returns when consume() does.
template <typename Publish, typename Consume>
Run Measure(int producers, uint64_t total, Publish publish, Consume consume) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int p = 0; p < producers; ++p) {
    threads.emplace_back([&, p] {
      ready.fetch_add(1);
      while (!go.load()) std::this_thread::yield();
      publish(p, total / producers);
    });
  }
  while (ready.load() < producers) std::this_thread::yield();
  const int64_t cpu0 = CpuNanos();
  const int64_t t0 = MonoNanos();
  go.store(true);
  consume(total / producers * producers);
  const int64_t t1 = MonoNanos();
  const int64_t cpu1 = CpuNanos();
  for (auto& t : threads) t.join();
  const double events = static_cast<double>(total / producers * producers);
  return {events * 1e9 / static_cast<double>(t1 - t0), static_cast<double>(cpu1 - cpu0) / events};
}

// The queue's full path. Events carry 64 bytes each for the byte limit and no owner, so both
// sides move bare pointers.
Run QueueRun(bool buffered, int producers, bool batch, uint64_t total) {
  MemoryOptions options;
  if (!absl::GetFlag(FLAGS_wait_strategy).empty()) {
    options.wait_strategy = ParseWaitStrategy(absl::GetFlag(FLAGS_wait_strategy)).value();
  }
  if (buffered) {
    options.flush_min_events = 1024;
    options.flush_timeout = absl::Milliseconds(5);
  }
  auto queue = std::move(MemoryQueue::Create(options)).value();
  struct alignas(64) Acked {
    std::atomic<uint64_t> n{0};
  };
  std::vector<Acked> acked(producers);
  std::vector<std::unique_ptr<Producer>> handles;
  for (int p = 0; p < producers; ++p) {
    Acked* a = &acked[p];
    handles.push_back(queue->NewProducer([a](uint64_t count, uint64_t) {
      a->n.store(a->n.load(std::memory_order_relaxed) + count, std::memory_order_relaxed);
    }));
  }
  auto publish = [&](int p, uint64_t count) {
    const size_t per_call = batch ? kBatch : 1;
    std::vector<Event> events(per_call);
    uintptr_t tag = 1;
    for (uint64_t sent = 0; sent < count;) {
      const size_t n = std::min<uint64_t>(per_call, count - sent);
      for (size_t i = 0; i < n; ++i) events[i] = Event(reinterpret_cast<void*>(tag++), 64, nullptr);
      handles[p]->Publish(absl::MakeSpan(events.data(), n), absl::InfiniteFuture());
      sent += n;
    }
  };
  uintptr_t sink = 0;
  auto consume = [&](uint64_t total_events) {
    uint64_t got = 0;
    while (got < total_events) {
      Batch b = queue->Get(kGetMax);
      for (size_t i = 0; i < b.size(); ++i) sink += reinterpret_cast<uintptr_t>(b.event(i).data());
      got += b.size();
      b.Done();
    }
  };
  Run run = Measure(producers, total, publish, consume);
  uint64_t acks = 0;
  for (auto& a : acked) acks += a.n.load();
  if (acks != total / producers * producers || sink == 0) {
    std::fprintf(stderr, "queue bench: %" PRIu64 " acks for %" PRIu64 " events\n", acks, total);
    std::abort();
  }
  return run;
}

Run BaselineRun(int producers, bool batch, uint64_t total) {
  moodycamel::BlockingConcurrentQueue<const void*> queue(65536);
  std::vector<std::unique_ptr<moodycamel::ProducerToken>> tokens;
  for (int p = 0; p < producers; ++p) {
    tokens.push_back(std::make_unique<moodycamel::ProducerToken>(queue));
  }
  const bool use_tokens = absl::GetFlag(FLAGS_baseline_tokens);
  auto publish = [&](int p, uint64_t count) {
    const size_t per_call = batch ? kBatch : 1;
    std::vector<const void*> items(per_call);
    uintptr_t tag = 1;
    for (uint64_t sent = 0; sent < count;) {
      const size_t n = std::min<uint64_t>(per_call, count - sent);
      for (size_t i = 0; i < n; ++i) items[i] = reinterpret_cast<const void*>(tag++);
      if (use_tokens) {
        n == 1 ? queue.enqueue(*tokens[p], items[0])
               : queue.enqueue_bulk(*tokens[p], items.data(), n);
      } else {
        n == 1 ? queue.enqueue(items[0]) : queue.enqueue_bulk(items.data(), n);
      }
      sent += n;
    }
  };
  uintptr_t sink = 0;
  auto consume = [&](uint64_t total_events) {
    moodycamel::ConsumerToken token(queue);
    std::vector<const void*> items(kGetMax);
    uint64_t got = 0;
    while (got < total_events) {
      const size_t n = use_tokens ? queue.wait_dequeue_bulk(token, items.data(), kGetMax)
                                  : queue.wait_dequeue_bulk(items.data(), kGetMax);
      for (size_t i = 0; i < n; ++i) sink += reinterpret_cast<uintptr_t>(items[i]);
      got += n;
    }
  };
  Run run = Measure(producers, total, publish, consume);
  if (sink == 0) std::abort();
  return run;
}

struct WaitResult {
  double idle_cpu_percent;
  double trickle_cpu_percent;
  double wake_p50_us;
  double wake_p99_us;
};

// Idle: one consumer blocked in Get with no deadline, process CPU over `idle`.
// Trickle: the consumer thread's CPU while a producer publishes one event every 100 us (10k
// events/s), the load of a quiet sidecar: what waiting costs between events.
// Wake: a producer publishes one event (carrying its publish time) after a random pause of
// 20 us..1 ms; the consumer measures how long the event took to come out of Get.
WaitResult MeasureWait(WaitStrategy strategy, absl::Duration idle, int wakes) {
  MemoryOptions options;
  options.wait_strategy = strategy;
  auto queue = std::move(MemoryQueue::Create(options)).value();
  auto producer = queue->NewProducer(nullptr);
  std::vector<double> latencies_us;
  latencies_us.reserve(wakes);
  std::thread consumer([&] {
    for (;;) {
      Batch b = queue->Get(kGetMax);
      if (b.empty()) return;  // closed
      const int64_t now = MonoNanos();
      for (size_t i = 0; i < b.size(); ++i) {
        latencies_us.push_back(
            static_cast<double>(now - reinterpret_cast<int64_t>(b.event(i).data())) / 1e3);
      }
      b.Done();
    }
  });
  absl::SleepFor(absl::Milliseconds(200));  // let it settle into its deepest wait
  const int64_t cpu0 = CpuNanos();
  const int64_t t0 = MonoNanos();
  absl::SleepFor(idle);
  const double idle_cpu =
      100.0 * static_cast<double>(CpuNanos() - cpu0) / static_cast<double>(MonoNanos() - t0);

  const int64_t trickle_cpu0 = ThreadCpuNanos(consumer);
  const int64_t trickle_t0 = MonoNanos();
  const int64_t trickle_end = trickle_t0 + absl::ToInt64Nanoseconds(idle) / 5;
  for (int64_t next = trickle_t0; next < trickle_end; next += 100'000) {
    while (MonoNanos() < next) absl::SleepFor(absl::Nanoseconds(next - MonoNanos()));
    Event e(reinterpret_cast<const void*>(MonoNanos()), 64, nullptr);
    producer->Publish(absl::MakeSpan(&e, 1), absl::InfiniteFuture());
  }
  const double trickle_cpu = 100.0 * static_cast<double>(ThreadCpuNanos(consumer) - trickle_cpu0) /
                             static_cast<double>(MonoNanos() - trickle_t0);
  // The consumer records latencies before Done: once all is persisted, they are ours to reset.
  queue->WaitPersisted(queue->published_index() - 1, absl::InfiniteFuture());
  latencies_us.clear();

  std::mt19937_64 rng(1);
  for (int i = 0; i < wakes; ++i) {
    absl::SleepFor(absl::Microseconds(20 + rng() % 980));
    Event e(reinterpret_cast<const void*>(MonoNanos()), 64, nullptr);
    producer->Publish(absl::MakeSpan(&e, 1), absl::InfiniteFuture());
  }
  queue->WaitPersisted(queue->published_index() - 1, absl::InfiniteFuture());
  queue->Close();
  consumer.join();
  std::sort(latencies_us.begin(), latencies_us.end());
  auto pct = [&](double q) {
    return latencies_us.empty() ? 0.0
                                : latencies_us[static_cast<size_t>(q * (latencies_us.size() - 1))];
  };
  return {idle_cpu, trickle_cpu, pct(0.50), pct(0.99)};
}

Run Best(const Run& a, const Run& b) { return a.events_per_sec >= b.events_per_sec ? a : b; }

bool Wanted(const std::string& name) {
  return absl::StrContains(name, absl::GetFlag(FLAGS_filter));
}

void Main() {
  const bool quick = absl::GetFlag(FLAGS_quick);
  for (bool buffered : {false, true}) {
    for (int producers : {1, 4}) {
      for (bool batch : {false, true}) {
        const std::string name = absl::StrCat("queue/", buffered ? "buffered" : "direct", "/",
                                              producers, "p/", batch ? "batch" : "single");
        if (!Wanted(name)) continue;
        const uint64_t total = (batch ? 40'000'000 : 10'000'000) / (quick ? 10 : 1);
        Run ours{0, 0};
        Run base{0, 0};
        for (int i = 0; i < std::max(1, absl::GetFlag(FLAGS_repeat)); ++i) {
          ours = Best(ours, QueueRun(buffered, producers, batch, total));
          if (absl::GetFlag(FLAGS_baseline))
            base = Best(base, BaselineRun(producers, batch, total));
        }
        std::printf(
            "{\"name\": \"%s\", \"events_per_sec\": %.0f, \"baseline_events_per_sec\": %.0f, "
            "\"ratio\": %.2f, \"cpu_ns_per_event\": %.1f, \"baseline_cpu_ns_per_event\": %.1f}\n",
            name.c_str(), ours.events_per_sec, base.events_per_sec,
            base.events_per_sec > 0 ? ours.events_per_sec / base.events_per_sec : 0.0,
            ours.cpu_ns_per_event, base.cpu_ns_per_event);
        std::fflush(stdout);
      }
    }
  }
  const WaitStrategy kDefault = MemoryOptions().wait_strategy;
  std::string default_line;
  for (WaitStrategy s : {WaitStrategy::kBlocking, WaitStrategy::kPhased, WaitStrategy::kSleeping}) {
    const std::string name = absl::StrCat("wait/", WaitStrategyName(s));
    if (!Wanted(name) && !(s == kDefault && Wanted("wait/default"))) continue;
    const WaitResult r =
        MeasureWait(s, quick ? absl::Seconds(1) : absl::Seconds(5), quick ? 300 : 2000);
    const std::string fields = absl::StrFormat(
        "\"idle_cpu_percent\": %.3f, \"wake_p50_us\": %.1f, \"wake_p99_us\": %.1f, "
        "\"trickle_cpu_percent\": %.2f",
        r.idle_cpu_percent, r.wake_p50_us, r.wake_p99_us, r.trickle_cpu_percent);
    if (Wanted(name)) std::printf("{\"name\": \"%s\", %s}\n", name.c_str(), fields.c_str());
    if (s == kDefault) default_line = absl::StrCat("{\"name\": \"wait/default\", ", fields, "}");
    std::fflush(stdout);
  }
  if (!default_line.empty() && Wanted("wait/default")) std::printf("%s\n", default_line.c_str());
}

}  // namespace
}  // namespace shipper::queue

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  shipper::queue::Main();
  return 0;
}
