// Shipper's memory budgets sized from the container's memory limit (runtime/memory_limit.h):
// shipper.queue.mem.bytes (what Shipper holds for requests it copied and events it queued) and
// shipper.server.max_receive_memory (what gRPC holds). Peak RSS stays below their sum, the disk
// queue's buffers, a memory queue ring larger than the default's and kFixedMemoryOverhead.
//
// Thread safety: stateless; call from any thread.
#ifndef SHIPPER_SHIPPER_CONFIG_MEMORY_SIZING_H_
#define SHIPPER_SHIPPER_CONFIG_MEMORY_SIZING_H_

#include <cstddef>
#include <functional>

#include "absl/strings/string_view.h"
#include "runtime/memory_limit.h"
#include "shipper/config/config.h"
#include "shipper/config/problems.h"

namespace shipper {

// The bytes by which the memory queue's ring (shipper.queue.mem.events) exceeds the default's,
// which kFixedMemoryOverhead holds; 0 with the disk queue. Counted beside the budgets.
size_t ExtraRingBytes(const Config& config);

// Records `limit` in config.memory_limit. Under a limit, the budgets the config left unset
// (`given` says which keys it set) become a quarter of it each, and max_message_size left unset
// at most max_receive_memory; budgets set that do not fit the limit with kFixedMemoryOverhead and
// ExtraRingBytes are problems naming the keys and the limit. Without a limit nothing changes.
void SizeMemory(const runtime::MemoryLimit& limit,
                const std::function<bool(absl::string_view key)>& given, Config* config,
                Problems* problems);

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_CONFIG_MEMORY_SIZING_H_
