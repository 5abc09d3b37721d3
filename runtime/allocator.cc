#include "runtime/allocator.h"

#include "absl/strings/str_cat.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace shipper::runtime {
namespace {

// Blocks this large and larger get a mapping of their own: request copies of thousands of events,
// freed whole once their events are acknowledged. Smaller ones come from the heaps, above all the
// buffers an output allocates and frees for every batch (librdkafka's record batches of up to
// batch.size, 1 MB at the defaults, and their compressed copies; Elasticsearch's bulk bodies),
// which a mapping each would cost page faults on every batch: at 128 KiB they cost the Kafka
// output 30 % of its throughput and Elasticsearch half (BENCHMARKS.md "Memory").
constexpr int kMmapThreshold = 2 << 20;
// Free memory at the top of a heap beyond this goes back to the kernel.
constexpr int kTrimThreshold = 4 << 20;
// Heaps for small blocks. Fewer than threads means some contention, which profiles of the
// flood did not show; each arena can strand up to a heap's worth of fragments.
constexpr int kArenas = 2;

}  // namespace

std::string ConfigureAllocator() {
#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__)
  const bool ok = mallopt(M_MMAP_THRESHOLD, kMmapThreshold) == 1 &&
                  mallopt(M_TRIM_THRESHOLD, kTrimThreshold) == 1 &&
                  mallopt(M_ARENA_MAX, kArenas) == 1;
  return absl::StrCat("malloc: mmap_threshold=", kMmapThreshold, " trim_threshold=", kTrimThreshold,
                      " arena_max=", kArenas, ok ? "" : " (mallopt refused some)");
#else
  return "malloc: not glibc's (or a sanitizer's): left as it is";
#endif
}

}  // namespace shipper::runtime
