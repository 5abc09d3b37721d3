// The disk queue (see disk_queue.h): producers fill a write buffer, a writer thread writes it to
// the segments and a sync thread fdatasyncs what was written, consumers read synced frames back
// from the segments, or from the written buffer while it is still in memory.
//
// Two threads, so that the next buffer is written while the last one is in fdatasync: the device's
// sync time is no longer added to the writing and checksumming of every buffer, and producers
// find room sooner. The writer takes whatever producers published (as one round) as soon as it has
// written the previous round, and hands each written round to the syncer; the syncer takes every
// round handed to it so far and syncs them together (group commit), then acknowledges them in
// order, deletes delivered segments and records the state.
//
// Indexes, as in the memory queue, only grow:
//
//   done_ <= read_ <= synced_ <= published_
//
//   (.., done_]            done: recorded in the state file later, deleted with their segment
//   (done_, read_]         handed to consumers (some batches may be done out of order)
//   (read_, synced_]       durable, waiting for a consumer
//   (synced_, published_]  in the write buffer, being written, or written and being synced
//
// An event's sequence number, in its frame, is its index plus seq_base_, which recovery sets so
// that sequence numbers keep ascending across restarts while indexes start at 1. A frame lost to
// damage leaves a gap in the sequence numbers; the reader marks the indexes of the gap done itself,
// so consumers only see consecutive indexes of real events.
//
// Mutexes: publish_mu_ (producers, the writer's taking of their buffer and the waits on what the
// syncer changes), get_mu_ (consumers: the read cursor, done ranges), sync_mu_ (the rounds handed
// from the writer to the syncer) and segments_mu_ (the list of segment files, shared by the syncer
// and the reader). Lock order: get_mu_, then publish_mu_, sync_mu_ or segments_mu_; those three are
// never held together. written_mu_ (the written buffers kept for consumers) is taken alone or under
// get_mu_, and nothing is taken under it. The two threads write, sync and delete with no mutex
// held.
#include "queue/disk_queue.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/internal/raw_logging.h"
#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/numeric/bits.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "queue/common.h"
#include "queue/disk_format.h"
#include "queue/disk_io.h"
#include "queue/disk_recovery.h"
#include "queue/mutex.h"
#include "queue/producer_state.h"
#include "queue/wait.h"

namespace shipper::queue {
namespace {

using internal::Frame;
using internal::kFrameHeaderBytes;
using internal::Mark;
using internal::ProducerState;
using internal::Segment;

// How often the delivered sequence number is recorded while events are done: what a crash may
// deliver again, against one more fdatasync per interval.
constexpr absl::Duration kStateInterval = absl::Milliseconds(200);
// A delivered segment is cut about this much at a time before it is unlinked.
constexpr uint64_t kDeleteStep = 4 << 20;
// Backoff of the writer after an I/O error.
constexpr absl::Duration kRetryMin = absl::Milliseconds(10);
constexpr absl::Duration kRetryMax = absl::Seconds(1);
// Reads: recovery scans segments this much at a time; consumers read between kMinRead and kMaxRead
// per pread (more only for a larger frame). kMaxRead stays below runtime/allocator's 128 KiB mmap
// threshold, so that malloc serves a batch's buffers from memory freed by earlier batches: larger
// ones were mapped fresh each time, and faulting and zeroing their pages cost more than the reads.
constexpr size_t kScanChunk = 4 << 20;
constexpr size_t kMinRead = 64 << 10;
constexpr size_t kMaxRead = 112 << 10;
constexpr char kStateFile[] = "state";
constexpr char kSegmentSuffix[] = ".seg";

// Segments are named by the sequence number their writer started them with, zero-padded so that
// names sort as numbers.
std::string SegmentName(uint64_t id) { return absl::StrFormat("%020d%s", id, kSegmentSuffix); }

std::optional<uint64_t> SegmentId(absl::string_view name) {
  uint64_t id;
  if (name.size() != 20 + strlen(kSegmentSuffix) || !absl::ConsumeSuffix(&name, kSegmentSuffix) ||
      !absl::SimpleAtoi(name, &id)) {
    return std::nullopt;
  }
  return id;
}

// Reads `size` bytes at `offset`, all of them: fewer than the file's size promised is an error.
absl::Status ReadExactly(DiskFile& file, uint64_t offset, size_t size, char* out) {
  absl::StatusOr<size_t> got = ReadFully(file, offset, size, out);
  if (!got.ok()) return got.status();
  if (*got < size) {
    return absl::UnavailableError(
        absl::StrFormat("read %s: %d of %d bytes at offset %d: the file ended before its size",
                        file.name(), *got, size, offset));
  }
  return absl::OkStatus();
}

void LogDamage(const std::string& file, uint64_t offset, uint64_t end) {
  ABSL_RAW_LOG(ERROR, "disk queue: %s: damaged frame at offset %llu, %llu bytes stepped over",
               file.c_str(), static_cast<unsigned long long>(offset),
               static_cast<unsigned long long>(end - offset));
}

// Whether the frame at `offset` of `file`, whose header is `header`, is valid: its payload read
// `piece` bytes at a time, for one longer than the reader trusts (its length may be damaged). The
// one rule for such frames, at recovery and when consumers read.
absl::Status CheckLongFrame(DiskFile& file, uint64_t offset, absl::string_view header, size_t piece,
                            bool* holds) {
  internal::FrameCheck check(header);
  const uint64_t end = offset + kFrameHeaderBytes + internal::DecodeFrameHeader(header).len;
  std::string bytes;
  for (uint64_t at = offset + kFrameHeaderBytes; at < end; at += bytes.size()) {
    bytes.resize(std::min<uint64_t>(piece, end - at));
    if (absl::Status read = ReadExactly(file, at, bytes.size(), bytes.data()); !read.ok()) {
      return read;
    }
    check.Add(bytes);
  }
  *holds = check.Holds();
  return absl::OkStatus();
}

absl::Status WriteState(DiskFile& file, uint64_t delivered_seq) {
  char state[internal::kStateBytes];
  internal::EncodeState(state, delivered_seq);
  absl::Status status = file.Write(0, absl::string_view(state, sizeof(state)));
  if (status.ok()) status = file.Sync();
  return status;
}

// A producer's run of consecutive events in the write buffer: acknowledged together.
struct Run {
  ProducerState* producer;
  uint64_t count;
};

// Encoded frames bound for one segment.
struct Chunk {
  uint64_t segment_id;
  uint64_t first_index;
  uint64_t last_index;
  std::string frames;
  // Set by the writer when it first writes the chunk; retries (and rewrites after a failed sync)
  // write it to the same place.
  bool placed = false;
  uint64_t offset = 0;
  // The memory its buffer touched: the most bytes it held, over its uses as a spare too, in
  // whole pages.
  uint64_t touched = 0;
  // Dropped from the written chunks while batches still read from it: counted in pinned_bytes_
  // until it is freed. Guarded by written_mu_.
  bool pinned = false;
};

// Memory a buffer that held `bytes` touched.
uint64_t Touched(uint64_t bytes) { return (bytes + 4095) & ~uint64_t{4095}; }

// The disk queue's ring slot: its Event first, as Batch::event() reads it.
struct Slot {
  Event event;
  void* unused;
};
static_assert(sizeof(Slot) == 32 && offsetof(Slot, event) == 0, "Batch reads slots like this");

// What a consumer's batch points to: the bytes read for it and its slots. It owns itself: one
// reference per event and one for the batch, dropped when the batch is done.
class ReadBatch final : public EventOwner {
 public:
  explicit ReadBatch(size_t max_events)
      : mask_(absl::bit_ceil(max_events) - 1), slots_(new Slot[mask_ + 1]) {}

  char* NewBuffer(size_t size) {
    buffers_.emplace_back(new char[size]);
    return buffers_.back().get();
  }
  // Frees the last buffer: nothing in it was kept.
  void DropBuffer() { buffers_.pop_back(); }
  // The frames of `chunk` from `offset` in its segment on, kept as long as the batch.
  absl::string_view Keep(std::shared_ptr<const Chunk> chunk, uint64_t offset) {
    absl::string_view frames = absl::string_view(chunk->frames).substr(offset - chunk->offset);
    kept_.push_back(std::move(chunk));
    return frames;
  }
  // REQUIRES: the batch is not handed out yet.
  void Add(uint64_t index, absl::string_view bytes) {
    refs_.fetch_add(1, std::memory_order_relaxed);
    slots_[index & mask_].event = Event(bytes.data(), static_cast<uint32_t>(bytes.size()), this);
  }
  const Slot* slots() const { return slots_.get(); }
  uint64_t mask() const { return mask_; }
  // The batch's events are those added, [first, first + size); the reader had read `position`
  // frame bytes (DiskQueueImpl::read_position_) when it began reading them.
  void SetRange(uint64_t first, size_t size, uint64_t position) {
    first_ = first;
    size_ = size;
    position_ = position;
  }
  uint64_t position() const { return position_; }
  // Destroys the batch's events and drops its own reference.
  void Finish() {
    for (size_t i = 0; i < size_; ++i) Event done = std::move(slots_[(first_ + i) & mask_].event);
    Release();
  }
  void Release() override {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

 private:
  ~ReadBatch() = default;

  const uint64_t mask_;
  const std::unique_ptr<Slot[]> slots_;
  std::vector<std::unique_ptr<char[]>> buffers_;
  std::vector<std::shared_ptr<const Chunk>> kept_;
  uint64_t first_ = 0;
  size_t size_ = 0;
  uint64_t position_ = 0;
  std::atomic<uint32_t> refs_{1};
};

class DiskQueueImpl final : public DiskQueue {
 public:
  DiskQueueImpl(const DiskOptions& options, std::unique_ptr<DiskFile> dir,
                std::unique_ptr<DiskFile> state, internal::Recovery recovered);
  ~DiskQueueImpl() override;

