#include "tests/invariant/publisher.h"

#include <algorithm>

#include "absl/time/clock.h"

namespace shipper::testing {

namespace pb = elastic::agent::shipper::v1::messages;

namespace {

// Shipper restarts on the same address within a second: reconnect fast, not after gRPC's
// default backoff of up to two minutes, nor after the resolver's minimum time between resolutions
// (a channel that failed to connect resolves again first: it waited 5 s here). Not
// GRPC_ARG_MIN_RECONNECT_BACKOFF_MS: that is how long a connection attempt may take, and short it
// cut the handshakes with a just-started Shipper.
std::shared_ptr<grpc::Channel> FastReconnectChannel(const std::string& address) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 50);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 200);
  args.SetInt(GRPC_ARG_DNS_MIN_TIME_BETWEEN_RESOLUTIONS_MS, 20);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
}

}  // namespace

Publisher::Publisher(const std::string& address, EventMaker make_event, int batch,
                     double events_per_second)
    : make_event_(std::move(make_event)),
      batch_(batch),
      events_per_second_(events_per_second),
      start_(absl::Now()),
      channel_(FastReconnectChannel(address)),
      stub_(elastic::agent::shipper::v1::Producer::NewStub(channel_)) {
  publish_thread_ = std::thread([this] { PublishLoop(); });
  follow_thread_ = std::thread([this] { FollowLoop(); });
}

Publisher::~Publisher() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
    if (following_ != nullptr) following_->TryCancel();
  }
  publish_thread_.join();
  follow_thread_.join();
}

void Publisher::StopNewEvents() {
  absl::MutexLock lock(&mu_);
  stop_new_ = true;
}

uint64_t Publisher::published() const {
  absl::MutexLock lock(&mu_);
  return next_seq_;
}

bool Publisher::AllPersisted() const {
  absl::MutexLock lock(&mu_);
  if (!stop_new_ || !to_send_.empty() || uuid_.empty()) return false;
  const Process& process = processes_.at(uuid_);
  return process.accepted.empty() || process.accepted.back().first <= process.persisted;
}

PersistedSample Publisher::LastPersisted() const {
  absl::MutexLock lock(&mu_);
  return last_;
}

std::vector<uint64_t> Publisher::SeqsCoveredBy(const PersistedSample& sample) const {
  absl::MutexLock lock(&mu_);
  std::vector<uint64_t> seqs;
  auto it = processes_.find(sample.uuid);
  if (it == processes_.end()) return seqs;
  for (const auto& [index, seq] : it->second.accepted) {
    if (index > sample.index) break;
    seqs.push_back(seq);
  }
  return seqs;
}

int Publisher::processes_seen() const {
  absl::MutexLock lock(&mu_);
  int seen = 0;
  for (const auto& [uuid, process] : processes_) seen += !process.accepted.empty();
  return seen;
}

void Publisher::Rewind() {
  if (uuid_.empty()) return;
  const Process& process = processes_[uuid_];
  std::vector<uint64_t> again;
  for (const auto& [index, seq] : process.accepted) {
    if (index > process.persisted) again.push_back(seq);
  }
  to_send_.insert(to_send_.begin(), again.begin(), again.end());
  uuid_.clear();
}

void Publisher::PublishLoop() {
  std::vector<uint64_t> seqs;
  while (true) {
    std::string uuid;
    {
      absl::MutexLock lock(&mu_);
      if (stop_) return;
      if (!stop_new_) {
        const auto allowed =
            static_cast<uint64_t>(events_per_second_ * absl::ToDoubleSeconds(absl::Now() - start_));
        while (next_seq_ < allowed && to_send_.size() < static_cast<size_t>(batch_)) {
          to_send_.push_back(next_seq_++);
        }
      }
      seqs.assign(to_send_.begin(),
                  to_send_.begin() + std::min(to_send_.size(), static_cast<size_t>(batch_)));
      uuid = uuid_;
    }
    if (seqs.empty()) {
      absl::SleepFor(absl::Milliseconds(2));  // the pace of new events
      continue;
    }
    pb::PublishRequest request;
    request.set_uuid(uuid);
    for (uint64_t seq : seqs) *request.add_events() = make_event_(seq);
    pb::PublishReply reply;
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(2)));
    const grpc::Status status = stub_->PublishEvents(&context, request, &reply);
    if (!status.ok() && status.error_code() != grpc::StatusCode::FAILED_PRECONDITION) {
      absl::SleepFor(absl::Milliseconds(20));  // Shipper down or restarting: try again soon
      continue;
    }
    absl::MutexLock lock(&mu_);
    if (!status.ok()) {
      Rewind();  // a new process: what the old one had not persisted is ours to resend
      continue;
    }
    if (reply.uuid() != uuid_) {
      Rewind();  // (a no-op on first contact, the only way to meet a new process unrefused)
      uuid_ = reply.uuid();
    }
    Process& process = processes_[uuid_];
    const uint64_t first = reply.accepted_index() - reply.accepted_count() + 1;
    for (uint32_t i = 0; i < reply.accepted_count(); ++i) {
      process.accepted.emplace_back(first + i, seqs[i]);
      to_send_.pop_front();
    }
  }
}

void Publisher::FollowLoop() {
  pb::PersistedIndexRequest request;
  request.mutable_polling_interval()->set_nanos(5 * 1000 * 1000);
  while (true) {
    grpc::ClientContext context;
    {
      absl::MutexLock lock(&mu_);
      if (stop_) return;
      following_ = &context;
    }
    std::unique_ptr<grpc::ClientReader<pb::PersistedIndexReply>> reader =
        stub_->PersistedIndex(&context, request);
    pb::PersistedIndexReply reply;
    while (reader->Read(&reply)) {
      absl::MutexLock lock(&mu_);
      Process& process = processes_[reply.uuid()];
      process.persisted = std::max(process.persisted, reply.persisted_index());
      last_ = {reply.uuid(), process.persisted};
    }
    reader->Finish();
    {
      absl::MutexLock lock(&mu_);
      following_ = nullptr;
      if (stop_) return;
    }
    absl::SleepFor(absl::Milliseconds(20));  // Shipper down or restarting: follow again soon
  }
}

}  // namespace shipper::testing
