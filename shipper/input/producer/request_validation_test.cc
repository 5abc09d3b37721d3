#include "shipper/input/producer/request_validation.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "proto/messages.pb.h"
#include "shipper/event/wire_event.h"

namespace shipper {
namespace {

namespace pb = elastic::agent::shipper::v1::messages;
using ::testing::HasSubstr;

// Fills `event`'s fields to nest `depth` levels: Structs, or ListValues below the top-level
// Struct.
void FillNested(size_t depth, bool lists, pb::Event* event) {
  pb::Value* value = &(*event->mutable_fields()->mutable_data())["top"];
  for (size_t level = 2; level <= depth; ++level) {
    if (lists) {
      value = value->mutable_list_value()->add_values();
    } else {
      value = &(*value->mutable_struct_value()->mutable_data())["a"];
    }
  }
  value->mutable_timestamp_value()->set_seconds(1);  // the deepest message a Value can hold
}

pb::Event Nested(size_t depth, bool lists) {
  pb::Event event;
  FillNested(depth, lists, &event);
  return event;
}

// A serialized request whose one event's fields nest `depth` Structs, built bytes-first (from
// the inside out, reversed) because protobuf's own serializer would recurse that deep.
std::string DeepRequestBytes(size_t depth) {
  std::string reversed;
  auto wrap = [&reversed](char tag) {
    size_t n = reversed.size();
    std::string varint;
    do {
      varint.push_back(static_cast<char>((n & 0x7F) | (n > 0x7F ? 0x80 : 0)));
      n >>= 7;
    } while (n > 0);
    reversed.append(varint.rbegin(), varint.rend());
    reversed.push_back(tag);
  };
  for (size_t level = depth; level >= 1; --level) {
    wrap(0x12);                 // entry.value (the Value so far, empty at the bottom)
    reversed += "a\x01\x0a";    // entry.key = "a", reversed
    wrap(0x0a);                 // Struct.data entry
    if (level > 1) wrap(0x52);  // Value.struct_value
  }
  wrap(0x2a);  // Event.fields
  wrap(0x12);  // PublishRequest.events
  return std::string(reversed.rbegin(), reversed.rend());
}

absl::Status Scan(const std::string& bytes, const RequestLimits& limits,
                  ScannedRequest* out = nullptr) {
  ScannedRequest scratch;
  return ScanPublishRequest(bytes, limits, out != nullptr ? out : &scratch);
}

absl::Status RoundTrip(const pb::PublishRequest& sent, const RequestLimits& limits) {
  return Scan(sent.SerializeAsString(), limits);
}

pb::Event Parsed(absl::string_view bytes) {
  pb::Event event;
  EXPECT_TRUE(event.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())));
  return event;
}

TEST(RequestValidationTest, AcceptsOrdinaryRequests) {
  pb::PublishRequest request;
  (*request.add_events()->mutable_fields()->mutable_data())["message"].set_string_value("hi");
  EXPECT_TRUE(RoundTrip(request, RequestLimits{}).ok());
}

TEST(RequestValidationTest, TooManyEventsNamesTheKey) {
  pb::PublishRequest request;
  for (int i = 0; i < 11; ++i) request.add_events();
  RequestLimits limits;
  limits.max_events_per_request = 10;
  absl::Status status = RoundTrip(request, limits);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("11 events"));
  EXPECT_THAT(status.message(), HasSubstr("shipper.server.max_events_per_request (10)"));
  request.mutable_events()->RemoveLast();
  EXPECT_TRUE(RoundTrip(request, limits).ok());
}

