#include "shipper/request_validation.h"

#include <algorithm>
#include <string>

#include "gmock/gmock.h"
#include "google/protobuf/arena.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "gtest/gtest.h"

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
    wrap(0x12);                // entry.value (the Value so far, empty at the bottom)
    reversed += "a\x01\x0a";  // entry.key = "a", reversed
    wrap(0x0a);                // Struct.data entry
    if (level > 1) wrap(0x52);  // Value.struct_value
  }
  wrap(0x2a);  // Event.fields
  wrap(0x12);  // PublishRequest.events
  return std::string(reversed.rbegin(), reversed.rend());
}

absl::Status Decode(const std::string& bytes, const RequestLimits& limits,
                    pb::PublishRequest* request) {
  const absl::string_view chunks[] = {bytes};
  return DecodePublishRequest(chunks, limits, request);
}

// Decodes (which validates) as the service does.
absl::Status RoundTrip(const pb::PublishRequest& sent, const RequestLimits& limits) {
  pb::PublishRequest received;
  return Decode(sent.SerializeAsString(), limits, &received);
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
  for (size_t max : {size_t{1}, size_t{8}, size_t{64}, size_t{200}}) {
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

TEST(RequestValidationTest, EventsAreCountedBeforeDecodingAcrossChunks) {
  pb::PublishRequest request;
  request.set_uuid("u");
  for (int i = 0; i < 5; ++i) {
    (*request.add_events()->mutable_fields()->mutable_data())["n"].set_int64_value(i);
  }
  const std::string bytes = request.SerializeAsString();
  RequestLimits limits;
  limits.max_events_per_request = 4;
  // Split mid-field, as a ByteBuffer's slices may be.
  for (size_t cut : {size_t{1}, size_t{5}, bytes.size() / 2, bytes.size() - 1}) {
    const absl::string_view chunks[] = {absl::string_view(bytes).substr(0, cut),
                                        absl::string_view(bytes).substr(cut)};
    pb::PublishRequest decoded;
    absl::Status status = DecodePublishRequest(chunks, limits, &decoded);
    EXPECT_THAT(status.message(), HasSubstr("request has 5 events")) << "cut at " << cut;
    EXPECT_EQ(decoded.events_size(), 0) << "refused before decoding";
    limits.max_events_per_request = 5;
    EXPECT_TRUE(DecodePublishRequest(chunks, limits, &decoded).ok());
    EXPECT_EQ(decoded.events_size(), 5);
    limits.max_events_per_request = 4;
  }
  // A million empty events: refused from the count, nothing decoded.
  std::string tiny;
  for (int i = 0; i < 1000000; ++i) tiny += std::string("\x12\x00", 2);
  pb::PublishRequest decoded;
  EXPECT_THAT(Decode(tiny, RequestLimits{}, &decoded).message(),
              HasSubstr("1000000 events, more than shipper.server.max_events_per_request (65536)"));
  EXPECT_EQ(decoded.events_size(), 0);
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
  pb::PublishRequest request;
  absl::Status status = Decode(bytes, RequestLimits{}, &request);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("shipper.server.max_nesting_depth (64)"));
  // The hand-made bytes are right: with a limit above their depth they parse and validate.
  const std::string shallow = DeepRequestBytes(5);
  RequestLimits limits;
  limits.max_nesting_depth = 5;
  EXPECT_TRUE(Decode(shallow, limits, &request).ok());
  limits.max_nesting_depth = 4;
  EXPECT_THAT(Decode(shallow, limits, &request).message(), HasSubstr("fields nest"));
}

TEST(RequestValidationTest, ValidationOfADeepInMemoryMessageDoesNotRecurse) {
  // Built without parsing (as a bug elsewhere could): validation must still not overflow. On an
  // arena, so that freeing it does not recurse either.
  google::protobuf::Arena arena;
  auto* request = google::protobuf::Arena::CreateMessage<pb::PublishRequest>(&arena);
  FillNested(100000, true, request->add_events());
  absl::Status status = ValidatePublishRequest(*request, RequestLimits{});
  EXPECT_THAT(status.message(), HasSubstr("max_nesting_depth (64)"));
}

TEST(RequestValidationTest, GarbageTruncationAndBadUtf8AreRefused) {
  pb::PublishRequest good;
  (*good.add_events()->mutable_fields()->mutable_data())["message"].set_string_value("hello");
  const std::string bytes = good.SerializeAsString();
  pb::PublishRequest request;
  for (const std::string& bad :
       {bytes.substr(0, bytes.size() - 3), std::string("\xff\xff\xff\xff\xff\xff", 6),
        std::string("\x12\x7f", 2)}) {
    absl::Status status = Decode(bad, RequestLimits{}, &request);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(), HasSubstr("not a valid PublishRequest"));
  }
  std::string bad_utf8 = bytes;
  bad_utf8.replace(bad_utf8.find("hello"), 5, "h\xc3\x28lo");
  EXPECT_THAT(Decode(bad_utf8, RequestLimits{}, &request).message(), HasSubstr("not UTF-8"));
}

}  // namespace
}  // namespace shipper
