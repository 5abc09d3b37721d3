// What decoding a PublishRequest costs, per event, by how much of it a server decodes:
//
//   BM_ParseHeap      full protobuf parse, heap allocated (a default gRPC service)
//   BM_ParseArena     full protobuf parse into an arena (null_server, Shipper today)
//   BM_Envelope       uuid + events counted, event bytes skipped (null_server --decode=envelope)
//   BM_ValidateWire   every event walked against the schema (tags, lengths, UTF-8 of strings,
//                     nesting) without building messages: what a server pays to keep events
//                     opaque yet refuse malformed ones at the door
//
//   bazel run -c opt //tests/load:decode_benchmark -- --benchmark_counters_tabular=true
#include <string>

#include "benchmark/benchmark.h"
#include "google/protobuf/arena.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/stubs/common.h"
#include "google/protobuf/wire_format_lite.h"
#include "proto/messages.pb.h"
#include "tests/load/event_shapes.h"

namespace shipper::load {
namespace {

namespace msg = ::elastic::agent::shipper::v1::messages;
using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedInputStream;

std::string Request(EventShape shape, int events) {
  std::string out;
  for (int i = 0; i < events; ++i) out += MakeSerializedEventEntry(shape, i);
  return out;
}

EventShape ShapeOf(const benchmark::State& state) { return static_cast<EventShape>(state.range(0)); }
constexpr int kBatch = 500;

void Finish(benchmark::State& state, const std::string& wire) {
  state.SetItemsProcessed(state.iterations() * kBatch);
  state.SetBytesProcessed(state.iterations() * wire.size());
  state.SetLabel(std::string(EventShapeName(ShapeOf(state))));
}

void BM_ParseHeap(benchmark::State& state) {
  const std::string wire = Request(ShapeOf(state), kBatch);
  for (auto _ : state) {
    msg::PublishRequest request;
    benchmark::DoNotOptimize(request.ParseFromString(wire));
  }
  Finish(state, wire);
}

void BM_ParseArena(benchmark::State& state) {
  const std::string wire = Request(ShapeOf(state), kBatch);
  // Shipper's arena growth (shipper/producer_service.cc).
  google::protobuf::ArenaOptions options;
  options.start_block_size = 4096;
  options.max_block_size = 256 << 10;
  size_t used = 0;
  for (auto _ : state) {
    google::protobuf::Arena arena(options);
    auto* request = google::protobuf::Arena::CreateMessage<msg::PublishRequest>(&arena);
    benchmark::DoNotOptimize(request->ParseFromString(wire));
    used = arena.SpaceUsed();
  }
  // What the queue's byte limit counts per event (arena.SpaceUsed() / events).
  state.counters["arena_bytes_per_event"] = static_cast<double>(used) / kBatch;
  Finish(state, wire);
}

bool ScanEnvelope(const std::string& wire, int* events) {
  CodedInputStream in(reinterpret_cast<const uint8_t*>(wire.data()), static_cast<int>(wire.size()));
  while (uint32_t tag = in.ReadTag()) {
    if (tag == (2 << 3 | 2)) {
      uint32_t length;
      if (!in.ReadVarint32(&length) || !in.Skip(static_cast<int>(length))) return false;
      ++*events;
    } else if (!WireFormatLite::SkipField(&in, tag)) {
      return false;
    }
  }
  return in.ConsumedEntireMessage();
}

void BM_Envelope(benchmark::State& state) {
  const std::string wire = Request(ShapeOf(state), kBatch);
  for (auto _ : state) {
    int events = 0;
    benchmark::DoNotOptimize(ScanEnvelope(wire, &events));
  }
  Finish(state, wire);
}

// Schema-aware validation of the wire bytes. Each function consumes one message body.
enum class Kind { kEvent, kTimestamp, kStrings, kStruct, kMapEntry, kValue, kList };

bool Validate(CodedInputStream* in, Kind kind, int depth);

bool Nested(CodedInputStream* in, Kind kind, int depth) {
  if (depth > 64) return false;
  int length;
  if (!in->ReadVarintSizeAsInt(&length)) return false;
  auto limit = in->PushLimit(length);
  bool ok = Validate(in, kind, depth + 1) && in->ConsumedEntireMessage();
  in->PopLimit(limit);
  return ok;
}

bool Utf8(CodedInputStream* in) {
  int length;
  const void* data;
  int size;
  if (!in->ReadVarintSizeAsInt(&length)) return false;
  // Strings are short: validate in place when the buffer holds them, else copy.
  if (in->GetDirectBufferPointer(&data, &size) && size >= length) {
    bool ok = google::protobuf::internal::IsStructurallyValidUTF8(static_cast<const char*>(data),
                                                                   length);
    return ok && in->Skip(length);
  }
  std::string s;
  return in->ReadString(&s, length) && google::protobuf::internal::IsStructurallyValidUTF8(s);
}

bool Validate(CodedInputStream* in, Kind kind, int depth) {
  while (uint32_t tag = in->ReadTag()) {
    const int field = static_cast<int>(tag >> 3);
    const int type = static_cast<int>(tag & 7);
    bool ok = true;
    if (type == 2) {
      switch (kind) {
        case Kind::kEvent:
          ok = field == 1   ? Nested(in, Kind::kTimestamp, depth)
               : field <= 3 ? Nested(in, Kind::kStrings, depth)
               : field <= 5 ? Nested(in, Kind::kStruct, depth)
                            : WireFormatLite::SkipField(in, tag);
          break;
        case Kind::kStrings:
          ok = Utf8(in);
          break;
        case Kind::kStruct:
          ok = field == 1 ? Nested(in, Kind::kMapEntry, depth) : WireFormatLite::SkipField(in, tag);
          break;
        case Kind::kMapEntry:
          ok = field == 1 ? Utf8(in) : Nested(in, Kind::kValue, depth);
          break;
        case Kind::kValue:
          ok = field == 8    ? Utf8(in)
               : field == 10 ? Nested(in, Kind::kStruct, depth)
               : field == 11 ? Nested(in, Kind::kList, depth)
               : field == 12 ? Nested(in, Kind::kTimestamp, depth)
                             : WireFormatLite::SkipField(in, tag);
          break;
        case Kind::kList:
          ok = Nested(in, Kind::kValue, depth);
          break;
        case Kind::kTimestamp:
          ok = WireFormatLite::SkipField(in, tag);
          break;
      }
    } else {
      ok = WireFormatLite::SkipField(in, tag);
    }
    if (!ok) return false;
  }
  return true;
}

bool ValidateRequest(const std::string& wire, int* events) {
  CodedInputStream in(reinterpret_cast<const uint8_t*>(wire.data()), static_cast<int>(wire.size()));
  while (uint32_t tag = in.ReadTag()) {
    if (tag == (2 << 3 | 2)) {
      if (!Nested(&in, Kind::kEvent, 0)) return false;
      ++*events;
    } else if (!WireFormatLite::SkipField(&in, tag)) {
      return false;
    }
  }
  return in.ConsumedEntireMessage();
}

void BM_ValidateWire(benchmark::State& state) {
  const std::string wire = Request(ShapeOf(state), kBatch);
  int events = 0;
  if (!ValidateRequest(wire, &events) || events != kBatch) {
    state.SkipWithError("the validator rejects a valid request");
    return;
  }
  for (auto _ : state) {
    int n = 0;
    benchmark::DoNotOptimize(ValidateRequest(wire, &n));
  }
  Finish(state, wire);
}

#define SHAPES ->Arg(0)->Arg(1)->Arg(2)
BENCHMARK(BM_ParseHeap) SHAPES;
BENCHMARK(BM_ParseArena) SHAPES;
BENCHMARK(BM_Envelope) SHAPES;
BENCHMARK(BM_ValidateWire) SHAPES;

}  // namespace
}  // namespace shipper::load

BENCHMARK_MAIN();
