#include "shipper/event/event_json.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <memory>
#include <random>
#include <string>

#include "absl/base/casts.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "proto/messages.pb.h"
#include "rapidjson/document.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

namespace shipper {
namespace {

namespace pb = elastic::agent::shipper::v1::messages;

// The JSON of `event` as it arrives: protobuf's encoding is canonical (wire_event.h).
std::string Encode(const pb::Event& event, uint64_t index = 7) {
  rapidjson::StringBuffer buffer;
  AppendEventJson(event.SerializeAsString(), index, &buffer);
  return std::string(buffer.GetString(), buffer.GetSize());
}

pb::Value& Field(pb::Event& event, const std::string& key) {
  return (*event.mutable_fields()->mutable_data())[key];
}

rapidjson::Document ParseLine(const std::string& line) {
  EXPECT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1) << "one line per event";
  rapidjson::Document doc;
  doc.Parse(line.data(), line.size() - 1);
  EXPECT_FALSE(doc.HasParseError()) << line;
  return doc;
}

TEST(EventJsonTest, EveryValueKindKeepsItsType) {
  pb::Event event;
  Field(event, "null").set_null_value(pb::NULL_VALUE);
  Field(event, "f64").set_float64_value(0.1);
  Field(event, "f32").set_float32_value(1.5f);
  Field(event, "i32").set_int32_value(-42);
  Field(event, "i64").set_int64_value(std::numeric_limits<int64_t>::min());
  Field(event, "u32").set_uint32_value(4294967295u);
  Field(event, "u64").set_uint64_value(std::numeric_limits<uint64_t>::max());
  Field(event, "str").set_string_value("quote \" backslash \\ newline \n tab \t ctrl \x01 é 日本");
  Field(event, "bool").set_bool_value(true);
  auto& nested = *Field(event, "struct").mutable_struct_value()->mutable_data();
  nested["inner"].set_int64_value(1);
  auto* list = Field(event, "list").mutable_list_value();
  list->add_values()->set_string_value("a");
  list->add_values()->set_uint64_value(2);
  list->add_values()->mutable_list_value();
  auto* ts = Field(event, "ts").mutable_timestamp_value();
  ts->set_seconds(1700000000);
  ts->set_nanos(5);

  const std::string line = Encode(event);
  rapidjson::Document doc = ParseLine(line);
  EXPECT_TRUE(doc["null"].IsNull());
  EXPECT_DOUBLE_EQ(doc["f64"].GetDouble(), 0.1);
  EXPECT_EQ(doc["f32"].GetDouble(), 1.5);
  EXPECT_EQ(doc["i32"].GetInt(), -42);
  EXPECT_EQ(doc["i64"].GetInt64(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(doc["u32"].GetUint(), 4294967295u);
  EXPECT_EQ(doc["u64"].GetUint64(), std::numeric_limits<uint64_t>::max());
  EXPECT_NE(line.find("18446744073709551615"), std::string::npos);
  EXPECT_EQ(std::string(doc["str"].GetString(), doc["str"].GetStringLength()),
            "quote \" backslash \\ newline \n tab \t ctrl \x01 é 日本");
  EXPECT_TRUE(doc["bool"].GetBool());
  EXPECT_EQ(doc["struct"]["inner"].GetInt64(), 1);
  ASSERT_EQ(doc["list"].Size(), 3u);
  EXPECT_STREQ(doc["list"][0].GetString(), "a");
  EXPECT_EQ(doc["list"][1].GetUint64(), 2u);
  EXPECT_TRUE(doc["list"][2].IsArray());
  EXPECT_STREQ(doc["ts"].GetString(), "2023-11-14T22:13:20.000000005Z");
}

TEST(EventJsonTest, TimestampsAreRfc3339InUtcAcrossTheCalendar) {
  const std::pair<int64_t, const char*> cases[] = {
      {-1, "1969-12-31T23:59:59.000000007Z"},
      {951782400, "2000-02-29T00:00:00.000000007Z"},
      {1709251199, "2024-02-29T23:59:59.000000007Z"},
      {-62135596800, "0001-01-01T00:00:00.000000007Z"},
      {253402300799, "9999-12-31T23:59:59.000000007Z"},
      {253402300800, "253402300800s+7ns"},  // beyond RFC 3339: kept raw
  };
  for (const auto& [seconds, expected] : cases) {
    pb::Event event;
    auto* ts = Field(event, "ts").mutable_timestamp_value();
    ts->set_seconds(seconds);
    ts->set_nanos(7);
    EXPECT_STREQ(ParseLine(Encode(event))["ts"].GetString(), expected) << seconds;
  }
}

TEST(EventJsonTest, OneWriterWritesEachTimestampAsAFreshOneDoes) {
  // The writer keeps the last second's date: repeats, changes, out-of-range values and bad
  // nanos in between must not leave a stale date behind.
  const std::pair<int64_t, int32_t> timestamps[] = {
      {1796032800, 5}, {1796032800, 999999999}, {1796032801, 0},         {253402300800, 7},
      {1796032801, 1}, {1796032801, -1},        {1796032800, 123456789}, {-1, 7},
      {1796032800, 0},
  };
  rapidjson::StringBuffer buffer;
  EventJsonWriter writer(&buffer);
  std::string expected;
  for (const auto& [seconds, nanos] : timestamps) {
    pb::Event event;
    event.mutable_timestamp()->set_seconds(seconds);
    event.mutable_timestamp()->set_nanos(nanos);
    auto* ts = Field(event, "ingested").mutable_timestamp_value();
    ts->set_seconds(seconds + 1);
    ts->set_nanos(nanos);
    writer.Append(event.SerializeAsString(), 1);
    expected += Encode(event, 1);
  }
  EXPECT_EQ(std::string(buffer.GetString(), buffer.GetSize()), expected);
}

TEST(EventJsonTest, NonFiniteFloatsBecomeNull) {
  pb::Event event;
  Field(event, "nan").set_float64_value(std::nan(""));
  Field(event, "inf").set_float32_value(std::numeric_limits<float>::infinity());
  Field(event, "ninf").set_float64_value(-std::numeric_limits<double>::infinity());
  rapidjson::Document doc = ParseLine(Encode(event));
  EXPECT_TRUE(doc["nan"].IsNull());
  EXPECT_TRUE(doc["inf"].IsNull());
  EXPECT_TRUE(doc["ninf"].IsNull());
}

TEST(EventJsonTest, EnvelopeCarriesTimestampDataStreamAndMetadata) {
  pb::Event event;
  event.mutable_timestamp()->set_seconds(0);
  event.mutable_timestamp()->set_nanos(123456789);
  event.mutable_source()->set_input_id("in-1");
  event.mutable_source()->set_stream_id("st-1");
  event.mutable_data_stream()->set_type("logs");
  event.mutable_data_stream()->set_dataset("nginx.access");
  event.mutable_data_stream()->set_namespace_("default");
  (*event.mutable_metadata()->mutable_data())["pipeline"].set_string_value("p1");
  Field(event, "message").set_string_value("hello");

  rapidjson::Document doc = ParseLine(Encode(event, 42));
  EXPECT_STREQ(doc["message"].GetString(), "hello");
  EXPECT_STREQ(doc["@timestamp"].GetString(), "1970-01-01T00:00:00.123456789Z");
  EXPECT_STREQ(doc["data_stream"]["type"].GetString(), "logs");
  EXPECT_STREQ(doc["data_stream"]["dataset"].GetString(), "nginx.access");
  EXPECT_STREQ(doc["data_stream"]["namespace"].GetString(), "default");
  EXPECT_STREQ(doc["@metadata"]["pipeline"].GetString(), "p1");
  EXPECT_STREQ(doc["@metadata"]["input_id"].GetString(), "in-1");
  EXPECT_STREQ(doc["@metadata"]["stream_id"].GetString(), "st-1");
  EXPECT_EQ(doc["@metadata"]["index"].GetUint64(), 42u);
  EXPECT_FALSE(doc["@metadata"].HasMember("shadowed"));
}

TEST(EventJsonTest, TheOtelSignalIsNotInTheDocument) {
  pb::Event event;
  event.mutable_timestamp()->set_seconds(1);
  Field(event, "message").set_string_value("hello");
  const std::string unmarked = Encode(event);
  event.set_otel_signal(pb::OTEL_SIGNAL_LOG);
  EXPECT_EQ(Encode(event), unmarked);
}

TEST(EventJsonTest, AbsentEnvelopePartsAreOmitted) {
  pb::Event event;
  rapidjson::Document doc = ParseLine(Encode(event));
  EXPECT_FALSE(doc.HasMember("@timestamp"));
  EXPECT_FALSE(doc.HasMember("data_stream"));
  EXPECT_TRUE(doc.HasMember("@metadata"));
}

TEST(EventJsonTest, ClashingNamesAreShadowedNotLostOrDuplicated) {
  pb::Event event;
  event.mutable_timestamp()->set_seconds(1);
  Field(event, "@timestamp").set_string_value("from fields");
  Field(event, "@metadata").set_int32_value(1);
  Field(event, "data_stream").set_string_value("kept: the event has no data_stream");
  (*event.mutable_metadata()->mutable_data())["index"].set_string_value("from metadata");

  const std::string line = Encode(event, 9);
  rapidjson::Document doc = ParseLine(line);
  EXPECT_STREQ(doc["@timestamp"].GetString(), "1970-01-01T00:00:01.000000000Z");
  EXPECT_STREQ(doc["data_stream"].GetString(), "kept: the event has no data_stream");
  EXPECT_EQ(doc["@metadata"]["index"].GetUint64(), 9u);
  const auto& shadowed = doc["@metadata"]["shadowed"];
  EXPECT_STREQ(shadowed["@timestamp"].GetString(), "from fields");
  EXPECT_EQ(shadowed["@metadata"].GetInt(), 1);
  EXPECT_STREQ(shadowed["index"].GetString(), "from metadata");
  int top_level_timestamps = 0;
  for (const auto& member : doc.GetObject()) {
    top_level_timestamps += std::string(member.name.GetString()) == "@timestamp";
  }
  EXPECT_EQ(top_level_timestamps, 1) << line;
}

TEST(EventJsonTest, WithoutMetadataTheDocumentIsTheRestUnchanged) {
  pb::Event event;
  event.mutable_timestamp()->set_seconds(1);
  event.mutable_data_stream()->set_dataset("nginx.access");
  (*event.mutable_metadata()->mutable_data())["_id"].set_string_value("id-1");
  Field(event, "message").set_string_value("hello");
  Field(event, "@metadata").set_int32_value(1);
  rapidjson::StringBuffer buffer;
  EventJsonWriter(&buffer, Metadata::kOmit).Append(event.SerializeAsString(), 5);
  rapidjson::Document doc = ParseLine(std::string(buffer.GetString(), buffer.GetSize()));
  rapidjson::Document full = ParseLine(Encode(event, 5));
  full.RemoveMember("@metadata");
  EXPECT_TRUE(doc == full) << buffer.GetString();
  EXPECT_FALSE(doc.HasMember("@metadata"));
  EXPECT_STREQ(doc["message"].GetString(), "hello");
}

// The document of an event with the one field `key`: value, without @metadata. The event's
// bytes are an allocation of their own, so that ASan reports any read past their end: the
// value's bytes are the event's last.
std::string OneField(const std::string& key, const pb::Value& value) {
  pb::Event event;
  Field(event, key) = value;
  const std::string bytes = event.SerializeAsString();
  const auto exact = std::make_unique<char[]>(bytes.size());
  std::copy(bytes.begin(), bytes.end(), exact.get());
  rapidjson::StringBuffer buffer;
  EventJsonWriter(&buffer, Metadata::kOmit).Append({exact.get(), bytes.size()}, 0);
  return std::string(buffer.GetString(), buffer.GetSize());
}

// What rapidjson's own Writer makes of {key: value}, written by `write`, and the newline.
template <typename Write>
std::string Rapidjson(const std::string& key, Write write) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key(key.data(), static_cast<rapidjson::SizeType>(key.size()));
  write(w);
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize()) + "\n";
}

TEST(EventJsonTest, StringsAreWrittenAsRapidjsonEscapesThem) {
  // The encoder copies runs without escapes whole, 16 bytes at a time, into room it claims
  // ahead; the result must not differ from rapidjson's byte-by-byte escaping, for keys and
  // values alike, wherever in a block the escapes fall, and across the room claimed (4 KiB at
  // a time).
  std::string every_byte;
  for (int c = 0; c < 256; ++c) every_byte += absl::StrCat("0123456789abcdef", std::string(1, c));
  for (const std::string& s :
       {std::string(), std::string("plain ascii"), every_byte, std::string(5000, '"'),
        std::string(5000, '\x01'), std::string(9000, 'x') + "\n",
        std::string("\"\"\"\"\"\"\"\"\"\\\\\\\\\\"),
        std::string("GET \"/api/v1/items?id=1 HTTP/1.1\" 200 \"curl\""),
        std::string("quote \" here"), std::string("back\\slash"),
        std::string("ctrl \x01 \x1f \n \t"), std::string("del \x7f"),
        std::string("utf-8 é 日本 \xf0\x9f\x98\x80"), std::string("nul \0 inside", 13)}) {
    pb::Value value;
    value.set_string_value(s);
    EXPECT_EQ(OneField(s, value), Rapidjson(s, [&](auto& w) {
                w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
              }));
  }
}

TEST(EventJsonTest, StringsOfAnyBlockLengthWithAnEscapeAnywhereAreWrittenAsRapidjsonDoes) {
  // Strings are read 16 bytes at a time, past their end where the event goes on; a short one
  // at the event's end (the value here) alone: every length up to three blocks, with each
  // escape at each position.
  for (size_t n = 0; n <= 48; ++n) {
    for (size_t at = 0; at <= n; ++at) {
      for (char escape : {'"', '\\', '\n', '\x01', '\x1f', ' '}) {
        std::string s(n, 'k');
        if (at < n) s[at] = escape;
        pb::Value value;
        value.set_string_value(s);
        EXPECT_EQ(OneField(s, value),
                  Rapidjson(s,
                            [&](auto& w) {
                              w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
                            }))
            << "length " << n << ", byte " << static_cast<int>(escape) << " at " << at;
      }
    }
  }
}

TEST(EventJsonTest, NumbersAreWrittenAsRapidjsonWritesThem) {
  for (double d : {0.0,
                   -0.0,
                   0.1,
                   1.0 / 3,
                   1e21,
                   1e22,
                   1e-7,
                   1e-6,
                   1.5e-6,
                   123456789012345678.0,
                   -2.5,
                   100.0,
                   1234.5678,
                   9007199254740993.0,
                   -1.2345678901234567e-308,
                   0.000001234567890123456,
                   1e100,
                   3e-300,
                   4.35,
                   std::numeric_limits<double>::max(),
                   std::numeric_limits<double>::lowest(),
                   std::numeric_limits<double>::min(),
                   std::numeric_limits<double>::denorm_min()}) {
    pb::Value value;
    value.set_float64_value(d);
    EXPECT_EQ(OneField("n", value), Rapidjson("n", [&](auto& w) { w.Double(d); }));
  }
  for (int64_t i : {int64_t{0}, int64_t{-1}, std::numeric_limits<int64_t>::min(),
                    std::numeric_limits<int64_t>::max()}) {
    pb::Value value;
    value.set_int64_value(i);
    EXPECT_EQ(OneField("n", value), Rapidjson("n", [&](auto& w) { w.Int64(i); }));
  }
  pb::Value value;
  value.set_uint64_value(std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(OneField("n", value),
            Rapidjson("n", [&](auto& w) { w.Uint64(std::numeric_limits<uint64_t>::max()); }));
  value.set_int32_value(std::numeric_limits<int32_t>::min());
  EXPECT_EQ(OneField("n", value),
            Rapidjson("n", [&](auto& w) { w.Int(std::numeric_limits<int32_t>::min()); }));
  value.set_uint32_value(std::numeric_limits<uint32_t>::max());
  EXPECT_EQ(OneField("n", value),
            Rapidjson("n", [&](auto& w) { w.Uint(std::numeric_limits<uint32_t>::max()); }));
  value.set_float32_value(0.1f);
  EXPECT_EQ(OneField("n", value), Rapidjson("n", [&](auto& w) { w.Double(0.1f); }));
}

// Doubles are written as their shortest digits (std::to_chars) laid out as rapidjson lays out
// its Grisu2 digits. Grisu2 may pick a longer or a farther shortest form than to_chars (which
// takes the nearest): every double reads back exactly, never with more digits than rapidjson's,
// and the text is rapidjson's wherever both chose the same digits.
TEST(EventJsonTest, RandomDoublesReadBackExactlyAsRapidjsonWritesThem) {
  std::mt19937_64 random(42);
  int differ = 0;
  for (int i = 0; i < 200000; ++i) {
    const double d = absl::bit_cast<double>(random());
    if (!std::isfinite(d)) continue;
    pb::Value value;
    value.set_float64_value(d);
    const std::string ours = OneField("n", value);
    rapidjson::Document doc;
    doc.Parse(ours.data(), ours.size());
    ASSERT_FALSE(doc.HasParseError()) << ours;
    ASSERT_EQ(absl::bit_cast<uint64_t>(std::strtod(ours.c_str() + 5, nullptr)),
              absl::bit_cast<uint64_t>(d))
        << ours;
    const std::string theirs = Rapidjson("n", [&](auto& w) { w.Double(d); });
    if (ours != theirs) {
      ++differ;
      EXPECT_LE(ours.size(), theirs.size()) << ours << " against rapidjson's " << theirs;
    }
  }
  std::cout << differ
            << " of 200000 random doubles written with other digits than rapidjson's (as short or "
               "shorter)\n";
}

TEST(EventJsonTest, OneWriterForManyEventsWritesWhatAppendEventJsonWrites) {
  pb::Event shadowing, plain;
  Field(shadowing, "@metadata").set_string_value("mine");
  (*shadowing.mutable_metadata()->mutable_data())["index"].set_int32_value(3);
  Field(plain, "message").set_string_value("hello");
  rapidjson::StringBuffer buffer;
  EventJsonWriter writer(&buffer);
  std::string expected;
  uint64_t index = 0;
  // A shadowing event, then a plain one: nothing of the first may carry over.
  for (const pb::Event* event : {&shadowing, &plain, &shadowing, &plain}) {
    writer.Append(event->SerializeAsString(), ++index);
    expected += Encode(*event, index);
  }
  EXPECT_EQ(std::string(buffer.GetString(), buffer.GetSize()), expected);
}

TEST(EventJsonTest, EntriesKeepTheirWireOrderAndUnknownFieldsAreSkipped) {
  pb::Event event;
  event.mutable_source()->set_input_id("in");
  std::string bytes = event.SerializeAsString();
  // fields {"b": 1, "a": 2} in that order, then an unknown varint field 9 and an unknown
  // length-delimited field 10, as a newer client might send.
  const std::string entry_b(
      "\x0a\x07\x0a\x01"
      "b"
      "\x12\x02\x28\x01",
      9);
  const std::string entry_a(
      "\x0a\x07\x0a\x01"
      "a"
      "\x12\x02\x28\x02",
      9);
  bytes += "\x2a\x12" + entry_b + entry_a + std::string("\x48\x01\x52\x01x", 5);
  rapidjson::StringBuffer buffer;
  AppendEventJson(bytes, 1, &buffer);
  EXPECT_EQ(std::string(buffer.GetString(), buffer.GetSize()),
            R"({"b":1,"a":2,"@metadata":{"input_id":"in","stream_id":"","index":1}})"
            "\n");
}

}  // namespace
}  // namespace shipper
