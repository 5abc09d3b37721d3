#include "shipper/event/field_format.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/messages.pb.h"

namespace shipper {
namespace {

namespace pb = elastic::agent::shipper::v1::messages;
using ::testing::HasSubstr;

pb::Event TestEvent() {
  pb::Event event;
  event.mutable_data_stream()->set_dataset("nginx.access");
  event.mutable_source()->set_input_id("filestream-1");
  auto& fields = *event.mutable_fields()->mutable_data();
  fields["count"].set_uint64_value(18446744073709551615u);
  fields["ok"].set_bool_value(true);
  (*fields["kubernetes"].mutable_struct_value()->mutable_data())["namespace"].set_string_value(
      "prod");
  fields["tags"].mutable_list_value();
  (*event.mutable_metadata()->mutable_data())["pipeline"].set_string_value("p1");
  return event;
}

std::string Format(absl::string_view format) {
  absl::StatusOr<FieldFormat> f = FieldFormat::Parse(format, "test.key");
  EXPECT_TRUE(f.ok()) << f.status();
  absl::StatusOr<std::string> s = f->Format(TestEvent().SerializeAsString());
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *s : "";
}

TEST(FieldFormatTest, ResolvesReferences) {
  EXPECT_EQ(Format("shipper"), "shipper");
  EXPECT_EQ(Format("logs-%{[data_stream.dataset]}"), "logs-nginx.access");
  EXPECT_EQ(Format("%{[source.input_id]}/%{[kubernetes.namespace]}/%{[count]}/%{[ok]}"),
            "filestream-1/prod/18446744073709551615/true");
  EXPECT_EQ(Format("%{[@metadata.pipeline]}-x"), "p1-x");
}

TEST(FieldFormatTest, DefaultsStandInForMissingFields) {
  EXPECT_EQ(Format("%{[data_stream.namespace]:default}"), "default");
  EXPECT_EQ(Format("%{[tags]:none}"), "none") << "a list is not a scalar";
  EXPECT_EQ(Format("a%{[nope]:}b"), "ab");
}

TEST(FieldFormatTest, MissingFieldWithoutDefaultIsNotFound) {
  absl::StatusOr<FieldFormat> f = FieldFormat::Parse("k-%{[kubernetes.pod]}", "test.key");
  ASSERT_TRUE(f.ok());
  absl::StatusOr<std::string> s = f->Format(TestEvent().SerializeAsString());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.status().message(), HasSubstr("kubernetes.pod"));
}

TEST(FieldFormatTest, BadReferencesNameTheSetting) {
  for (absl::string_view bad : {"%{[open", "%{[]}", "%{[a]x}", "%{[a}"}) {
    absl::StatusOr<FieldFormat> f = FieldFormat::Parse(bad, "test.key");
    ASSERT_FALSE(f.ok()) << bad;
    EXPECT_THAT(f.status().message(), HasSubstr("test.key")) << bad;
  }
}

}  // namespace
}  // namespace shipper