  std::unique_ptr<Producer> NewProducer(AckCallback on_ack) override;
  Batch Get(size_t max_events, absl::Time deadline) override;
  uint64_t persisted_index() const override { return synced_.load(std::memory_order_acquire); }
  uint64_t published_index() const override { return published_.load(std::memory_order_acquire); }
  uint64_t WaitPersisted(uint64_t index, absl::Time deadline) override;
  void Close() override;
  uint64_t Drain(absl::Time deadline) override;
  Stats stats() const override;
  DiskStats disk_stats() const override;
  std::string DebugString() const override;

  // For ProducerHandle.
  PublishResult Publish(ProducerState* producer, absl::Span<Event> events, absl::Time deadline,
                        bool all);
  uint64_t Cancel(ProducerState* producer);

 protected:
  void Done(uint64_t first_index, size_t size) override;

 private:
  // The events taken from the write buffer at once, kept until they are written and synced.
  struct Round {
    std::vector<Chunk> chunks;
    std::vector<Run> runs;
    uint64_t last_index = 0;
    uint64_t bytes = 0;  // of the chunks' frames
    // Set as the writer writes it: the files it wrote to, and whether it created one (then the
    // directory is synced too).
    std::vector<std::shared_ptr<DiskFile>> files;
    bool created = false;
    // sync_failures_ when the writer last began writing it: if a sync failed since, its bytes may
    // have been dropped from the page cache (a failed fdatasync reports that once), and the
    // syncer writes it again before it counts as synced.
    uint64_t sync_failures = 0;
    // Whether its bytes were given back to the producers' room (by the syncer).
    bool room_freed = false;
    bool empty() const { return chunks.empty(); }
  };

  std::string FilePath(const std::string& name) const { return options_.path + "/" + name; }

  // Producer side.
  // Takes the longest prefix of `events` that fits (with `all`, all of them or none); returns
  // how many.
  size_t Accept(ProducerState* producer, absl::Span<Event> events, bool all,
                internal::Wakeups* wake) ABSL_EXCLUSIVE_LOCKS_REQUIRED(publish_mu_);
  // Whether `events` are more than the queue can ever hold at once (TryPublishAll).
  bool NeverFits(absl::Span<const Event> events) const;
  bool ReadyToFlush(uint64_t unread, size_t max_events, bool closed) const;
  absl::Time FlushTime() const {
    return flush_.FlushTime(first_unread_ns_.load(std::memory_order_relaxed));
  }

  // Consumer side. Frame bytes read since the oldest batch not yet done began, 0 when all that
  // was read is done: at DiskReadAhead, consumers wait for that batch.
  uint64_t ReadAhead() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(get_mu_);
  // Reads the frames of up to `max_events` events from read_ + 1 into a batch,
  // marking the indexes of lost frames done on the way. Returns null when it read none; then
  // `*error` says why if a segment could not be opened or read.
  ReadBatch* ReadEvents(size_t max_events, uint64_t synced, uint64_t* first_index, size_t* size,
                        absl::Status* error, internal::Wakeups* wake)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(get_mu_);
  // How long to wait before reading again after `error`: logged when it is new, then retried at
  // a growing interval. An ok `error` ends the episode.
  absl::Duration ReadRetry(const absl::Status& error) ABSL_EXCLUSIVE_LOCKS_REQUIRED(get_mu_);
  // The first segment with an id >= `min_id`.
  std::optional<Segment> FindSegment(uint64_t min_id) const;
  // The written chunk holding `offset` in segment `id`, if it is still kept; forgets those before.
  std::shared_ptr<const Chunk> WrittenAt(uint64_t id, uint64_t offset);
  void KeepWritten(Round* round);
  // Forgets the oldest written chunk into `dropped`, to be freed (or left to the batches reading
  // it, then pinned) once written_mu_ is released.
  void DropOldestWritten(std::vector<std::shared_ptr<Chunk>>* dropped)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(written_mu_);
  // A kept chunk's deleter: its buffer goes to spare_. Takes publish_mu_.
  void Recycle(Chunk* chunk);
  void MarkDone(uint64_t first_index, uint64_t last_index, internal::Wakeups* wake)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(get_mu_);
  void ReportDamage(const std::string& file, uint64_t offset, uint64_t end);

  // Writer thread.
  void WriterLoop();
  void TakePending(Round* round) ABSL_EXCLUSIVE_LOCKS_REQUIRED(publish_mu_);
  // Places, seals and writes the round's chunks (again, if it was written before).
  absl::Status WriteRound(Round* round);
  // The writer's file of segment `id`, opened (and created) if need be.
  absl::StatusOr<std::shared_ptr<DiskFile>> SegmentFile(uint64_t id, bool* created);
  // What the writer gives up at shutdown: `round` and what producers left in pending_.
  void DropUnwritten(Round* round);

  // Sync thread.
  void SyncLoop();
  // Gives the rounds' bytes back to the producers' room, once per round.
  void FreeRoom(std::vector<Round>* rounds);
  // Writes again each round written before a sync failed (Round::sync_failures), syncs every file
  // they wrote to and the directory if they created one.
  absl::Status SyncRounds(std::vector<Round>* rounds);
  void FinishRound(Round* round);
  void DropRounds(std::vector<Round>* rounds);

  // Recorder thread: deletes delivered segments and writes the state file, apart from the syncer
  // so that a delete's steps and the syncs take turns on the device (disk_queue.h).
  void RecordLoop();
  void RecordDelivered(bool stopping);
  // Deletes a delivered segment: cut at its cuts_, last first, then unlinked.
  void DeleteSegment(uint64_t id);
  // Whether the recorder has something to do about done events: a segment to delete, or a state
  // to record at `*when`.
  bool DeliveredWork(absl::Time now, absl::Time* when) const;

  // Each thread's I/O error, shown in DiskStats until that thread's next success.
  enum class Stage { kWrite, kSync };
  void SetError(Stage stage, const absl::Status& status);
  void ClearError(Stage stage);

  // Constant after construction.
  const DiskOptions options_;
  const internal::WaitOptions wait_options_;
  const internal::WaitOptions writer_wait_{};  // blocking: a background thread need not spin
  const bool buffered_;
  const internal::FlushPolicy flush_;
  const uint64_t segment_size_;
  const uint64_t buffer_size_;
  const uint64_t read_ahead_;
  const uint64_t seq_base_;
  DiskIo* const io_;
  const std::unique_ptr<DiskFile> dir_;  // holds the directory's lock
  const std::unique_ptr<DiskFile> state_;

  // Producer side, and the waits on what the writer changes. The atomics are written under
  // publish_mu_ and read anywhere.
  alignas(64) mutable internal::Mutex publish_mu_;
  std::atomic<uint64_t> published_;
  std::atomic<uint64_t> synced_;
  std::atomic<uint64_t> disk_bytes_;     // in segment files, or taken by the writer for them
  std::atomic<uint64_t> room_epoch_{0};  // bumped whenever room may have appeared
  std::atomic<int64_t> first_unread_ns_{0};
  // The longest frame payload the reader trusts: options.max_event_bytes, or the longest event
  // recovered or accepted.
  std::atomic<uint32_t> max_payload_;
  std::atomic<int> blocked_producers_{0};
  std::atomic<bool> closed_{false};
  bool stop_ ABSL_GUARDED_BY(publish_mu_) = false;
  std::vector<Chunk> pending_ ABSL_GUARDED_BY(publish_mu_);
  std::vector<Run> pending_runs_ ABSL_GUARDED_BY(publish_mu_);
  uint64_t pending_bytes_ ABSL_GUARDED_BY(publish_mu_) = 0;
  // Taken by the writer and not yet by the syncer: with pending_bytes_, at most buffer_size_.
  uint64_t writing_bytes_ ABSL_GUARDED_BY(publish_mu_) = 0;
  bool full_ ABSL_GUARDED_BY(publish_mu_) = false;          // max_size refused an event, logged
  uint64_t tail_segment_ ABSL_GUARDED_BY(publish_mu_) = 0;  // 0: start one with the next event
  uint64_t tail_bytes_ ABSL_GUARDED_BY(publish_mu_) = 0;
  std::deque<Mark> marks_ ABSL_GUARDED_BY(publish_mu_);
  // Written chunks' buffers, emptied once no batch reads them, for the next ones: a fresh buffer
  // per chunk would cost a page fault per 4 KiB filled. With the bytes each held (the memory it
  // touched), at most buffer_size_ of them: the writer takes a chunk at a time, often several
  // while one syncs.
  std::vector<std::pair<std::string, uint64_t>> spare_ ABSL_GUARDED_BY(publish_mu_);
  uint64_t spare_bytes_ ABSL_GUARDED_BY(publish_mu_) = 0;
  internal::WaitChannel consumers_{&publish_mu_, &synced_};      // Get: events to take
  internal::WaitChannel producers_{&publish_mu_, &room_epoch_};  // Publish: room, cancel, close
  internal::WaitChannel persisted_{&publish_mu_, &synced_};      // WaitPersisted
  internal::WaitChannel writer_{&publish_mu_, &published_};      // the writer: work