TEST(RequestValidationTest, NestingUpToTheLimitPassesOneMoreIsRefused) {
  for (size_t max : {size_t{1}, size_t{8}, size_t{64}, size_t{1000}}) {  // 1000: the most allowed
    RequestLimits limits;
    limits.max_nesting_depth = max;
    for (bool lists : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "max " << max << (lists ? " lists" : " structs"));
      pb::PublishRequest request;
      *request.add_events() = Nested(max, lists);
      EXPECT_TRUE(RoundTrip(request, limits).ok());
      *request.add_events() = Nested(max + 1, lists);
      absl::Status status = RoundTrip(request, limits);
      EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
      EXPECT_THAT(status.message(), HasSubstr("event 1: fields nest"));
      EXPECT_THAT(status.message(),
                  HasSubstr(absl::StrCat("shipper.server.max_nesting_depth (", max, ")")));
    }
  }
}

TEST(RequestValidationTest, EventsPastTheLimitAreCountedNotRead) {
  pb::PublishRequest request;
  request.set_uuid("u");
  for (int i = 0; i < 5; ++i) {
    (*request.add_events()->mutable_fields()->mutable_data())["n"].set_int64_value(i);
  }
  std::string bytes = request.SerializeAsString();
  RequestLimits limits;
  limits.max_events_per_request = 4;
  EXPECT_THAT(Scan(bytes, limits).message(), HasSubstr("request has 5 events"));
  // Past the limit events are not read: a malformed one is not what the refusal is about.
  bytes += std::string("\x12\x02\xff\xff", 4);
  EXPECT_THAT(Scan(bytes, limits).message(), HasSubstr("request has 6 events"));
  // A million empty events.
  std::string tiny;
  for (int i = 0; i < 1000000; ++i) tiny += std::string("\x12\x00", 2);
  EXPECT_THAT(Scan(tiny, RequestLimits{}).message(),
              HasSubstr("1000000 events, more than shipper.server.max_events_per_request (65536)"));
}

TEST(RequestValidationTest, CanonicalEventsAreTheReceivedBytesThemselves) {
  pb::PublishRequest request;
  request.set_uuid("first");
  for (int i = 0; i < 3; ++i) {
    pb::Event* event = request.add_events();
    event->mutable_timestamp()->set_seconds(i);
    event->mutable_source()->set_input_id("in");
    auto& fields = *event->mutable_fields()->mutable_data();
    for (int k = 0; k < 40; ++k) fields[absl::StrCat("key", k)].set_int64_value(k);
    (*fields["nested"].mutable_struct_value()->mutable_data())["key1"].set_bool_value(true);
  }
  std::string bytes = request.SerializeAsString();
  bytes += std::string("\x0a\x04last", 6);  // a second uuid: protobuf keeps the last
  ScannedRequest scanned;
  ASSERT_TRUE(Scan(bytes, RequestLimits{}, &scanned).ok());
  EXPECT_EQ(scanned.uuid, "last");
  ASSERT_EQ(scanned.events.size(), 3u);
  EXPECT_TRUE(scanned.rewritten.empty());
  for (int i = 0; i < 3; ++i) {
    const absl::string_view event = scanned.events[i];
    EXPECT_GE(event.data(), bytes.data());
    EXPECT_LE(event.data() + event.size(), bytes.data() + bytes.size());
    EXPECT_EQ(event, request.events(i).SerializeAsString());
  }
}

