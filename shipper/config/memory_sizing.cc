#include "shipper/config/memory_sizing.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "queue/disk_options.h"
#include "queue/memory_queue.h"

namespace shipper {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

}  // namespace

size_t ExtraRingBytes(const Config& config) {
  if (config.disk_queue) return 0;
  const size_t ring = queue::MemoryQueueRingBytes(config.queue.max_events);
  const size_t held = queue::MemoryQueueRingBytes(queue::MemoryOptions().max_events);
  return ring > held ? ring - held : 0;
}

void SizeMemory(const runtime::MemoryLimit& limit,
                const std::function<bool(absl::string_view key)>& given, Config* config,
                Problems* problems) {
  config->memory_limit = limit;
  if (!limit.limited()) return;
  ServerLimits& server = config->server.limits;
  const size_t bytes = static_cast<size_t>(limit.bytes);
  const std::string where = absl::StrCat("the container's memory limit (", bytes, " bytes, ",
                                         limit.source, " ", limit.cgroup_dir, ")");
  const size_t ring = ExtraRingBytes(*config);
  if (bytes < kFixedMemoryOverhead + ring + 8 * kMiB) {
    return problems->Add(
        absl::StrCat("config: ", where, " leaves no room for Shipper's fixed overhead (",
                     kFixedMemoryOverhead, " bytes)",
                     ring > 0 ? absl::StrCat(", the ring of shipper.queue.mem.events (", ring,
                                             " bytes beyond the default's)")
                              : "",
                     " and its memory budgets: raise the limit"));
  }
  // A quarter each of what a ring larger than the default's leaves: half for what clients send,
  // the fixed overhead in the rest and a margin (a 256Mi sidecar: 64MiB + 64MiB + 64MiB, 64MiB to
  // spare).
  const size_t quarter = (bytes - ring) / 4 / kMiB * kMiB;
  if (!given("shipper.queue.mem.bytes")) config->queue.max_bytes = quarter;
  if (!given("shipper.server.max_receive_memory")) server.max_receive_memory = quarter;
  if (!given("shipper.server.max_message_size")) {
    server.max_message_size = std::min(server.max_message_size, server.max_receive_memory);
  }
  if (config->queue.max_bytes == 0) {
    return problems->Add(absl::StrCat("config: shipper.queue.mem.bytes is 0 (no budget) under ",
                                      where, ": set a budget, or leave it unset to size it from ",
                                      "the limit"));
  }
  size_t total = config->queue.max_bytes + server.max_receive_memory + kFixedMemoryOverhead;
  std::string keys = "shipper.queue.mem.bytes + shipper.server.max_receive_memory";
  if (config->disk_queue) {
    total += 4 * queue::DiskBufferSize(config->disk);  // see queue::DiskOptions::buffer_size
    keys += " + 4 x shipper.queue.disk.buffer_size";
  }
  if (ring > 0) {
    total += ring;
    keys += " + the ring of shipper.queue.mem.events (32 bytes an event)";
  }
  if (total > bytes) {
    problems->Add(absl::StrCat("config: ", keys, " (", total - kFixedMemoryOverhead,
                               " bytes) and Shipper's fixed overhead (", kFixedMemoryOverhead,
                               " bytes) do not fit ", where,
                               ": lower them, or leave them unset to size them from the limit"));
  }
}

}  // namespace shipper