  // Consumer side. The atomics are written under get_mu_ and read anywhere.
  alignas(64) mutable internal::Mutex get_mu_;
  std::atomic<uint64_t> read_;
  std::atomic<uint64_t> done_;
  internal::DoneRanges done_early_ ABSL_GUARDED_BY(get_mu_);
  absl::flat_hash_map<uint64_t, ReadBatch*> batches_ ABSL_GUARDED_BY(get_mu_);  // by first index
  uint64_t cursor_segment_ ABSL_GUARDED_BY(get_mu_) = 0;
  uint64_t cursor_offset_ ABSL_GUARDED_BY(get_mu_) = 0;
  // Frame bytes the cursor has stepped over since the start, for ReadAhead().
  uint64_t read_position_ ABSL_GUARDED_BY(get_mu_) = 0;
  // A consumer waits for the oldest batch to be done (read_ahead_): MarkDone wakes consumers.
  bool read_ahead_full_ ABSL_GUARDED_BY(get_mu_) = false;
  std::unique_ptr<DiskFile> cursor_file_ ABSL_GUARDED_BY(get_mu_);
  uint64_t read_damage_end_ ABSL_GUARDED_BY(get_mu_) = 0;
  size_t frame_bytes_estimate_ ABSL_GUARDED_BY(get_mu_) = 1024;
  std::string read_error_ ABSL_GUARDED_BY(get_mu_);  // the last one logged; empty: reading
  absl::Duration read_backoff_ ABSL_GUARDED_BY(get_mu_) = kRetryMin;
  internal::WaitChannel drained_{&get_mu_, &done_};  // Drain

  // Chunks written and synced, oldest first: consumers read their frames from here instead of the
  // segment, sparing the copy of a read, and their batches hold the chunks they read from. The
  // memory of these and of the chunks batches still hold is at most buffer_size_ (or the newest
  // chunk alone, when no batch holds one): older frames, or those of a consumer that fell behind,
  // are read from the segments. Declared after spare_, which its chunks go to when they are
  // freed.
  mutable internal::Mutex written_mu_;
  std::deque<std::shared_ptr<Chunk>> written_ ABSL_GUARDED_BY(written_mu_);
  uint64_t written_bytes_ ABSL_GUARDED_BY(written_mu_) = 0;  // their Chunk::touched
  uint64_t pinned_bytes_ ABSL_GUARDED_BY(written_mu_) = 0;   // of chunks only batches hold

  // The segment files; the syncer appends, the recorder deletes, the reader looks up.
  mutable internal::Mutex segments_mu_;
  std::deque<Segment> segments_ ABSL_GUARDED_BY(segments_mu_);
  // The last index of the oldest segment if the recorder may delete it once done, else ~0.
  // Written under segments_mu_.
  std::atomic<uint64_t> deletable_until_{~uint64_t{0}};
  uint64_t synced_segment_ ABSL_GUARDED_BY(segments_mu_) = 0;  // of the last chunk synced, or 0
  // Where DeleteSegment cuts the synced segments: chunk ends, about kDeleteStep apart, so frame
  // boundaries. A crash while a delivered segment is cut leaves whole frames, delivered again.
  struct Cut {
    uint64_t segment_id;
    uint64_t offset;
  };
  std::deque<Cut> cuts_ ABSL_GUARDED_BY(segments_mu_);

  // The rounds written and handed to the syncer, oldest first.
  mutable internal::Mutex sync_mu_;
  std::deque<Round> to_sync_ ABSL_GUARDED_BY(sync_mu_);
  bool sync_stop_ ABSL_GUARDED_BY(sync_mu_) = false;   // the writer is done: sync what is left
  std::atomic<uint64_t> handed_{0};                    // rounds handed over, written under sync_mu_
  internal::WaitChannel syncer_{&sync_mu_, &handed_};  // the syncer: rounds, stop

  // Wakes the recorder: events done, a segment whole, stop (after the syncer's).
  mutable internal::Mutex record_mu_;
  bool record_stop_ ABSL_GUARDED_BY(record_mu_) = false;
  bool record_idle_ ABSL_GUARDED_BY(record_mu_) = false;  // waiting with nothing to record
  internal::WaitChannel recorder_{&record_mu_, &done_};

  // Writer thread only.
  uint64_t active_segment_ = 0;  // the segment it appends to; 0 before the first
  uint64_t active_bytes_ = 0;
  std::shared_ptr<DiskFile> active_file_;  // active_segment_'s, once opened
  absl::Duration write_backoff_ = kRetryMin;

  // Sync thread only.
  absl::Duration sync_backoff_ = kRetryMin;
  // Failed syncs of segments so far: written by the syncer, read by the writer.
  std::atomic<uint64_t> sync_failures_{0};

  // Recorder thread only.
  uint64_t state_done_ = 0;  // the done index the state file holds
  absl::Time state_time_ = absl::InfinitePast();

  // Statistics, read anywhere.
  std::atomic<uint64_t> syncs_{0};
  std::atomic<int64_t> sync_ns_{0};
  std::atomic<uint64_t> damaged_frames_;
  mutable internal::Mutex error_mu_;
  absl::Status write_error_ ABSL_GUARDED_BY(error_mu_);
  absl::Status sync_error_ ABSL_GUARDED_BY(error_mu_);

