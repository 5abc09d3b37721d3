#include <atomic>
#include <memory>
#include <thread>

#include "gtest/gtest.h"
#include "queue/memory_queue.h"
#include "runtime/memory_budget.h"
#include "shipper/input/otlp/otlp_settings.h"

namespace shipper {
namespace {

// threads() is read from any thread (the metrics' scrape) while the pipeline's thread starts and
// stops the input: under TSan, a read of the transports it replaces is a race.
TEST(OtlpInputTest, ThreadsMayBeReadWhileTheInputStartsAndStops) {
  queue::MemoryOptions options;
  std::unique_ptr<queue::Queue> queue = std::move(*queue::MemoryQueue::Create(options));
  runtime::MemoryBudget budget(1 << 20);
  OtlpSettings settings;
  settings.grpc_enabled = false;  // gRPC needs the shared server's quota; HTTP is what changes
  settings.http_address = "127.0.0.1:0";
  InputContext context;
  context.queue = queue.get();
  context.budget = &budget;
  absl::StatusOr<std::unique_ptr<Input>> input = settings.Build(context);
  ASSERT_TRUE(input.ok()) << input.status();
  std::atomic<bool> stop{false};
  std::atomic<int> reads{0};
  std::thread scrape([&] {
    while (!stop.load()) {
      EXPECT_GE((*input)->threads(), 0);
      reads.fetch_add(1);
    }
  });
  ASSERT_TRUE((*input)->Start().ok());
  const int started = reads.load();
  while (reads.load() < started + 100) std::this_thread::yield();
  EXPECT_GT((*input)->threads(), 0);
  (*input)->StopAccepting();
  (*input)->Drained();
  (*input)->Stop();
  const int stopped = reads.load();
  while (reads.load() < stopped + 100) std::this_thread::yield();
  stop.store(true);
  scrape.join();
  EXPECT_EQ((*input)->threads(), 0);
}

}  // namespace
}  // namespace shipper
