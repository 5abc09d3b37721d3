#include "tests/load/load_generator.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <queue>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "proto/producer.grpc.pb.h"
#include "tests/load/process_cpu.h"

namespace shipper::load {
namespace {

namespace v1 = ::elastic::agent::shipper::v1;
namespace msg = ::elastic::agent::shipper::v1::messages;

constexpr char kPublishMethod[] = "/elastic.agent.shipper.v1.Producer/PublishEvents";
using PublishStub = grpc::TemplatedGenericStub<grpc::ByteBuffer, msg::PublishReply>;

gpr_timespec ToGpr(absl::Time t) {
  if (t == absl::InfiniteFuture()) return gpr_inf_future(GPR_CLOCK_REALTIME);
  const timespec ts = absl::ToTimespec(t);
  gpr_timespec g;
  g.tv_sec = ts.tv_sec;
  g.tv_nsec = static_cast<int32_t>(ts.tv_nsec);
  g.clock_type = GPR_CLOCK_REALTIME;
  return g;
}

// Events encoded once as PublishRequest.events entries, laid out so that any batch of up to
// `batch` consecutive events (wrapping around the pool) is one contiguous byte range.
class EventPool {
 public:
  EventPool(EventShape shape, int pool_events, int batch) : size_(pool_events) {
    offsets_.reserve(pool_events + batch + 1);
    offsets_.push_back(0);
    for (int i = 0; i < pool_events + batch; ++i) {
      bytes_ += MakeSerializedEventEntry(shape, i % pool_events);
      offsets_.push_back(bytes_.size());
    }
    mean_event_bytes_ = static_cast<double>(offsets_[pool_events]) / pool_events;
  }

  // Events [first, first + n) of the endless sequence, n <= batch. The memory lives as long as
  // the pool.
  grpc::Slice Range(uint64_t first, uint32_t n) const {
    const size_t start = first % size_;
    return grpc::Slice(bytes_.data() + offsets_[start], offsets_[start + n] - offsets_[start],
                       grpc::Slice::STATIC_SLICE);
  }

  double mean_event_bytes() const { return mean_event_bytes_; }

 private:
  const int size_;
  std::string bytes_;
  std::vector<size_t> offsets_;
  double mean_event_bytes_ = 0;
};

std::string UuidField(const std::string& uuid) {
  std::string out;
  if (uuid.empty()) return out;
  google::protobuf::io::StringOutputStream raw(&out);
  google::protobuf::io::CodedOutputStream coded(&raw);
  coded.WriteTag(msg::PublishRequest::kUuidFieldNumber << 3 | 2);
  coded.WriteVarint32(static_cast<uint32_t>(uuid.size()));
  coded.WriteString(uuid);
  return out;
}

class Generator;

// One call slot: at most one call in flight, working through one batch at a time.
struct Slot {
  PublishStub* stub = nullptr;
  uint64_t first = 0;  // the batch's first event in the endless pool sequence
  uint32_t n = 0;      // events in the batch
  uint32_t done = 0;   // events of the batch accepted so far
  absl::Time sent;
  std::unique_ptr<grpc::ClientContext> context;
  grpc::ByteBuffer request;
  msg::PublishReply reply;
  grpc::Status status;
  std::unique_ptr<grpc::ClientAsyncResponseReader<msg::PublishReply>> call;
};

// A completion-queue thread driving its share of the slots.
class Worker {
 public:
  Worker(Generator* gen, double rate) : gen_(gen), rate_(rate) {}
  void AddSlot(std::unique_ptr<Slot> slot) { slots_.push_back(std::move(slot)); }
  void Run(absl::Time start);

 private:
  struct Retry {
    absl::Time at;
    Slot* slot;
    bool operator>(const Retry& o) const { return at > o.at; }
  };

  bool StartBatch(Slot* slot);  // false when there is no more work
  void Send(Slot* slot);
  void OnComplete(Slot* slot);
  void RetryLater(Slot* slot, absl::Duration delay) { retries_.push({absl::Now() + delay, slot}); }

