// Appends protobuf wire format to a string: what the OTLP output writes requests with, field by
// field, from the queued events' own bytes.
//
// A nested message is written in place and its length put in front of it once it is known (one
// move of its bytes per level, no buffer per message).
//
// Thread safety: a writer is used by one thread.
#ifndef SHIPPER_SHIPPER_OUTPUT_OTLP_OTLP_WIRE_WRITER_H_
#define SHIPPER_SHIPPER_OUTPUT_OTLP_OTLP_WIRE_WRITER_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "shipper/event/wire_event.h"

namespace shipper {

class WireWriter {
 public:
  explicit WireWriter(std::string* out) : out_(out) {}

  void Varint(uint32_t number, uint64_t value) {
    Tag(number, wire::kVarint);
    PutVarint(value);
  }
  void Fixed64(uint32_t number, uint64_t value) {
    Tag(number, wire::kFixed64);
    char bytes[8];
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(value >> (8 * i));
    out_->append(bytes, 8);
  }
  void Bytes(uint32_t number, absl::string_view bytes) {
    Tag(number, wire::kLength);
    PutVarint(bytes.size());
    out_->append(bytes.data(), bytes.size());
  }
  // Field `number`, a message whose body write(*this) appends.
  template <typename Write>
  void Message(uint32_t number, Write write) {
    Tag(number, wire::kLength);
    const size_t start = out_->size();
    write(*this);
    char length[10];
    const size_t n = EncodeVarint(out_->size() - start, length);
    out_->insert(start, length, n);
  }

  // The most bytes a field's tag and length take before `size` bytes of contents.
  static constexpr size_t kFieldOverhead = 5 + 10;

 private:
  void Tag(uint32_t number, wire::WireType type) { PutVarint(uint64_t{number} << 3 | type); }
  void PutVarint(uint64_t value) {
    char bytes[10];
    out_->append(bytes, EncodeVarint(value, bytes));
  }
  static size_t EncodeVarint(uint64_t value, char* bytes) {
    size_t n = 0;
    while (value >= 0x80) {
      bytes[n++] = static_cast<char>(value | 0x80);
      value >>= 7;
    }
    bytes[n++] = static_cast<char>(value);
    return n;
  }

  std::string* out_;
};

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_OUTPUT_OTLP_OTLP_WIRE_WRITER_H_