TEST(RequestValidationTest, NonCanonicalEventsMeanWhatProtobufMakesOfThem) {
  // Field `tag` (a tag byte) holding `body`.
  auto field = [](char tag, absl::string_view body) {
    std::string out(1, tag);
    for (size_t n = body.size();; n >>= 7) {
      out.push_back(static_cast<char>((n & 0x7F) | (n > 0x7F ? 0x80 : 0)));
      if (n <= 0x7F) break;
    }
    return absl::StrCat(out, body);
  };
  auto entry = [&](absl::string_view key, absl::string_view value) {
    return field('\x0a', field('\x0a', key) + field('\x12', value));  // Struct.data {key, value}
  };
  auto fields = [&](absl::string_view entries) { return field('\x2a', entries); };
  const std::string int1("\x28\x01", 2), int2("\x28\x02", 2), str("\x42\x01x", 3);
  std::string many;
  for (int k = 0; k < 20; ++k) many += entry(absl::StrCat("k", k), int1);
  const std::string cases[] = {
      fields(entry("a", int1) + entry("b", int1) + entry("a", int2)),  // a key twice
      fields(entry("a", int1 + str)),                                  // a Value with two kinds
      fields(entry("a", int1)) + fields(entry("b", int2)),             // fields twice: merged
      fields(many + entry("k7", int2)),                                // twice among many keys
      std::string("\x0a\x02\x08\x01\x0a\x02\x10\x05", 8),              // timestamp twice
  };
  for (const std::string& event : cases) {
    SCOPED_TRACE(::testing::PrintToString(event));
    const std::string request = field('\x12', event);
    ScannedRequest scanned;
    ASSERT_TRUE(Scan(request, RequestLimits{}, &scanned).ok());
    ASSERT_EQ(scanned.events.size(), 1u);
    ASSERT_EQ(scanned.rewritten.size(), 1u);
    EXPECT_EQ(scanned.events[0], scanned.rewritten.front());
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(Parsed(scanned.events[0]),
                                                                   Parsed(event)));
  }
}

// Forwarding (the shipper output) sends queued events as they are: the OTLP input's mark of a
// log record, span or data point reaches the aggregator's queue unchanged, whether the event is
// taken as received or rewritten.
TEST(RequestValidationTest, TheOtelSignalIsKept) {
  pb::Event event;
  event.set_otel_signal(pb::OTEL_SIGNAL_SPAN);
  (*event.mutable_fields()->mutable_data())["a"].set_int64_value(1);
  // One byte for each length below: every message here is shorter than 128 bytes.
  const std::string fields = event.fields().SerializeAsString();
  const std::string twice = absl::StrCat(event.SerializeAsString(), "\x2a",
                                         std::string(1, fields.size()), fields);  // rewritten
  for (const std::string& bytes : {event.SerializeAsString(), twice}) {
    pb::PublishRequest request;
    ASSERT_TRUE(request.add_events()->ParseFromString(bytes));
    const std::string request_bytes = absl::StrCat("\x12", std::string(1, bytes.size()), bytes);
    ScannedRequest scanned;
    ASSERT_TRUE(Scan(request_bytes, RequestLimits{}, &scanned).ok());
    ASSERT_EQ(scanned.events.size(), 1u);
    EXPECT_EQ(Parsed(scanned.events[0]).otel_signal(), pb::OTEL_SIGNAL_SPAN);
    EXPECT_EQ(wire::EventParts(scanned.events[0]).otel_signal, wire::otel::kSpan);
  }
}

TEST(RequestValidationTest, MetadataIsLimitedToo) {
  pb::PublishRequest request;
  pb::Event* event = request.add_events();
  *event->mutable_metadata() = Nested(3, false).fields();
  RequestLimits limits;
  limits.max_nesting_depth = 2;
  EXPECT_THAT(RoundTrip(request, limits).message(), HasSubstr("event 0: metadata nest"));
}

TEST(RequestValidationTest, TenThousandLevelsAreRefusedWhileParsing) {
  const std::string bytes = DeepRequestBytes(10000);
  absl::Status status = Scan(bytes, RequestLimits{});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("shipper.server.max_nesting_depth (64)"));
  // The hand-made bytes are right: with a limit above their depth they parse and validate.
  const std::string shallow = DeepRequestBytes(5);
  RequestLimits limits;
  limits.max_nesting_depth = 5;
  EXPECT_TRUE(Scan(shallow, limits).ok());
  limits.max_nesting_depth = 4;
  EXPECT_THAT(Scan(shallow, limits).message(), HasSubstr("fields nest"));
}

