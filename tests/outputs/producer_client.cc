#include "tests/outputs/producer_client.h"

#include <chrono>

#include "absl/time/clock.h"
#include "grpcpp/grpcpp.h"
#include "rapidjson/document.h"
#include "tests/load/event_shapes.h"

namespace shipper::testing {

namespace pb = elastic::agent::shipper::v1::messages;

pb::Event TestEvent(uint64_t seq) {
  pb::Event event;
  load::MakeEvent(load::EventShape::kFilebeat, seq, &event);
  (*event.mutable_fields()->mutable_data())["test_seq"].set_uint64_value(seq);
  return event;
}

int64_t TestSeq(const std::string& json) {
  rapidjson::Document doc;
  doc.Parse(json.c_str());
  if (doc.HasParseError() || !doc.IsObject() || !doc.HasMember("test_seq")) return -1;
  return static_cast<int64_t>(doc["test_seq"].GetUint64());
}

ProducerClient::ProducerClient(const std::string& address)
    : stub_(elastic::agent::shipper::v1::Producer::NewStub(
          grpc::CreateChannel(address, grpc::InsecureChannelCredentials()))) {}

uint64_t ProducerClient::Publish(uint64_t first, uint64_t count, int batch, absl::Time deadline) {
  uint64_t next = first;
  while (next < first + count && absl::Now() < deadline) {
    pb::PublishRequest request;
    request.set_uuid(uuid_);
    for (uint64_t seq = next; seq < std::min(next + batch, first + count); ++seq) {
      *request.add_events() = TestEvent(seq);
    }
    pb::PublishReply reply;
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
    grpc::Status status = stub_->PublishEvents(&context, request, &reply);
    if (!status.ok()) {
      absl::SleepFor(absl::Milliseconds(50));
      continue;
    }
    uuid_ = reply.uuid();
    next += reply.accepted_count();
    if (reply.accepted_count() > 0) last_index_ = reply.accepted_index();
  }
  return next - first;
}

uint64_t ProducerClient::AwaitPersisted(uint64_t index, absl::Time deadline,
                                        std::atomic<uint64_t>* seen) {
  pb::PersistedIndexRequest request;
  request.mutable_polling_interval()->set_nanos(10 * 1000 * 1000);
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(deadline));
  std::unique_ptr<grpc::ClientReader<pb::PersistedIndexReply>> reader =
      stub_->PersistedIndex(&context, request);
  pb::PersistedIndexReply reply;
  uint64_t last = 0;
  while (reader->Read(&reply)) {
    last = reply.persisted_index();
    if (seen != nullptr) seen->store(last);
    if (last >= index) break;
  }
  context.TryCancel();
  return last;
}

}  // namespace shipper::testing