  Generator* const gen_;
  const double rate_;  // this worker's events/s; 0 = as fast as possible
  grpc::CompletionQueue cq_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::vector<Slot*> idle_;  // rate mode: slots waiting for their next send time
  std::priority_queue<Retry, std::vector<Retry>, std::greater<Retry>> retries_;
  absl::Time next_send_;
  int inflight_ = 0;
  bool out_of_work_ = false;
};

class Generator {
 public:
  explicit Generator(const LoadOptions& options)
      : options_(options), pool_(options.shape, options.pool_events, options.batch) {}

  absl::StatusOr<LoadResult> Run();

  // Claims the next batch; false when the run has no more to send.
  bool Claim(uint64_t* first, uint32_t* n) {
    if (aborted_.load(std::memory_order_relaxed)) return false;
    if (options_.duration > absl::ZeroDuration() && absl::Now() >= end_) return false;
    const uint64_t c = next_event_.fetch_add(options_.batch, std::memory_order_relaxed);
    uint64_t count = options_.batch;
    if (options_.events > 0) {
      if (c >= options_.events) return false;
      count = std::min<uint64_t>(count, options_.events - c);
    }
    *first = c;
    *n = static_cast<uint32_t>(count);
    return true;
  }

  grpc::ByteBuffer MakeRequest(uint64_t first, uint32_t n) {
    grpc::Slice slices[2];
    size_t k = 0;
    {
      absl::MutexLock lock(&uuid_mu_);
      if (!uuid_field_.empty()) slices[k++] = grpc::Slice(uuid_field_);
    }
    slices[k++] = pool_.Range(first, n);
    return grpc::ByteBuffer(slices, k);
  }

  void LearnUuid(const std::string& uuid) {
    absl::MutexLock lock(&uuid_mu_);
    if (uuid != uuid_) {
      uuid_ = uuid;
      uuid_field_ = UuidField(uuid);
    }
  }
  void ForgetUuid() { LearnUuid(""); }

  void CountCall(uint32_t accepted, uint32_t sent, absl::Duration rtt) {
    calls_.fetch_add(1, std::memory_order_relaxed);
    {
      absl::MutexLock lock(&replies_mu_);
      replies_.Add(rtt);
    }
    if (accepted < sent) {
      partial_.fetch_add(1, std::memory_order_relaxed);
      resent_.fetch_add(sent - accepted, std::memory_order_relaxed);
    }
  }
  void CountError(const grpc::Status& status, uint32_t unsent) {
    resent_.fetch_add(unsent, std::memory_order_relaxed);
    if (errors_.fetch_add(1, std::memory_order_relaxed) + 1 >= options_.max_errors) {
      aborted_.store(true, std::memory_order_relaxed);
    }
    absl::MutexLock lock(&uuid_mu_);
    if (first_error_.empty()) {
      first_error_ =
          absl::StrCat("PublishEvents: code ", status.error_code(), ": ", status.error_message());
    }
  }

  bool aborted() const { return aborted_.load(std::memory_order_relaxed); }
  // With drop_at_end, once the duration is over: what is not accepted yet is not resent.
  bool dropping() const { return options_.drop_at_end && absl::Now() >= end_; }
  const LoadOptions& options() const { return options_; }
  LatencyTracker& tracker() { return tracker_; }

 private:
  absl::Status Connect();
  void FollowPersisted();
  void ReportProgress(absl::Time start);

  const LoadOptions options_;
  const EventPool pool_;
  std::vector<std::shared_ptr<grpc::Channel>> channels_;
  std::vector<std::unique_ptr<PublishStub>> stubs_;
  LatencyTracker tracker_;
  absl::Time end_ = absl::InfiniteFuture();
  std::atomic<uint64_t> next_event_{0};
  std::atomic<uint64_t> calls_{0}, partial_{0}, resent_{0}, errors_{0};
  std::atomic<bool> aborted_{false};

