#include "tests/load/event_shapes.h"

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/wire_format_lite.h"

namespace shipper::load {
namespace {

namespace msg = ::elastic::agent::shipper::v1::messages;

// 2026-11-30T10:00:00Z; consecutive events are one millisecond apart.
constexpr int64_t kBaseUnixSeconds = 1796032800;

// A well-mixed hash of seq, so the variable fields look random but stay deterministic.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

template <typename T>
const T& Pick(const T* items, size_t n, uint64_t h) {
  return items[h % n];
}

void SetTimestamp(uint64_t seq, google::protobuf::Timestamp* ts) {
  ts->set_seconds(kBaseUnixSeconds + static_cast<int64_t>(seq / 1000));
  ts->set_nanos(static_cast<int32_t>(seq % 1000) * 1000000);
}

msg::Value& At(msg::Struct* s, const std::string& key) { return (*s->mutable_data())[key]; }
msg::Struct* Sub(msg::Struct* s, const std::string& key) {
  return At(s, key).mutable_struct_value();
}
void PutString(msg::Struct* s, const std::string& key, std::string v) {
  At(s, key).set_string_value(std::move(v));
}
msg::ListValue* List(msg::Struct* s, const std::string& key) {
  return At(s, key).mutable_list_value();
}

constexpr const char* kPaths[] = {"/api/v1/orders",   "/api/v1/items", "/static/app.js",
                                  "/healthz",         "/login",        "/api/v1/cart/checkout",
                                  "/images/logo.png", "/search"};
constexpr const char* kMethods[] = {"GET", "GET", "GET", "POST", "PUT", "DELETE"};
constexpr int kStatuses[] = {200, 200, 200, 200, 304, 301, 404, 500, 201, 200};
constexpr const char* kAgents[] = {"Mozilla/5.0 (X11; Linux x86_64)", "curl/8.4.0",
                                   "Go-http-client/1.1", "kube-probe/1.28"};

// Fields common to the filebeat and large shapes: what Filebeat adds to every log line.
void AddFilebeatFields(uint64_t seq, uint64_t h, const std::string& message, msg::Struct* f) {
  PutString(f, "message", message);

  msg::Struct* log = Sub(f, "log");
  At(log, "offset").set_int64_value(static_cast<int64_t>(seq) * 173 + 4096);
  PutString(Sub(log, "file"), "path", "/var/log/nginx/access.log");

  PutString(Sub(f, "input"), "type", "filestream");

  msg::Struct* host = Sub(f, "host");
  PutString(host, "name", absl::StrCat("web-", (h >> 8) % 16));
  PutString(host, "architecture", "x86_64");
  msg::ListValue* ips = List(host, "ip");
  ips->add_values()->set_string_value(absl::StrCat("10.0.3.", (h >> 8) % 16 + 10));
  At(host, "containerized").set_bool_value((h >> 12) % 4 == 0);

  msg::Struct* agent = Sub(f, "agent");
  PutString(agent, "type", "filebeat");
  PutString(agent, "version", "8.11.1");

  msg::Struct* response = Sub(Sub(f, "http"), "response");
  At(response, "status_code").set_int32_value(Pick(kStatuses, std::size(kStatuses), h >> 16));
  At(Sub(response, "body"), "bytes").set_uint64_value((h >> 20) % 200000);

  msg::Struct* event = Sub(f, "event");
  At(event, "duration").set_float64_value(static_cast<double>((h >> 24) % 100000) / 1000.0);
  SetTimestamp(seq + 3, At(event, "ingested").mutable_timestamp_value());

  msg::ListValue* tags = List(f, "tags");
  tags->add_values()->set_string_value("nginx");
  tags->add_values()->set_string_value("access");
}

std::string AccessLogLine(uint64_t seq, uint64_t h) {
  return absl::StrFormat(
      "10.%d.%d.%d - - [30/Nov/2026:10:%02d:%02d +0000] \"%s %s?id=%d HTTP/1.1\" %d %d \"%s\"",
      (h >> 1) % 256, (h >> 9) % 256, (h >> 17) % 256, (seq / 60000) % 60, (seq / 1000) % 60,
      Pick(kMethods, std::size(kMethods), h >> 25), Pick(kPaths, std::size(kPaths), h >> 29),
      (h >> 33) % 100000, Pick(kStatuses, std::size(kStatuses), h >> 16), (h >> 20) % 200000,
      Pick(kAgents, std::size(kAgents), h >> 40));
}

void SetEnvelope(uint64_t seq, const char* dataset, msg::Event* e) {
  SetTimestamp(seq, e->mutable_timestamp());
  e->mutable_source()->set_input_id("filestream-nginx-8f1e0c3a");
  e->mutable_source()->set_stream_id(absl::StrCat("filestream-", dataset));
  e->mutable_data_stream()->set_type("logs");
  e->mutable_data_stream()->set_dataset(dataset);
  e->mutable_data_stream()->set_namespace_("default");
  msg::Struct* meta = e->mutable_metadata();
  PutString(meta, "beat", "filebeat");
  PutString(meta, "version", "8.11.1");
}

void MakeFilebeat(uint64_t seq, msg::Event* e) {
  const uint64_t h = Mix(seq);
  SetEnvelope(seq, "nginx.access", e);
  AddFilebeatFields(seq, h, AccessLogLine(seq, h), e->mutable_fields());
}

void MakeTiny(uint64_t seq, msg::Event* e) {
  SetTimestamp(seq, e->mutable_timestamp());
  PutString(e->mutable_fields(), "message", absl::StrCat("event ", seq));
}

void MakeLarge(uint64_t seq, msg::Event* e) {
  const uint64_t h = Mix(seq);
  SetEnvelope(seq, "app.error", e);
  std::string trace = absl::StrFormat(
      "2026-11-30 10:00:%02d.%03d ERROR [worker-%d] c.e.orders.OrderService - order %d failed\n"
      "java.lang.IllegalStateException: inventory reservation %d expired\n",
      (seq / 1000) % 60, seq % 1000, h % 32, (h >> 5) % 1000000, (h >> 25) % 1000000);
  static constexpr const char* kFrames[] = {
      "com.example.orders.OrderService.reserve(OrderService.java:%d)",
      "com.example.orders.OrderService.process(OrderService.java:%d)",
      "com.example.orders.web.OrderController.checkout(OrderController.java:%d)",
      "org.springframework.web.servlet.FrameworkServlet.service(FrameworkServlet.java:%d)",
      "org.apache.catalina.core.ApplicationFilterChain.doFilter(ApplicationFilterChain.java:%d)",
      "java.base/java.util.concurrent.ThreadPoolExecutor.runWorker(ThreadPoolExecutor.java:%d)"};
  // Frames substitute their line number by hand: StrFormat wants compile-time formats.
  for (int i = 0; i < 48; ++i) {
    std::string frame = kFrames[i % 6];
    frame.replace(frame.find("%d"), 2, absl::StrCat(40 + (h >> (i % 40)) % 900));
    absl::StrAppend(&trace, "\tat ", frame, "\n");
  }
  msg::Struct* f = e->mutable_fields();
  AddFilebeatFields(seq, h, trace, f);
  msg::Struct* labels = Sub(f, "labels");
  for (int i = 0; i < 40; ++i) {
    PutString(labels, absl::StrCat("label_", i), absl::StrCat("value-", (h >> (i % 48)) % 10000));
  }
  msg::Struct* process = Sub(f, "process");
  At(process, "pid").set_int32_value(static_cast<int32_t>(h % 65536));
  PutString(process, "name", "java");
  msg::ListValue* args = List(process, "args");
  for (const char* a :
       {"-Xmx2g", "-XX:+UseG1GC", "-jar", "/opt/app/orders.jar", "--spring.profiles.active=prod"}) {
    args->add_values()->set_string_value(a);
  }
  At(f, "trace_sampled").set_bool_value(h % 2 == 0);
  At(f, "null_field").set_null_value(msg::NULL_VALUE);
  At(f, "ratio").set_float32_value(static_cast<float>(h % 1000) / 1000.0f);
  At(f, "sequence").set_uint32_value(static_cast<uint32_t>(seq));
}

}  // namespace

absl::string_view EventShapeName(EventShape shape) {
  switch (shape) {
    case EventShape::kFilebeat:
      return "filebeat";
    case EventShape::kTiny:
      return "tiny";
    case EventShape::kLarge:
      return "large";
  }
  return "unknown";
}

absl::StatusOr<EventShape> ParseEventShape(absl::string_view name) {
  for (EventShape s : {EventShape::kFilebeat, EventShape::kTiny, EventShape::kLarge}) {
    if (name == EventShapeName(s)) return s;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown event shape \"", name, "\": use filebeat, tiny or large"));
}

void MakeEvent(EventShape shape, uint64_t seq, msg::Event* event) {
  event->Clear();
  switch (shape) {
    case EventShape::kFilebeat:
      MakeFilebeat(seq, event);
      return;
    case EventShape::kTiny:
      MakeTiny(seq, event);
      return;
    case EventShape::kLarge:
      MakeLarge(seq, event);
      return;
  }
}

std::string MakeSerializedEventEntry(EventShape shape, uint64_t seq) {
  msg::Event event;
  MakeEvent(shape, seq, &event);
  std::string out;
  {
    google::protobuf::io::StringOutputStream raw(&out);
    google::protobuf::io::CodedOutputStream coded(&raw);
    // Map entries in key order, so equal events have equal bytes.
    coded.SetSerializationDeterministic(true);
    coded.WriteTag(msg::PublishRequest::kEventsFieldNumber << 3 |
                   google::protobuf::internal::WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
    coded.WriteVarint32(static_cast<uint32_t>(event.ByteSizeLong()));
    event.SerializeWithCachedSizes(&coded);
  }
  return out;
}

}  // namespace shipper::load
