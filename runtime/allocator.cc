#include "runtime/allocator.h"

#include "absl/strings/str_cat.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace shipper::runtime {
namespace {

// Blocks this large and larger get a mapping of their own: request copies of a few hundred
// events and up, freed whole once their events are acknowledged.
constexpr int kMmapThreshold = 128 << 10;
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