  absl::Mutex replies_mu_;
  LatencyRecorder replies_ ABSL_GUARDED_BY(replies_mu_);

  absl::Mutex uuid_mu_;
  std::string uuid_ ABSL_GUARDED_BY(uuid_mu_);
  std::string uuid_field_ ABSL_GUARDED_BY(uuid_mu_);
  std::string first_error_ ABSL_GUARDED_BY(uuid_mu_);

  // The PersistedIndex stream.
  std::shared_ptr<grpc::Channel> stream_channel_;
  absl::Notification stream_started_;
  absl::Notification stop_stream_;
  absl::Mutex stream_mu_;
  grpc::ClientContext* stream_context_ ABSL_GUARDED_BY(stream_mu_) = nullptr;
};

bool Worker::StartBatch(Slot* slot) {
  if (out_of_work_ || !gen_->Claim(&slot->first, &slot->n)) {
    out_of_work_ = true;
    return false;
  }
  slot->done = 0;
  Send(slot);
  return true;
}

void Worker::Send(Slot* slot) {
  slot->context = std::make_unique<grpc::ClientContext>();
  slot->context->set_deadline(absl::ToChronoTime(absl::Now() + gen_->options().call_timeout));
  slot->request = gen_->MakeRequest(slot->first + slot->done, slot->n - slot->done);
  slot->reply.Clear();
  slot->call =
      slot->stub->PrepareUnaryCall(slot->context.get(), kPublishMethod, slot->request, &cq_);
  slot->sent = absl::Now();
  slot->call->StartCall();
  slot->call->Finish(&slot->reply, &slot->status, slot);
  ++inflight_;
}

void Worker::OnComplete(Slot* slot) {
  --inflight_;
  const absl::Time now = absl::Now();
  const uint32_t sent = slot->n - slot->done;
  if (!slot->status.ok()) {
    gen_->CountError(slot->status, sent);
    if (gen_->dropping()) return;
    if (slot->status.error_code() == grpc::StatusCode::FAILED_PRECONDITION) gen_->ForgetUuid();
    RetryLater(slot, absl::Milliseconds(10));
    return;
  }
  const uint32_t accepted = std::min(slot->reply.accepted_count(), sent);
  if (slot->done == 0 || accepted > 0) gen_->LearnUuid(slot->reply.uuid());
  gen_->tracker().OnAccepted(slot->reply.accepted_index(), accepted, slot->sent, now);
  gen_->CountCall(accepted, sent, now - slot->sent);
  slot->done += accepted;
  if (slot->done < slot->n) {
    if (gen_->dropping()) return;
    if (accepted == 0) {
      RetryLater(slot, absl::Milliseconds(1));
    } else {
      Send(slot);
    }
    return;
  }
  if (rate_ > 0) {
    idle_.push_back(slot);
  } else {
    StartBatch(slot);
  }
}

void Worker::Run(absl::Time start) {
  next_send_ = start;
  for (auto& slot : slots_) {
    if (rate_ > 0) {
      idle_.push_back(slot.get());
    } else if (!StartBatch(slot.get())) {
      break;
    }
  }
  while (true) {
    absl::Time now = absl::Now();
    while (!retries_.empty() && retries_.top().at <= now) {
      Slot* slot = retries_.top().slot;
      retries_.pop();
      Send(slot);
    }
    if (rate_ > 0) {
      while (!idle_.empty() && !out_of_work_ && next_send_ <= now) {
        Slot* slot = idle_.back();
        idle_.pop_back();
        if (!StartBatch(slot)) break;
        next_send_ += absl::Seconds(slot->n / rate_);
      }
    }
    if (gen_->aborted() || gen_->dropping()) {
      out_of_work_ = true;
      while (!retries_.empty()) retries_.pop();
    }
    // Fast mode starts work only from completions; rate mode also from idle slots.
    if (inflight_ == 0 && retries_.empty() && (rate_ == 0 || out_of_work_)) break;
    absl::Time deadline = now + absl::Milliseconds(100);  // re-check the run's end now and then
    if (!retries_.empty()) deadline = std::min(deadline, retries_.top().at);
    if (rate_ > 0 && !idle_.empty() && !out_of_work_) deadline = std::min(deadline, next_send_);
    void* tag = nullptr;
    bool ok = false;
    const auto next = cq_.AsyncNext(&tag, &ok, ToGpr(deadline));
    if (next == grpc::CompletionQueue::GOT_EVENT) {
      OnComplete(static_cast<Slot*>(tag));
    } else if (next == grpc::CompletionQueue::SHUTDOWN) {
      break;
    }
    // In rate mode the run ends when no more batches can be claimed; find out without a slot.
    if (rate_ > 0 && !out_of_work_ && gen_->options().duration > absl::ZeroDuration() &&
        absl::Now() >= start + gen_->options().duration) {
      out_of_work_ = true;
    }
  }
  cq_.Shutdown();
  void* tag;
  bool ok;
  while (cq_.Next(&tag, &ok)) {
  }
}

absl::Status Generator::Connect() {
  const absl::Time deadline = absl::Now() + options_.connect_timeout;
  for (int i = 0; i <= options_.channels; ++i) {
    grpc::ChannelArguments args;
    // Own subchannel pool and a distinct argument: each channel is its own TCP connection.
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetInt("shipper.load.channel", i);
    args.SetMaxReceiveMessageSize(-1);
    auto channel =
        grpc::CreateCustomChannel(options_.target, grpc::InsecureChannelCredentials(), args);
    if (!channel->WaitForConnected(absl::ToChronoTime(deadline))) {
      return absl::UnavailableError(absl::StrCat("cannot connect to ", options_.target, " within ",
                                                 absl::FormatDuration(options_.connect_timeout)));
    }
    if (i == options_.channels) {
      stream_channel_ = channel;  // one more for PersistedIndex, apart from the publishers
    } else {
      stubs_.push_back(std::make_unique<PublishStub>(channel));
      channels_.push_back(std::move(channel));
    }
  }
  return absl::OkStatus();
}

void Generator::FollowPersisted() {
  auto stub = v1::Producer::NewStub(stream_channel_);
  msg::PersistedIndexRequest request;
  const timespec ts = absl::ToTimespec(options_.poll_interval);
  request.mutable_polling_interval()->set_seconds(ts.tv_sec);
  request.mutable_polling_interval()->set_nanos(static_cast<int32_t>(ts.tv_nsec));
  while (!stop_stream_.HasBeenNotified()) {
    grpc::ClientContext context;
    {
      absl::MutexLock lock(&stream_mu_);
      stream_context_ = &context;
    }
    auto reader = stub->PersistedIndex(&context, request);
    msg::PersistedIndexReply reply;
    while (reader->Read(&reply)) {
      tracker_.OnPersisted(reply.persisted_index(), absl::Now());
      if (!stream_started_.HasBeenNotified()) stream_started_.Notify();
    }
    grpc::Status status = reader->Finish();
    {
      absl::MutexLock lock(&stream_mu_);
      stream_context_ = nullptr;
    }
    // A server may end the stream (or fail it); follow it again until the run is over.
    if (!stop_stream_.HasBeenNotified()) {
      stop_stream_.WaitForNotificationWithTimeout(status.ok() ? absl::Milliseconds(1)
                                                              : absl::Milliseconds(100));
    }
  }
}

void Generator::ReportProgress(absl::Time start) {
  LatencyTracker::Counts last = tracker_.GetCounts();
  absl::Time last_time = absl::Now();
  while (!stop_stream_.WaitForNotificationWithTimeout(absl::Seconds(1))) {
    const LatencyTracker::Counts c = tracker_.GetCounts();
    const absl::Time now = absl::Now();
    const double secs = absl::ToDoubleSeconds(now - last_time);
    LoadProgress p;
    p.elapsed = now - start;
    p.accepted_per_sec = (c.accepted_events - last.accepted_events) / secs;
    p.persisted_per_sec = (c.persisted_events - last.persisted_events) / secs;
    p.lag_events = c.highest_accepted_index > c.persisted_index
                       ? c.highest_accepted_index - c.persisted_index
                       : 0;
    p.window = tracker_.TakeWindow();
    p.errors = errors_.load(std::memory_order_relaxed);
    options_.on_progress(p);
    last = c;
    last_time = now;
  }
}

absl::StatusOr<LoadResult> Generator::Run() {
  if (absl::Status s = Connect(); !s.ok()) return s;
  std::thread stream([this] { FollowPersisted(); });
  const bool stream_ok = stream_started_.WaitForNotificationWithTimeout(options_.connect_timeout);
  if (!stream_ok) {
    stop_stream_.Notify();
    {
      absl::MutexLock lock(&stream_mu_);
      if (stream_context_ != nullptr) stream_context_->TryCancel();
    }
    stream.join();
    return absl::UnavailableError(absl::StrCat("no PersistedIndex reply from ", options_.target,
                                               " within ",
                                               absl::FormatDuration(options_.connect_timeout)));
  }

  if (options_.idle) {
    const absl::Time start = absl::Now();
    const double cpu_start = ProcessCpuSeconds();
    absl::SleepFor(options_.duration);
    LoadResult r;
    r.client_cpu_sec = ProcessCpuSeconds() - cpu_start;
    r.drained = true;
    r.persist_time = r.accept_time = absl::Now() - start;
    stop_stream_.Notify();
    {
      absl::MutexLock lock(&stream_mu_);
      if (stream_context_ != nullptr) stream_context_->TryCancel();
    }
    stream.join();
    return r;
  }

  const int threads = std::max(1, std::min(options_.threads, options_.channels));
  std::vector<std::unique_ptr<Worker>> workers;
  for (int t = 0; t < threads; ++t) {
    workers.push_back(std::make_unique<Worker>(this, options_.rate / threads));
  }
  for (int i = 0; i < options_.channels * options_.inflight; ++i) {
    auto slot = std::make_unique<Slot>();
    slot->stub = stubs_[i % options_.channels].get();
    workers[(i % options_.channels) % threads]->AddSlot(std::move(slot));
  }

  const double cpu_start = ProcessCpuSeconds();
  const absl::Time start = absl::Now();
  if (options_.duration > absl::ZeroDuration()) end_ = start + options_.duration;
  std::thread progress;
  if (options_.on_progress) progress = std::thread([this, start] { ReportProgress(start); });
  std::vector<std::thread> running;
  for (auto& w : workers) running.emplace_back([&w, start] { w->Run(start); });
  for (auto& t : running) t.join();

  LoadResult r;
  const absl::Time drain_deadline = absl::Now() + options_.drain_timeout;
  while (true) {
    LatencyTracker::Counts c = tracker_.GetCounts();
    if (c.persisted_events >= c.accepted_events) {
      r.drained = true;
      break;
    }
    if (absl::Now() >= drain_deadline) break;
    absl::SleepFor(absl::Microseconds(200));
  }
  const double cpu_end = ProcessCpuSeconds();
  stop_stream_.Notify();
  {
    absl::MutexLock lock(&stream_mu_);
    if (stream_context_ != nullptr) stream_context_->TryCancel();
  }
  stream.join();
  if (progress.joinable()) progress.join();

  const LatencyTracker::Counts c = tracker_.GetCounts();
  r.events_accepted = c.accepted_events;
  r.events_persisted = c.persisted_events;
  r.calls = calls_.load();
  r.partial_replies = partial_.load();
  r.resent_events = resent_.load();
  r.errors = errors_.load();
  r.event_bytes = pool_.mean_event_bytes();
  r.accept_time = c.accepted_events > 0 ? c.last_accepted - start : absl::ZeroDuration();
  r.persist_time = c.persisted_events > 0 ? c.last_persisted - start : absl::ZeroDuration();
  if (r.accept_time > absl::ZeroDuration()) {
    r.accepted_per_sec = r.events_accepted / absl::ToDoubleSeconds(r.accept_time);
  }
  if (r.persist_time > absl::ZeroDuration()) {
    r.persisted_per_sec = r.events_persisted / absl::ToDoubleSeconds(r.persist_time);
  }
  r.latency = tracker_.Summary();
  {
    absl::MutexLock lock(&replies_mu_);
    r.reply_latency = replies_.Summarize();
  }
  r.client_cpu_sec = cpu_end - cpu_start;
  {
    absl::MutexLock lock(&uuid_mu_);
    r.server_uuid = uuid_;
    r.first_error = first_error_;
  }
  if (aborted_.load()) {
    return absl::AbortedError(
        absl::StrCat("gave up after ", r.errors, " failed calls; the first: ", r.first_error));
  }
  return r;
}

double Ms(absl::Duration d) { return absl::ToDoubleMilliseconds(d); }

std::string JsonEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      absl::StrAppendFormat(&out, "\\u%04x", c);
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<LoadResult> RunLoad(const LoadOptions& options) {
  if (options.target.empty()) return absl::InvalidArgumentError("no target: set HOST:PORT");
  if (options.channels < 1 || options.inflight < 1 || options.batch < 1 ||
      options.pool_events < 1 || options.threads < 1) {
    return absl::InvalidArgumentError(
        "channels, inflight, batch, pool_events and threads must all be at least 1");
  }
  if (options.idle && options.duration <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("an idle run needs a duration");
  }
  if (options.events == 0 && options.duration <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("set events or duration (or both) so the run ends");
  }
  if (options.rate < 0) return absl::InvalidArgumentError("rate must be >= 0 (0: no limit)");
  Generator generator(options);
  return generator.Run();
}

std::string LoadResultJson(const LoadOptions& o, const LoadResult& r) {
  return absl::StrFormat(
      "{\"target\": \"%s\", \"shape\": \"%s\", \"event_bytes\": %.0f, \"channels\": %d, "
      "\"inflight\": %d, \"batch\": %d, \"rate\": %.0f, \"events_accepted\": %d, "
      "\"events_persisted\": %d, \"calls\": %d, \"partial_replies\": %d, \"resent_events\": %d, "
      "\"errors\": %d, \"seconds\": %.3f, \"accepted_per_sec\": %.0f, "
      "\"persisted_per_sec\": %.0f, \"p50_ms\": %.3f, \"p90_ms\": %.3f, \"p99_ms\": %.3f, "
      "\"max_ms\": %.3f, \"reply_p50_ms\": %.3f, \"reply_p99_ms\": %.3f, \"client_cpu_sec\": %.3f, "
      "\"drained\": %s, \"first_error\": \"%s\"}",
      JsonEscape(o.target), EventShapeName(o.shape), r.event_bytes, o.channels, o.inflight, o.batch,
      o.rate, r.events_accepted, r.events_persisted, r.calls, r.partial_replies, r.resent_events,
      r.errors, absl::ToDoubleSeconds(r.persist_time), r.accepted_per_sec, r.persisted_per_sec,
      Ms(r.latency.p50), Ms(r.latency.p90), Ms(r.latency.p99), Ms(r.latency.max),
      Ms(r.reply_latency.p50), Ms(r.reply_latency.p99), r.client_cpu_sec,
      r.drained ? "true" : "false", JsonEscape(r.first_error));
}

std::string FormatProgress(const LoadProgress& p) {
  return absl::StrFormat(
      "%6.1fs  accepted %8.1fk ev/s  persisted %8.1fk ev/s  lag %8d ev  p50 %7.2f ms  "
      "p99 %7.2f ms  max %7.2f ms  errors %d",
      absl::ToDoubleSeconds(p.elapsed), p.accepted_per_sec / 1000, p.persisted_per_sec / 1000,
      p.lag_events, Ms(p.window.p50), Ms(p.window.p99), Ms(p.window.max), p.errors);
}

}  // namespace shipper::load