TEST(RequestValidationTest, GarbageTruncationAndBadUtf8AreRefused) {
  pb::PublishRequest good;
  (*good.add_events()->mutable_fields()->mutable_data())["message"].set_string_value("hello");
  const std::string bytes = good.SerializeAsString();
  for (const std::string& bad :
       {bytes.substr(0, bytes.size() - 3), std::string("\xff\xff\xff\xff\xff\xff", 6),
        std::string("\x12\x7f", 2)}) {
    absl::Status status = Scan(bad, RequestLimits{});
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(), HasSubstr("not a valid PublishRequest"));
  }
  std::string bad_utf8 = bytes;
  bad_utf8.replace(bad_utf8.find("hello"), 5, "h\xc3\x28lo");
  EXPECT_THAT(Scan(bad_utf8, RequestLimits{}).message(),
              HasSubstr("event 0 has a string that is not UTF-8"));
  // Short strings are read as a word with what follows masked off: a bad byte inside one is
  // found, non-ASCII bytes right after one are not its own.
  for (const char* key : {"a", "ab", "abcdefg"}) {
    pb::PublishRequest request;
    pb::Event* event = request.add_events();
    (*event->mutable_fields()->mutable_data())[key].set_string_value(
        "\xc3\xa9\xc3\xa9 d\xc3\xa9j\xc3\xa0");
    event->mutable_source()->set_input_id("followed by more bytes");
    std::string bytes = request.SerializeAsString();
    EXPECT_TRUE(Scan(bytes, RequestLimits{}).ok()) << key;
    bytes[bytes.find(key)] = '\xff';
    EXPECT_THAT(Scan(bytes, RequestLimits{}).message(), HasSubstr("not UTF-8")) << key;
  }
  pb::PublishRequest bad_uuid;
  bad_uuid.set_uuid("ok");
  std::string uuid_bytes = bad_uuid.SerializeAsString();
  uuid_bytes[3] = '\xff';
  EXPECT_THAT(Scan(uuid_bytes, RequestLimits{}).message(), HasSubstr("uuid is not UTF-8"));
}

TEST(RequestValidationTest, StrictModeRefusesWhatTheArchivedShipperRefused) {
  pb::Event full;
  full.mutable_timestamp()->set_seconds(1);
  full.mutable_source()->set_input_id("in");
  full.mutable_data_stream()->set_type("logs");
  full.mutable_data_stream()->set_dataset("app");
  full.mutable_data_stream()->set_namespace_("prod");
  const auto scan = [&](const pb::Event& spoiled, bool strict) {
    pb::PublishRequest request;
    *request.add_events() = full;
    *request.add_events() = spoiled;
    RequestLimits limits;
    limits.strict_mode = strict;
    ScannedRequest scanned;
    const std::string bytes = request.SerializeAsString();
    return ScanPublishRequest(bytes, limits, &scanned);
  };
  EXPECT_TRUE(scan(full, true).ok());
  pb::Event no_timestamp = full, no_source = full, no_input = full, no_stream = full,
            empty_stream = full, nothing;
  no_timestamp.clear_timestamp();
  no_source.clear_source();
  no_input.mutable_source()->clear_input_id();
  no_stream.clear_data_stream();
  empty_stream.mutable_data_stream()->Clear();
  for (const auto& [event, words] : std::vector<std::pair<pb::Event, std::string>>{
           {no_timestamp, "invalid nil Timestamp"},
           {no_source, "source: cannot be nil"},
           {no_input, "source: input_id is a required field"},
           {no_stream, "datastream: cannot be nil"},
           {empty_stream,
            "datastream: dataset is a required field; namespace is a required field; type is a "
            "required field"},
           {nothing, "invalid nil Timestamp; source: cannot be nil; datastream: cannot be nil"},
       }) {
    absl::Status status = scan(event, true);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << words;
    EXPECT_EQ(status.message(), absl::StrCat("event 1: ", words, " (shipper.strict_mode is on)"));
    EXPECT_TRUE(scan(event, false).ok()) << words;
  }
}

}  // namespace
}  // namespace shipper
