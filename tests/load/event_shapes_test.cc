#include "tests/load/event_shapes.h"

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "gtest/gtest.h"

namespace shipper::load {
namespace {

namespace msg = ::elastic::agent::shipper::v1::messages;

std::string Bytes(const msg::Event& e) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream raw(&out);
    google::protobuf::io::CodedOutputStream coded(&raw);
    coded.SetSerializationDeterministic(true);
    e.SerializeToCodedStream(&coded);
  }
  return out;
}

// Leaf values of a Struct, nested structs counted by their leaves.
int Leaves(const msg::Struct& s) {
  int n = 0;
  for (const auto& [key, value] : s.data()) {
    n += value.has_struct_value() ? Leaves(value.struct_value()) : 1;
  }
  return n;
}

TEST(EventShapesTest, NamesRoundTrip) {
  for (EventShape s : {EventShape::kFilebeat, EventShape::kTiny, EventShape::kLarge}) {
    auto parsed = ParseEventShape(EventShapeName(s));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, s);
  }
  EXPECT_FALSE(ParseEventShape("huge").ok());
}

TEST(EventShapesTest, DeterministicAndVaried) {
  msg::Event a, b, c;
  MakeEvent(EventShape::kFilebeat, 7, &a);
  MakeEvent(EventShape::kFilebeat, 7, &b);
  MakeEvent(EventShape::kFilebeat, 8, &c);
  EXPECT_EQ(Bytes(a), Bytes(b));
  EXPECT_NE(a.fields().data().at("message").string_value(),
            c.fields().data().at("message").string_value());
}

TEST(EventShapesTest, FilebeatLooksLikeALogLine) {
  msg::Event e;
  MakeEvent(EventShape::kFilebeat, 42, &e);
  EXPECT_EQ(Leaves(e.fields()), 15);
  EXPECT_EQ(e.data_stream().type(), "logs");
  const size_t bytes = e.ByteSizeLong();
  EXPECT_GT(bytes, 350u);
  EXPECT_LT(bytes, 800u);
}

TEST(EventShapesTest, SizesAreOrdered) {
  msg::Event tiny, large;
  MakeEvent(EventShape::kTiny, 1, &tiny);
  MakeEvent(EventShape::kLarge, 1, &large);
  EXPECT_LT(tiny.ByteSizeLong(), 64u);
  EXPECT_GT(large.ByteSizeLong(), 4000u);
}

TEST(EventShapesTest, SerializedEntriesConcatenateIntoARequest) {
  std::string wire = MakeSerializedEventEntry(EventShape::kFilebeat, 1) +
                     MakeSerializedEventEntry(EventShape::kLarge, 2);
  msg::PublishRequest request;
  ASSERT_TRUE(request.ParseFromString(wire));
  ASSERT_EQ(request.events_size(), 2);
  msg::Event expected;
  MakeEvent(EventShape::kLarge, 2, &expected);
  EXPECT_EQ(Bytes(request.events(1)), Bytes(expected));
}

}  // namespace
}  // namespace shipper::load