  // Last: they start once everything above is built.
  std::thread record_thread_;
  std::thread sync_thread_;
  std::thread writer_thread_;
};

DiskQueueImpl::DiskQueueImpl(const DiskOptions& options, std::unique_ptr<DiskFile> dir,
                             std::unique_ptr<DiskFile> state, internal::Recovery recovered)
    : options_(options),
      wait_options_{options.wait_strategy, options.sleep_min, options.sleep_max},
      buffered_(options.flush_min_events > 1),
      flush_{buffered_, options.flush_min_events, options.flush_timeout},
      segment_size_(DiskSegmentSize(options)),
      buffer_size_(DiskBufferSize(options)),
      read_ahead_(DiskReadAhead(options)),
      seq_base_(recovered.seq_base),
      io_(options.io),
      dir_(std::move(dir)),
      state_(std::move(state)),
      published_(recovered.last_index),
      synced_(recovered.last_index),
      disk_bytes_(recovered.bytes),
      max_payload_(std::max(options.max_event_bytes, recovered.max_payload)),
      marks_(std::move(recovered.marks)),
      read_(0),
      done_(0),
      segments_(std::move(recovered.segments)),
      damaged_frames_(recovered.damage.size()) {
  if (!segments_.empty()) {
    cursor_segment_ = segments_.front().id;
    cursor_offset_ = segments_.front().read_from;
    deletable_until_.store(segments_.front().last_index);
  }
  record_thread_ = std::thread([this] { RecordLoop(); });
  sync_thread_ = std::thread([this] { SyncLoop(); });
  writer_thread_ = std::thread([this] { WriterLoop(); });
}

DiskQueueImpl::~DiskQueueImpl() {
  {
    internal::Wakeups wake;
    internal::MutexLock lock(&publish_mu_);
    stop_ = true;
    closed_.store(true, std::memory_order_release);
    writer_.NotifyAll(&wake);
  }
  writer_thread_.join();  // it tells the syncer to finish
  sync_thread_.join();
  {
    internal::Wakeups wake;
    internal::MutexLock lock(&record_mu_);
    record_stop_ = true;
    recorder_.NotifyOne(&wake);
  }
  record_thread_.join();
  for (auto& [first, batch] : batches_) batch->Finish();
}

std::unique_ptr<Producer> DiskQueueImpl::NewProducer(AckCallback on_ack) {
  return std::make_unique<internal::ProducerHandle<DiskQueueImpl>>(this, std::move(on_ack));
}

// The frames of `events`, as the byte limits count them.
uint64_t FrameBytes(absl::Span<const Event> events) {
  uint64_t bytes = 0;
  for (const Event& event : events) bytes += kFrameHeaderBytes + event.bytes();
  return bytes;
}

bool DiskQueueImpl::NeverFits(absl::Span<const Event> events) const {
  if (events.size() == 1) return false;
  const uint64_t bytes = FrameBytes(events);
  return bytes > options_.max_size || bytes > buffer_size_;
}

size_t DiskQueueImpl::Accept(ProducerState* producer, absl::Span<Event> events, bool all,
                             internal::Wakeups* wake) {
  const uint64_t published = published_.load(std::memory_order_relaxed);
  // An event too large for the limits goes alone into an empty queue, else it never would.
  const bool empty = pending_bytes_ == 0 && done_.load(std::memory_order_acquire) == published;
  const uint64_t disk_bytes = disk_bytes_.load(std::memory_order_relaxed);
  if (all && !(empty && events.size() == 1)) {
    // The loop below takes a prefix, checking each frame with those before it; the last check,
    // with every frame, decides whether it takes all of them.
    const uint64_t bytes = FrameBytes(events);
    if (disk_bytes + pending_bytes_ + bytes > options_.max_size ||
        pending_bytes_ + writing_bytes_ + bytes > buffer_size_) {
      return 0;
    }
  }
  const uint32_t now = static_cast<uint32_t>(absl::ToUnixSeconds(absl::Now()));
  size_t n = 0;
  for (; n < events.size(); ++n) {
    const uint64_t frame = kFrameHeaderBytes + events[n].bytes();
    if (!(empty && n == 0)) {
      if (disk_bytes + pending_bytes_ + frame > options_.max_size) {
        if (!full_) {
          // Once per episode: the rejections themselves are counted (queue_full), not logged.
          ABSL_RAW_LOG(ERROR,
                       "disk queue: full at shipper.queue.disk.max_size (%llu bytes): publishes "
                       "are refused until the output drains it",
                       static_cast<unsigned long long>(options_.max_size));
          full_ = true;
        }
        break;
      }
      if (pending_bytes_ + writing_bytes_ + frame > buffer_size_) break;
    }
    if (events[n].bytes() > max_payload_.load(std::memory_order_relaxed)) {
      max_payload_.store(events[n].bytes(), std::memory_order_relaxed);
    }
    const uint64_t index = published + 1 + n;
    if (tail_segment_ == 0 || (tail_bytes_ > 0 && tail_bytes_ + frame > segment_size_)) {
      tail_segment_ = index + seq_base_;
      tail_bytes_ = 0;
    }
    if (pending_.empty() || pending_.back().segment_id != tail_segment_) {
      pending_.push_back({tail_segment_, index, index, {}});
      if (!spare_.empty()) {
        pending_.back().touched = spare_.back().second;
        pending_.back().frames.swap(spare_.back().first);
        spare_bytes_ -= spare_.back().second;
        spare_.pop_back();
      } else {
        pending_.back().frames.reserve(buffer_size_);  // pages are touched as it fills
      }
    }
    Chunk& chunk = pending_.back();
    // Appends, not resize(): that would zero every byte before the copy overwrites it.
    char header[kFrameHeaderBytes];
    internal::EncodeFrameHeader(header, events[n].bytes(), now, index + seq_base_);
    chunk.frames.append(header, kFrameHeaderBytes);
    chunk.frames.append(static_cast<const char*>(events[n].data()), events[n].bytes());
    chunk.last_index = index;
    tail_bytes_ += frame;
    pending_bytes_ += frame;
    Event copied = std::move(events[n]);
  }
  if (full_ && n == events.size()) {
    ABSL_RAW_LOG(INFO, "disk queue: has room again below shipper.queue.disk.max_size");
    full_ = false;
  }
  if (n == 0) return 0;
  producer->published += n;
  if (!pending_runs_.empty() && pending_runs_.back().producer == producer) {
    pending_runs_.back().count += n;
  } else {
    pending_runs_.push_back({producer, n});
  }
  if (marks_.empty() || marks_.back().time < now) marks_.push_back({published + 1, now});
  // Approximate on purpose: if a consumer races us, the timer starts early, never late.
  if (buffered_ && read_.load(std::memory_order_relaxed) >= published) {
    first_unread_ns_.store(absl::GetCurrentTimeNanos(), std::memory_order_relaxed);
  }
  published_.store(published + n, std::memory_order_release);
  writer_.NotifyOne(wake);
  return n;
}

PublishResult DiskQueueImpl::Publish(ProducerState* producer, absl::Span<Event> events,
                                     absl::Time deadline, bool all) {
  if (all && NeverFits(events)) {
    PublishResult result;
    result.status = absl::OutOfRangeError("more bytes than the disk queue holds at once");
    result.last_index = published_.load(std::memory_order_relaxed);
    return result;
  }
  uint64_t room;  // room_epoch_ as Accept last saw it
  return internal::PublishLoop(
      {&publish_mu_, &published_, &closed_, &blocked_producers_, &consumers_, &producers_,
       &wait_options_},
      producer, events, deadline,
      // (Under publish_mu_, which the analysis cannot follow into PublishLoop.)
      [&](absl::Span<Event> rest, internal::Wakeups* wake) ABSL_NO_THREAD_SAFETY_ANALYSIS {
        room = room_epoch_.load(std::memory_order_relaxed);
        return Accept(producer, rest, all, wake);
      },
      [&] { return room_epoch_.load(std::memory_order_relaxed) != room; });
}

uint64_t DiskQueueImpl::Cancel(ProducerState* producer) {
  internal::Wakeups wake;
  internal::MutexLock lock(&publish_mu_);
  producer->cancelled.store(true, std::memory_order_relaxed);
  room_epoch_.fetch_add(1, std::memory_order_relaxed);
  producers_.NotifyAll(&wake);
  return producer->published;
}

bool DiskQueueImpl::ReadyToFlush(uint64_t unread, size_t max_events, bool closed) const {
  return flush_.Ready(unread, max_events, closed,
                      blocked_producers_.load(std::memory_order_relaxed) > 0,
                      first_unread_ns_.load(std::memory_order_relaxed));
}

Batch DiskQueueImpl::Get(size_t max_events, absl::Time deadline) {
  if (max_events == 0) return Batch();
  internal::Wakeups wake;
  internal::MutexLock lock(&get_mu_);
  internal::Waiter waiter(&consumers_, wait_options_);
  for (;;) {
    const uint64_t read = read_.load(std::memory_order_relaxed);
    // closed_ first: once it is set, no event is published any more.
    const bool closed = closed_.load(std::memory_order_acquire);
    const uint64_t published = published_.load(std::memory_order_acquire);
    const uint64_t synced = synced_.load(std::memory_order_acquire);
    const uint64_t unread = synced - read;
    const uint64_t done = done_.load(std::memory_order_relaxed);
    read_ahead_full_ = ReadAhead() >= read_ahead_;
    if (!read_ahead_full_ && ReadyToFlush(unread, max_events, closed)) {
      uint64_t first = 0;
      size_t size = 0;
      absl::Status error;
      const uint64_t position = read_position_;
      ReadBatch* batch = ReadEvents(max_events, synced, &first, &size, &error, &wake);
      const absl::Duration retry = ReadRetry(error);
      if (batch != nullptr) batch->SetRange(first, size, position);
      if (read_.load(std::memory_order_relaxed) < synced) {
        internal::MutexLock producer_side(&publish_mu_);
        consumers_.NotifyOne(&wake);
      }
      if (batch != nullptr) {
        batches_[first] = batch;
        return MakeBatch(this, batch->slots(), batch->mask(), first, size);
      }
      if (!error.ok()) {
        get_mu_.Unlock();
        absl::SleepFor(std::min(retry, deadline - absl::Now()));
        get_mu_.Lock();
      }
      if (absl::Now() >= deadline) return Batch();
      continue;  // only lost frames were read: look again
    }
    if (closed && read == published) return Batch();
    if (absl::Now() >= deadline) return Batch();
    const absl::Time until =
        unread > 0 && !read_ahead_full_ ? std::min(deadline, FlushTime()) : deadline;
    const int blocked = blocked_producers_.load(std::memory_order_relaxed);
    waiter.Wait(&get_mu_, until, [&] {  // under publish_mu_
      return synced_.load(std::memory_order_relaxed) != synced ||
             done_.load(std::memory_order_relaxed) != done ||
             closed_.load(std::memory_order_relaxed) != closed ||
             blocked_producers_.load(std::memory_order_relaxed) != blocked;
    });
  }
}

uint64_t DiskQueueImpl::ReadAhead() const {
  const uint64_t done = done_.load(std::memory_order_relaxed);
  if (read_.load(std::memory_order_relaxed) == done) return 0;
  // Batches are done whole and done_ is where the done ones stop: the oldest undone event is
  // the first of a batch.
  auto oldest = batches_.find(done + 1);
  ABSL_RAW_CHECK(oldest != batches_.end(), "the oldest undone event begins no batch");
  return read_position_ - oldest->second->position();
}

std::optional<Segment> DiskQueueImpl::FindSegment(uint64_t min_id) const {
  internal::MutexLock lock(&segments_mu_);
  for (const Segment& s : segments_) {
    if (s.id >= min_id) return s;
  }
  return std::nullopt;
}

absl::Duration DiskQueueImpl::ReadRetry(const absl::Status& error) {
  if (error.ok()) {
    if (!read_error_.empty()) {
      ABSL_RAW_LOG(INFO, "disk queue: reading again after: %s", read_error_.c_str());
      read_error_.clear();
      read_backoff_ = kRetryMin;
    }
    return absl::ZeroDuration();
  }
  std::string text = error.ToString();
  if (text != read_error_) {
    ABSL_RAW_LOG(ERROR, "disk queue: %s; retrying until it reads", text.c_str());
    read_error_ = std::move(text);
  }
  const absl::Duration retry = read_backoff_;
  read_backoff_ = std::min(read_backoff_ * 2, kRetryMax);
  return retry;
}

ReadBatch* DiskQueueImpl::ReadEvents(size_t max_events, uint64_t synced, uint64_t* first_index,
                                     size_t* size, absl::Status* error, internal::Wakeups* wake) {
  uint64_t next = read_.load(std::memory_order_relaxed) + 1;  // the index to read
  const size_t want = std::min<uint64_t>(max_events, synced - next + 1);
  ReadBatch* batch = nullptr;
  size_t count = 0;
  uint64_t scanned_bytes = 0;
  size_t read_bytes = std::max(kMinRead, std::min(kMaxRead, want * frame_bytes_estimate_));
  uint32_t max_payload = max_payload_.load(std::memory_order_relaxed);
  while (count < want && next <= synced) {
    std::optional<Segment> segment = FindSegment(cursor_segment_);
    if (!segment) break;  // cannot happen: synced events are in listed segments
    const std::string file = FilePath(SegmentName(segment->id));
    if (segment->id != cursor_segment_ || cursor_file_ == nullptr) {
      if (segment->id != cursor_segment_) cursor_offset_ = segment->read_from;
      cursor_segment_ = segment->id;
      cursor_file_.reset();
      absl::StatusOr<std::unique_ptr<DiskFile>> opened = io_->Open(file, OpenMode::kRead);
      if (!opened.ok()) {
        *error = opened.status();
        break;
      }
      cursor_file_ = *std::move(opened);
    }
    if (cursor_offset_ >= segment->bytes) {
      if (FindSegment(segment->id + 1)) {
        cursor_segment_ = segment->id + 1;
        continue;
      }
      // The synced frames that should follow are unreadable: damaged since they were written.
      if (count > 0) break;
      ReportDamage(file, cursor_offset_, cursor_offset_);
      MarkDone(next, synced, wake);
      next = synced + 1;
      break;
    }
    const uint64_t file_left = segment->bytes - cursor_offset_;
    if (batch == nullptr) batch = new ReadBatch(want);
    absl::string_view data;
    bool read = false;  // into a buffer of its own, not in a written chunk
    if (std::shared_ptr<const Chunk> written = WrittenAt(segment->id, cursor_offset_)) {
      data = batch->Keep(std::move(written), cursor_offset_);
    } else {
      read = true;
      const size_t chunk = std::min<uint64_t>(read_bytes, file_left);
      char* buffer = batch->NewBuffer(chunk);
      if (absl::Status status = ReadExactly(*cursor_file_, cursor_offset_, chunk, buffer);
          !status.ok()) {
        batch->DropBuffer();
        *error = status;
        break;
      }
      data = absl::string_view(buffer, chunk);
    }
    bool gap = false;
    const uint64_t base = cursor_offset_;
    auto on_damage = [&](size_t offset, size_t end) {
      get_mu_.AssertHeld();  // ReadEvents' caller holds it
      if (base + offset >= segment->damage_known && base + offset != read_damage_end_) {
        ReportDamage(file, base + offset, base + end);
      }
      read_damage_end_ = base + end;
    };
    internal::Scanned scanned = internal::ScanFrames(
        data, file_left, max_payload,
        [&](size_t, const Frame& frame) {
          get_mu_.AssertHeld();  // ReadEvents' caller holds it
          const uint64_t index = frame.seq - seq_base_;
          if (frame.seq <= seq_base_ || index < next) return true;  // delivered before
          // Past `synced` (bytes synced since it was read): the next call's, so that read_ never
          // passes synced_, which Get's unread count relies on.
          if (count == want || index > synced) return false;
          if (index > next) {
            // Frames lost to damage: a batch holds consecutive indexes, so it ends before them.
            if (count > 0) {
              gap = true;
              return false;
            }
            MarkDone(next, index - 1, wake);
            next = index;
          }
          if (count == 0) *first_index = next;
          batch->Add(next++, frame.payload);
          ++count;
          return true;
        },
        on_damage);
    if (scanned.oversized) {
      // Longer than max_payload as this read loaded it: an event accepted since (it may lie
      // past `synced`, in bytes synced meanwhile), or a damaged length. Judged as recovery judges
      // it: a frame whose checksum holds is an event, read whole next time if it is wanted.
      bool holds = false;
      const absl::Status checked =
          CheckLongFrame(*cursor_file_, base + scanned.offset,
                         data.substr(scanned.offset, kFrameHeaderBytes), kMaxRead, &holds);
      if (!checked.ok()) {
        *error = checked;
      } else if (holds) {
        max_payload = internal::DecodeFrameHeader(data.substr(scanned.offset)).len;
      } else {
        on_damage(scanned.offset, scanned.offset + 1);  // the scan resumes after its first byte
        ++scanned.offset;
      }
    }
    cursor_offset_ += scanned.offset;
    read_position_ += scanned.offset;
    scanned_bytes += scanned.offset;
    if (scanned.offset == 0 && read) {
      // A frame larger than the read, at most kFrameHeaderBytes + max_payload: read it whole
      // next time, into a buffer of its own.
      batch->DropBuffer();
      read_bytes = std::min<uint64_t>(data.size() * 2, kFrameHeaderBytes + uint64_t{max_payload});
    }
    if (gap || !error->ok()) break;
  }
  read_.store(next - 1, std::memory_order_release);
  if (count == 0) {
    if (batch != nullptr) batch->Finish();
    return nullptr;
  }
  frame_bytes_estimate_ = std::max<uint64_t>(kFrameHeaderBytes, scanned_bytes / count);
  *size = count;
  return batch;
}

void DiskQueueImpl::ReportDamage(const std::string& file, uint64_t offset, uint64_t end) {
  damaged_frames_.fetch_add(1, std::memory_order_relaxed);
  LogDamage(file, offset, end);
}

void DiskQueueImpl::Done(uint64_t first_index, size_t size) {
  ReadBatch* batch;
  {
    internal::Wakeups wake;
    internal::MutexLock lock(&get_mu_);
    auto it = batches_.find(first_index);
    batch = it->second;
    batches_.erase(it);
    MarkDone(first_index, first_index + size - 1, &wake);
  }
  batch->Finish();
}

void DiskQueueImpl::MarkDone(uint64_t first_index, uint64_t last_index, internal::Wakeups* wake) {
  const uint64_t before = done_.load(std::memory_order_relaxed);
  const uint64_t done = done_early_.Add(first_index, last_index, before);
  if (done == before) return;  // done out of order
  done_.store(done, std::memory_order_release);
  drained_.NotifyAll(wake);
  if (read_ahead_full_) {
    internal::MutexLock producer_side(&publish_mu_);
    consumers_.NotifyAll(wake);
  }
  // The recorder deletes segments and records the state. Woken for a segment to delete, or when
  // it waits with no state to record: one that is due wakes it by itself.
  internal::MutexLock record_side(&record_mu_);
  if (record_idle_ || done >= deletable_until_.load()) recorder_.NotifyOne(wake);
}

uint64_t DiskQueueImpl::WaitPersisted(uint64_t index, absl::Time deadline) {
  internal::MutexLock lock(&publish_mu_);
  internal::Waiter waiter(&persisted_, wait_options_);
  for (;;) {
    const bool closed = closed_.load(std::memory_order_acquire);
    const uint64_t synced = synced_.load(std::memory_order_relaxed);
    if (synced > index || (closed && synced == published_.load()) || absl::Now() >= deadline) {
      return synced;
    }
    waiter.Wait(&publish_mu_, deadline, [&] {
      return synced_.load(std::memory_order_relaxed) != synced ||
             closed_.load(std::memory_order_relaxed) != closed;
    });
  }
}

void DiskQueueImpl::Close() {
  internal::Wakeups wake;
  {
    internal::MutexLock lock(&publish_mu_);
    closed_.store(true, std::memory_order_release);
    consumers_.NotifyAll(&wake);
    producers_.NotifyAll(&wake);
    persisted_.NotifyAll(&wake);
  }
  internal::Wakeups more;
  internal::MutexLock lock(&get_mu_);
  drained_.NotifyAll(&more);
}

uint64_t DiskQueueImpl::Drain(absl::Time deadline) {
  internal::MutexLock lock(&get_mu_);
  internal::Waiter waiter(&drained_, wait_options_);
  for (;;) {
    const uint64_t published = published_.load(std::memory_order_acquire);
    const uint64_t done = done_.load(std::memory_order_relaxed);
    if (done == published || absl::Now() >= deadline) return published - done;
    waiter.Wait(&get_mu_, deadline,
                [&] { return published_.load(std::memory_order_relaxed) != published; });
  }
}

Queue::Stats DiskQueueImpl::stats() const {
  internal::MutexLock lock(&publish_mu_);
  return {static_cast<size_t>(published_.load() - done_.load()),
          static_cast<size_t>(disk_bytes_.load() + pending_bytes_)};
}

DiskStats DiskQueueImpl::disk_stats() const {
  DiskStats stats;
  {
    internal::MutexLock lock(&segments_mu_);
    stats.segments = segments_.size();
  }
  {
    internal::MutexLock lock(&publish_mu_);
    stats.bytes = disk_bytes_.load();
    const uint64_t oldest = done_.load() + 1;
    if (oldest <= published_.load()) {
      // The last mark at or before the oldest undone event: its second, or an earlier one.
      auto it = std::upper_bound(marks_.begin(), marks_.end(), oldest,
                                 [](uint64_t index, const Mark& m) { return index < m.index; });
      if (it != marks_.begin()) {
        stats.oldest_age = absl::Now() - absl::FromUnixSeconds(std::prev(it)->time);
      }
    }
  }
  stats.syncs = syncs_.load();
  stats.sync_time = absl::Nanoseconds(sync_ns_.load());
  stats.damaged_frames = damaged_frames_.load();
  internal::MutexLock lock(&error_mu_);
  stats.last_error = !sync_error_.ok() ? sync_error_ : write_error_;
  return stats;
}

std::string DiskQueueImpl::DebugString() const {
  internal::MutexLock lock(&get_mu_);
  internal::MutexLock producer_side(&publish_mu_);
  return absl::StrCat("published=", published_.load(), " synced=", synced_.load(),
                      " read=", read_.load(), " done=", done_.load(), " seq_base=", seq_base_,
                      " disk_bytes=", disk_bytes_.load(), " pending_bytes=", pending_bytes_,
                      " done_early=", done_early_.size(), " closed=", closed_.load(),
                      " blocked_producers=", blocked_producers_.load(), " cursor=", cursor_segment_,
                      ":", cursor_offset_);
}

// The writer.

void DiskQueueImpl::WriterLoop() {
  Round round;  // kept across failed attempts
  absl::Time retry_at = absl::InfinitePast();
  for (;;) {
    bool stop;
    {
      internal::MutexLock lock(&publish_mu_);
      internal::Waiter waiter(&writer_, writer_wait_);
      for (;;) {
        stop = stop_;
        const absl::Time now = absl::Now();
        if (stop || (round.empty() ? !pending_.empty() : now >= retry_at)) break;
        const uint64_t published = published_.load(std::memory_order_relaxed);
        waiter.Wait(&publish_mu_, round.empty() ? absl::InfiniteFuture() : retry_at, [&] {
          publish_mu_.AssertHeld();  // writer_'s mutex: Wait calls this under it
          return published_.load(std::memory_order_relaxed) != published || stop_;
        });
      }
      if (round.empty()) TakePending(&round);
    }
    if (!round.empty()) {
      const absl::Status status = WriteRound(&round);
      if (status.ok()) {
        ClearError(Stage::kWrite);
        write_backoff_ = kRetryMin;
        internal::Wakeups wake;
        internal::MutexLock lock(&sync_mu_);
        to_sync_.push_back(std::move(round));
        round = Round();
        handed_.fetch_add(1, std::memory_order_relaxed);
        syncer_.NotifyOne(&wake);
      } else {
        SetError(Stage::kWrite, status);
        retry_at = absl::Now() + write_backoff_;
        write_backoff_ = std::min(write_backoff_ * 2, kRetryMax);
        if (stop) DropUnwritten(&round);
      }
    }
    if (stop && round.empty()) {
      internal::MutexLock lock(&publish_mu_);
      if (pending_.empty()) break;
    }
  }
  internal::Wakeups wake;
  internal::MutexLock lock(&sync_mu_);
  sync_stop_ = true;
  syncer_.NotifyOne(&wake);
}

void DiskQueueImpl::TakePending(Round* round) {
  const uint64_t oldest = done_.load(std::memory_order_acquire) + 1;
  while (marks_.size() > 1 && marks_[1].index <= oldest) marks_.pop_front();
  if (pending_.empty()) return;
  round->chunks.swap(pending_);
  round->runs.swap(pending_runs_);
  round->last_index = published_.load(std::memory_order_relaxed);
  round->bytes = pending_bytes_;
  // Still not room for producers: that comes once the syncer takes the round.
  disk_bytes_.fetch_add(pending_bytes_, std::memory_order_relaxed);
  writing_bytes_ += pending_bytes_;
  pending_bytes_ = 0;
}

absl::StatusOr<std::shared_ptr<DiskFile>> DiskQueueImpl::SegmentFile(uint64_t id, bool* created) {
  if (active_file_ != nullptr && active_segment_ == id) return active_file_;
  absl::StatusOr<std::unique_ptr<DiskFile>> file =
      io_->Open(FilePath(SegmentName(id)), OpenMode::kReadWrite);
  if (!file.ok()) return file.status();
  *created = true;
  // Only the segment still being appended to stays open here; the rounds that wrote to older
  // ones keep theirs until synced.
  if (active_segment_ == id) active_file_ = *std::move(file);
  return active_segment_ == id ? active_file_ : std::shared_ptr<DiskFile>(*std::move(file));
}

absl::Status DiskQueueImpl::WriteRound(Round* round) {
  round->files.clear();
  round->sync_failures = sync_failures_.load(std::memory_order_acquire);
  for (Chunk& chunk : round->chunks) {
    if (!chunk.placed) {
      if (chunk.segment_id != active_segment_) {
        active_segment_ = chunk.segment_id;
        active_bytes_ = 0;
        active_file_ = nullptr;
      }
      chunk.offset = active_bytes_;
      active_bytes_ += chunk.frames.size();
      internal::SealFrames(chunk.frames.data(), chunk.frames.size());
      chunk.placed = true;
    }
    absl::StatusOr<std::shared_ptr<DiskFile>> file = SegmentFile(chunk.segment_id, &round->created);
    if (!file.ok()) return file.status();
    if (absl::Status status = (*file)->Write(chunk.offset, chunk.frames); !status.ok()) {
      return status;
    }
    if (round->files.empty() || round->files.back() != *file) round->files.push_back(*file);
  }
  return absl::OkStatus();
}

void DiskQueueImpl::DropUnwritten(Round* round) {
  ABSL_RAW_LOG(ERROR,
               "disk queue: closing with %llu events not written: they were never "
               "reported persisted",
               static_cast<unsigned long long>(round->last_index - synced_.load()));
  for (const Run& run : round->runs) run.producer->Ack(run.count, 0, false);
  *round = Round();
  internal::MutexLock lock(&publish_mu_);
  for (const Run& run : pending_runs_) run.producer->Ack(run.count, 0, false);
  pending_runs_.clear();
  pending_.clear();
}

// The syncer.

void DiskQueueImpl::SyncLoop() {
  std::vector<Round> rounds;  // being synced, kept across failed attempts
  bool failed = false;        // the last attempt failed: retried with the rounds handed since
  absl::Time retry_at = absl::InfinitePast();
  for (;;) {
    bool stop;
    {
      internal::MutexLock lock(&sync_mu_);
      internal::Waiter waiter(&syncer_, writer_wait_);
      for (;;) {
        stop = sync_stop_;
        if (stop || (rounds.empty() ? !to_sync_.empty() : absl::Now() >= retry_at)) break;
        const uint64_t handed = handed_.load(std::memory_order_relaxed);
        waiter.Wait(&sync_mu_, rounds.empty() ? absl::InfiniteFuture() : retry_at, [&] {
          sync_mu_.AssertHeld();  // syncer_'s mutex: Wait calls this under it
          return handed_.load(std::memory_order_relaxed) != handed || sync_stop_;
        });
      }
      // After a failed sync the rounds written since are taken too: their pages may have been
      // in the sync that failed.
      if (rounds.empty() || failed) {
        for (Round& round : to_sync_) rounds.push_back(std::move(round));
        to_sync_.clear();
      }
    }
    if (!rounds.empty() && (!failed || stop || absl::Now() >= retry_at)) {
      // Producers may fill the buffer again while these sync; not while a sync keeps failing, so
      // that the rounds held stay bounded.
      if (!failed) FreeRoom(&rounds);
      const absl::Status status = SyncRounds(&rounds);
      if (status.ok()) {
        FreeRoom(&rounds);
        for (Round& round : rounds) FinishRound(&round);
        rounds.clear();
        failed = false;
        ClearError(Stage::kSync);
        sync_backoff_ = kRetryMin;
      } else {
        failed = true;
        sync_failures_.fetch_add(1, std::memory_order_acq_rel);
        SetError(Stage::kSync, status);
        retry_at = absl::Now() + sync_backoff_;
        sync_backoff_ = std::min(sync_backoff_ * 2, kRetryMax);
        if (stop) DropRounds(&rounds);
      }
    }
    if (stop && rounds.empty()) {
      internal::MutexLock lock(&sync_mu_);
      if (to_sync_.empty()) return;
    }
  }
}

void DiskQueueImpl::FreeRoom(std::vector<Round>* rounds) {
  uint64_t bytes = 0;
  for (Round& round : *rounds) {
    if (!round.room_freed) bytes += round.bytes;
    round.room_freed = true;
  }
  if (bytes == 0) return;
  internal::Wakeups wake;
  internal::MutexLock lock(&publish_mu_);
  writing_bytes_ -= bytes;
  room_epoch_.fetch_add(1, std::memory_order_relaxed);
  producers_.NotifyAll(&wake);
}

absl::Status DiskQueueImpl::SyncRounds(std::vector<Round>* rounds) {
  const uint64_t failures = sync_failures_.load(std::memory_order_acquire);
  for (Round& round : *rounds) {
    if (round.sync_failures == failures) continue;
    // Written before a sync failed: the kernel may have dropped its pages. Written again here, by
    // the syncer, as the writer handed it over already (perhaps after the retry took the rounds
    // before it).
    round.sync_failures = failures;
    for (size_t i = 0, f = 0; i < round.chunks.size(); ++i) {
      const Chunk& chunk = round.chunks[i];
      while (FilePath(SegmentName(chunk.segment_id)) != round.files[f]->name()) ++f;
      if (absl::Status status = round.files[f]->Write(chunk.offset, chunk.frames); !status.ok()) {
        return status;
      }
    }
  }
  std::vector<DiskFile*> files;
  bool created = false;
  for (const Round& round : *rounds) {
    for (const std::shared_ptr<DiskFile>& file : round.files) {
      if (files.empty() || files.back() != file.get()) files.push_back(file.get());
    }
    created = created || round.created;
  }
  for (DiskFile* file : files) {
    const absl::Time start = absl::Now();
    const absl::Status status = file->Sync();
    sync_ns_.fetch_add(absl::ToInt64Nanoseconds(absl::Now() - start), std::memory_order_relaxed);
    syncs_.fetch_add(1, std::memory_order_relaxed);
    if (!status.ok()) return status;
  }
  if (created) return dir_->Sync();
  return absl::OkStatus();
}

void DiskQueueImpl::FinishRound(Round* round) {
  bool deletable_changed;
  {
    internal::MutexLock lock(&segments_mu_);
    for (const Chunk& chunk : round->chunks) {
      if (segments_.empty() || segments_.back().id != chunk.segment_id) {
        segments_.push_back({chunk.segment_id, 0, 0, 0, 0, 0});
      }
      const uint64_t end = chunk.offset + chunk.frames.size();
      const bool same = !cuts_.empty() && cuts_.back().segment_id == chunk.segment_id;
      if (end - (same ? cuts_.back().offset : 0) >= kDeleteStep) {
        cuts_.push_back({chunk.segment_id, end});
      }
      segments_.back().last_index = chunk.last_index;
      segments_.back().bytes = end;
      segments_.back().file_bytes = end;
      synced_segment_ = chunk.segment_id;
    }
    const Segment& front = segments_.front();
    const uint64_t deletable = front.id == synced_segment_ ? ~uint64_t{0} : front.last_index;
    deletable_changed = deletable != deletable_until_.load();
    deletable_until_.store(deletable);
  }
  if (deletable_changed) {
    internal::Wakeups wake;
    internal::MutexLock lock(&record_mu_);
    recorder_.NotifyOne(&wake);
  }
  round->files.clear();
  KeepWritten(round);
  {
    internal::Wakeups wake;
    internal::MutexLock lock(&publish_mu_);
    const uint64_t synced = synced_.load(std::memory_order_relaxed);
    const uint64_t read = std::min(read_.load(std::memory_order_acquire), synced);
    const uint64_t unread_before = synced - read;
    const uint64_t threshold = options_.flush_min_events;
    synced_.store(round->last_index, std::memory_order_release);
    // As the memory queue: wake a consumer only when its answer may change.
    if (unread_before == 0 ||
        (unread_before < threshold && unread_before + round->last_index - synced >= threshold)) {
      consumers_.NotifyOne(&wake);
    }
    persisted_.NotifyAll(&wake);
  }
  for (const Run& run : round->runs) run.producer->Ack(run.count, round->last_index);
  *round = Round();
}

void DiskQueueImpl::KeepWritten(Round* round) {
  std::vector<std::shared_ptr<Chunk>> dropped;  // freed after the lock
  internal::MutexLock lock(&written_mu_);
  for (Chunk& chunk : round->chunks) {
    chunk.touched = std::max(chunk.touched, Touched(chunk.frames.size()));
    written_bytes_ += chunk.touched;
    written_.emplace_back(new Chunk(std::move(chunk)), [this](Chunk* c) { Recycle(c); });
  }
  while (!written_.empty() && written_bytes_ + pinned_bytes_ > buffer_size_ &&
         (written_.size() > 1 || pinned_bytes_ > 0)) {
    DropOldestWritten(&dropped);
  }
}

void DiskQueueImpl::DropOldestWritten(std::vector<std::shared_ptr<Chunk>>* dropped) {
  std::shared_ptr<Chunk>& oldest = written_.front();
  written_bytes_ -= oldest->touched;
  // References are taken only under written_mu_: a count of 1 stays 1.
  if (oldest.use_count() > 1) {
    oldest->pinned = true;
    pinned_bytes_ += oldest->touched;
  }
  dropped->push_back(std::move(oldest));
  written_.pop_front();
}

std::shared_ptr<const Chunk> DiskQueueImpl::WrittenAt(uint64_t id, uint64_t offset) {
  std::vector<std::shared_ptr<Chunk>> behind;  // freed after the lock
  internal::MutexLock lock(&written_mu_);
  while (!written_.empty()) {
    const Chunk& chunk = *written_.front();
    if (chunk.segment_id > id ||
        (chunk.segment_id == id && chunk.offset + chunk.frames.size() > offset)) {
      break;
    }
    DropOldestWritten(&behind);
  }
  if (written_.empty() || written_.front()->segment_id != id || written_.front()->offset > offset) {
    return nullptr;
  }
  return written_.front();
}

void DiskQueueImpl::Recycle(Chunk* chunk) {
  {
    internal::MutexLock lock(&written_mu_);
    if (chunk->pinned) pinned_bytes_ -= chunk->touched;
  }
  std::string frames = std::move(chunk->frames);
  const uint64_t touched = chunk->touched;
  delete chunk;
  // Not one grown past buffer_size by an event larger than it: the memory bound.
  if (frames.capacity() > buffer_size_) return;
  frames.clear();
  internal::MutexLock lock(&publish_mu_);
  if (spare_bytes_ + touched > buffer_size_) return;
  spare_.emplace_back(std::move(frames), touched);
  spare_bytes_ += touched;
}

void DiskQueueImpl::DropRounds(std::vector<Round>* rounds) {
  uint64_t events = 0;
  for (const Round& round : *rounds) {
    for (const Run& run : round.runs) events += run.count;
  }
  ABSL_RAW_LOG(ERROR,
               "disk queue: closing with %llu events not synced: they were never reported "
               "persisted",
               static_cast<unsigned long long>(events));
  for (const Round& round : *rounds) {
    for (const Run& run : round.runs) run.producer->Ack(run.count, 0, false);
  }
  rounds->clear();
}

void DiskQueueImpl::SetError(Stage stage, const absl::Status& status) {
  internal::MutexLock lock(&error_mu_);
  absl::Status& error = stage == Stage::kWrite ? write_error_ : sync_error_;
  if (error.ok()) {
    ABSL_RAW_LOG(ERROR,
                 "disk queue: %s; publishes are refused while the write buffer is "
                 "full, retrying",
                 status.ToString().c_str());
  }
  error = status;
}

void DiskQueueImpl::ClearError(Stage stage) {
  internal::MutexLock lock(&error_mu_);
  absl::Status& error = stage == Stage::kWrite ? write_error_ : sync_error_;
  if (error.ok()) return;
  ABSL_RAW_LOG(INFO, "disk queue: %s again after: %s",
               stage == Stage::kWrite ? "writing" : "syncing", error.ToString().c_str());
  error = absl::OkStatus();
}

// The recorder.

void DiskQueueImpl::RecordLoop() {
  for (;;) {
    bool stop;
    {
      internal::MutexLock lock(&record_mu_);
      internal::Waiter waiter(&recorder_, writer_wait_);
      for (;;) {
        stop = record_stop_;
        absl::Time when = absl::InfiniteFuture();
        if (stop || DeliveredWork(absl::Now(), &when)) break;
        const uint64_t done = done_.load(std::memory_order_relaxed);
        const uint64_t deletable = deletable_until_.load(std::memory_order_relaxed);
        record_idle_ = when == absl::InfiniteFuture();
        waiter.Wait(&record_mu_, when, [&] {
          record_mu_.AssertHeld();  // recorder_'s mutex: Wait calls this under it
          return done_.load(std::memory_order_relaxed) != done ||
                 deletable_until_.load(std::memory_order_relaxed) != deletable || record_stop_;
        });
        record_idle_ = false;
      }
    }
    RecordDelivered(stop);
    if (stop) return;
  }
}

bool DiskQueueImpl::DeliveredWork(absl::Time now, absl::Time* when) const {
  const uint64_t done = done_.load(std::memory_order_acquire);
  if (done >= deletable_until_.load(std::memory_order_relaxed)) return true;
  if (done == state_done_) return false;
  const absl::Time due = state_time_ + kStateInterval;
  if (now >= due) return true;
  *when = std::min(*when, due);
  return false;
}

void DiskQueueImpl::RecordDelivered(bool stopping) {
  const uint64_t done = done_.load(std::memory_order_acquire);
  for (;;) {
    Segment gone;
    {
      internal::MutexLock lock(&segments_mu_);
      if (segments_.empty()) break;
      gone = segments_.front();
      // The segment of the last chunk synced may still grow; those before are whole.
      if (gone.id == synced_segment_ || gone.last_index > done) {
        deletable_until_.store(gone.id == synced_segment_ ? ~uint64_t{0} : gone.last_index);
        break;
      }
      segments_.pop_front();
      if (segments_.empty()) deletable_until_.store(~uint64_t{0});
    }
    DeleteSegment(gone.id);
    internal::Wakeups wake;
    internal::MutexLock lock(&publish_mu_);
    disk_bytes_.fetch_sub(std::min(gone.file_bytes, disk_bytes_.load()), std::memory_order_relaxed);
    room_epoch_.fetch_add(1, std::memory_order_relaxed);
    producers_.NotifyAll(&wake);
  }
  const absl::Time now = absl::Now();
  if (done == state_done_ || (!stopping && now < state_time_ + kStateInterval)) return;
  const absl::Status status = WriteState(*state_, done + seq_base_);
  state_time_ = now;  // after a failure too: retried an interval later, not in a busy loop
  if (!status.ok()) {
    ABSL_RAW_LOG(ERROR, "disk queue: %s", status.ToString().c_str());
    return;
  }
  state_done_ = done;
}

void DiskQueueImpl::DeleteSegment(uint64_t id) {
  std::vector<uint64_t> cuts;
  {
    internal::MutexLock lock(&segments_mu_);
    for (; !cuts_.empty() && cuts_.front().segment_id <= id; cuts_.pop_front()) {
      if (cuts_.front().segment_id == id) cuts.push_back(cuts_.front().offset);
    }
  }
  const std::string path = FilePath(SegmentName(id));
  // Cut it short a step at a time first: on a file system mounted with `discard`, freeing a whole
  // segment at once holds the device, and the syncer's fdatasync with it, for tens of ms.
  if (!cuts.empty()) {
    if (absl::StatusOr<std::unique_ptr<DiskFile>> file = io_->Open(path, OpenMode::kReadWrite);
        file.ok()) {
      // A file someone else cut or removed (opening made it again, empty) is not lengthened.
      const absl::StatusOr<uint64_t> size = (*file)->Size();
      for (auto cut = cuts.rbegin(); size.ok() && cut != cuts.rend(); ++cut) {
        if (*cut >= *size) continue;
        if (!(*file)->Truncate(*cut).ok()) break;  // Remove frees the rest
      }
    }
  }
  if (absl::Status status = io_->Remove(path); !status.ok() && !absl::IsNotFound(status)) {
    ABSL_RAW_LOG(ERROR, "disk queue: %s", status.ToString().c_str());
  }
}

// Recovery's I/O; disk_recovery.h decides what it does.

// The ids of the segment files in `path`, ascending.
absl::StatusOr<std::vector<uint64_t>> ListSegments(DiskIo* io, const std::string& path) {
  absl::StatusOr<std::vector<std::string>> names = io->List(path);
  if (!names.ok()) {
    return absl::Status(names.status().code(),
                        absl::StrCat("shipper.queue.disk.path: ", names.status().message()));
  }
  std::vector<uint64_t> ids;
  for (const std::string& name : *names) {
    if (std::optional<uint64_t> id = SegmentId(name)) ids.push_back(*id);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

// Recovery reads each file again after an error, a few times: a transient error must not stop a
// start, and a lasting one must stop it rather than cost events (disk_recovery.h).
constexpr int kStartAttempts = 5;
constexpr absl::Duration kStartRetry = absl::Milliseconds(10);  // doubling after each attempt

absl::Status StatusOf(const absl::Status& status) { return status; }
template <typename T>
absl::Status StatusOf(const absl::StatusOr<T>& result) {
  return result.status();
}

// What `attempt` returns once it succeeds, or its error after kStartAttempts.
template <typename Attempt>
auto Retried(Attempt attempt) -> decltype(attempt()) {
  absl::Duration pause = kStartRetry;
  for (int n = 1;; ++n) {
    auto result = attempt();
    const absl::Status status = StatusOf(result);
    if (status.ok() || n == kStartAttempts) return result;
    ABSL_RAW_LOG(WARNING, "disk queue: %s; reading it again", status.ToString().c_str());
    absl::SleepFor(pause);
    pause *= 2;
  }
}

// Recovery's scan of one segment (internal::ScanSegment), kScanChunk at a time, or a frame of up
// to kFrameHeaderBytes + *max_payload. A longer frame is checked piece by piece; if it holds, it
// is a real event (published when the inputs accepted larger ones) and *max_payload grows to it,
// else its header is damage.
absl::StatusOr<uint64_t> ScanSegmentFile(
    DiskIo* io, const std::string& name, uint32_t* max_payload,
    absl::FunctionRef<void(uint64_t offset, const internal::FrameHeader& header)> on_frame,
    absl::FunctionRef<void(uint64_t offset, uint64_t end)> on_damage) {
  absl::StatusOr<std::unique_ptr<DiskFile>> file =
      Retried([&] { return io->Open(name, OpenMode::kRead); });
  if (!file.ok()) return file.status();
  const absl::StatusOr<uint64_t> size = Retried([&] { return (*file)->Size(); });
  if (!size.ok()) return size.status();
  std::string buffer;
  size_t chunk = kScanChunk;
  for (uint64_t offset = 0; offset < *size;) {
    buffer.resize(std::min<uint64_t>(chunk, *size - offset));
    const absl::Status read =
        Retried([&] { return ReadExactly(**file, offset, buffer.size(), buffer.data()); });
    if (!read.ok()) return read;
    const internal::Scanned scanned = internal::ScanFrames(
        buffer, *size - offset, *max_payload,
        [&](size_t at, const Frame& frame) {
          on_frame(offset + at,
                   {0, static_cast<uint32_t>(frame.payload.size()), frame.time, frame.seq});
          return true;
        },
        [&](size_t at, size_t end) { on_damage(offset + at, offset + end); });
    offset += scanned.offset;
    if (scanned.oversized) {
      const absl::string_view header(buffer.data() + scanned.offset, kFrameHeaderBytes);
      bool holds = false;
      const absl::Status checked =
          Retried([&] { return CheckLongFrame(**file, offset, header, kScanChunk, &holds); });
      if (!checked.ok()) return checked;
      const internal::FrameHeader frame = internal::DecodeFrameHeader(header);
      if (holds) {
        ABSL_RAW_LOG(WARNING,
                     "disk queue: %s holds an event of %u bytes at offset %llu, more than the "
                     "largest the inputs accept now (%u): it is delivered all the same",
                     name.c_str(), frame.len, static_cast<unsigned long long>(offset),
                     *max_payload);
        *max_payload = frame.len;
        on_frame(offset, frame);
        offset += kFrameHeaderBytes + frame.len;
      } else {
        on_damage(offset, offset + 1);  // a damaged length: the scan resumes after its byte
        ++offset;
      }
      chunk = kScanChunk;
      continue;
    }
    // A frame larger than the read: read it whole next time (no more than it can need).
    chunk = scanned.offset == 0 ? std::min<uint64_t>(uint64_t{chunk} * 2,
                                                     kFrameHeaderBytes + uint64_t{*max_payload})
                                : kScanChunk;
  }
  return *size;
}

// The state file's bytes: up to kStateBytes, as many as it holds.
absl::StatusOr<std::string> ReadState(DiskFile& file) {
  absl::StatusOr<uint64_t> size = file.Size();
  if (!size.ok()) return size.status();
  std::string state(std::min<uint64_t>(*size, internal::kStateBytes), '\0');
  if (absl::Status read = ReadExactly(file, 0, state.size(), state.data()); !read.ok()) return read;
  return state;
}

// Reads the files, recovers, and does to the files what recovery says. An error leaves them as
// they were.
absl::StatusOr<internal::Recovery> Recover(const DiskOptions& options, DiskFile& state_file) {
  DiskIo* const io = options.io;
  auto path = [&](const std::string& name) { return options.path + "/" + name; };
  auto refused = [&](const absl::Status& status) {
    return absl::Status(
        status.code(),
        absl::StrCat("shipper.queue.disk.path: cannot recover ", options.path, ": ",
                     status.message(), " (tried ", kStartAttempts,
                     " times; no file was changed: fix the file system, or move the file "
                     "named away, and start again)"));
  };
  const absl::StatusOr<std::string> state = Retried([&] { return ReadState(state_file); });
  if (!state.ok()) return refused(state.status());
  absl::StatusOr<std::vector<uint64_t>> ids =
      Retried([&] { return ListSegments(io, options.path); });
  if (!ids.ok()) return ids.status();
  uint32_t max_payload = options.max_event_bytes;
  absl::StatusOr<internal::Recovery> recovered =
      internal::Recover(*state, *ids, [&](uint64_t id, auto on_frame, auto on_damage) {
        return ScanSegmentFile(io, path(SegmentName(id)), &max_payload, on_frame, on_damage);
      });
  if (!recovered.ok()) return refused(recovered.status());
  internal::Recovery& r = *recovered;

  if (r.state_lost) {
    ABSL_RAW_LOG(WARNING,
                 "disk queue: %s missing or damaged: rebuilt from the segments, whose events are "
                 "all delivered again",
                 path(kStateFile).c_str());
  }
  if (r.cut) {
    const std::string file = path(SegmentName(r.cut->id));
    ABSL_RAW_LOG(WARNING, "disk queue: %s: cut %llu bytes of a torn frame at offset %llu",
                 file.c_str(), static_cast<unsigned long long>(r.cut->torn),
                 static_cast<unsigned long long>(r.cut->size));
    // Failing to change a file is logged, not fatal: the files keep what they held. An uncut
    // tail shows as damage on a later start (it is no longer in the last segment), a segment not
    // deleted is recovered again (its frames delivered), a state not rewritten is rebuilt again.
    absl::StatusOr<std::unique_ptr<DiskFile>> cut = io->Open(file, OpenMode::kReadWrite);
    const absl::Status status = cut.ok() ? (*cut)->Truncate(r.cut->size) : cut.status();
    if (!status.ok()) ABSL_RAW_LOG(ERROR, "disk queue: %s", status.ToString().c_str());
  }
  for (const internal::Recovery::Damage& d : r.damage) {
    LogDamage(path(SegmentName(d.id)), d.offset, d.end);
  }
  for (uint64_t id : r.delete_ids) {
    if (absl::Status status = io->Remove(path(SegmentName(id))); !status.ok()) {
      ABSL_RAW_LOG(ERROR, "disk queue: %s", status.ToString().c_str());
    }
  }
  if (r.rewrite_state) {
    const absl::Status status = WriteState(state_file, r.seq_base);
    if (!status.ok()) ABSL_RAW_LOG(ERROR, "disk queue: %s", status.ToString().c_str());
  }
  if (!r.segments.empty()) {
    ABSL_RAW_LOG(INFO, "disk queue: %s: recovered %llu events in %zu segments",
                 options.path.c_str(), static_cast<unsigned long long>(r.last_index),
                 r.segments.size());
  }
  return recovered;
}

}  // namespace

absl::StatusOr<std::unique_ptr<DiskQueue>> DiskQueue::Create(const DiskOptions& options) {
  std::vector<absl::Status> problems;
  if (absl::Status path = PreflightDiskPath(options); !path.ok()) problems.push_back(path);
  for (const absl::Status& problem : ValidateDiskOptions(options)) problems.push_back(problem);
  if (!problems.empty()) {
    return absl::InvalidArgumentError(absl::StrJoin(
        problems, "; ",
        [](std::string* out, const absl::Status& s) { absl::StrAppend(out, s.message()); }));
  }
  DiskIo* const io = options.io;
  auto key = [](const absl::Status& status) {
    return absl::Status(status.code(), absl::StrCat("shipper.queue.disk.path: ", status.message()));
  };
  if (absl::Status created = io->CreateDirs(options.path); !created.ok()) return key(created);
  absl::StatusOr<std::unique_ptr<DiskFile>> dir = io->Open(options.path, OpenMode::kDirectory);
  if (!dir.ok()) return key(dir.status());
  // Two queues on one directory would delete each other's segments. The lock goes with dir.
  if (absl::Status locked = (*dir)->Lock(); !locked.ok()) {
    if (!absl::IsFailedPrecondition(locked)) return key(locked);
    return absl::FailedPreconditionError(absl::StrCat("shipper.queue.disk.path: ", options.path,
                                                      " is in use by another disk queue"));
  }
  absl::StatusOr<std::unique_ptr<DiskFile>> state =
      io->Open(options.path + "/" + kStateFile, OpenMode::kReadWrite);
  if (!state.ok()) return key(state.status());
  absl::StatusOr<internal::Recovery> recovered = Recover(options, **state);
  if (!recovered.ok()) return recovered.status();
  return std::unique_ptr<DiskQueue>(
      new DiskQueueImpl(options, *std::move(dir), *std::move(state), *std::move(recovered)));
}

}  // namespace shipper::queue
