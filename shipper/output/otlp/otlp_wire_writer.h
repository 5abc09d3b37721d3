// Appends protobuf wire format to a string: what the OTLP output writes requests with, field by
// field, from the queued events' own bytes.
//
// A nested message is written in place and its length put in front of it once it is known (no
// buffer per message; a body of 128 bytes or more is moved once per level to make room for its
// length). Each field's tag and length go in one append.
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
    char bytes[kFieldOverhead];
    size_t n = EncodeVarint(uint64_t{number} << 3 | wire::kVarint, bytes);
    n += EncodeVarint(value, bytes + n);
    out_->append(bytes, n);
  }
  void Fixed64(uint32_t number, uint64_t value) {
    char bytes[5 + 8];
    const size_t n = EncodeVarint(uint64_t{number} << 3 | wire::kFixed64, bytes);
    for (int i = 0; i < 8; ++i) bytes[n + i] = static_cast<char>(value >> (8 * i));
    out_->append(bytes, n + 8);
  }
  void Fixed32(uint32_t number, uint32_t value) {
    char bytes[5 + 4];
    const size_t n = EncodeVarint(uint64_t{number} << 3 | wire::kFixed32, bytes);
    for (int i = 0; i < 4; ++i) bytes[n + i] = static_cast<char>(value >> (8 * i));
    out_->append(bytes, n + 4);
  }
  void Bytes(uint32_t number, absl::string_view bytes) {
    Header(number, bytes.size());
    out_->append(bytes.data(), bytes.size());
  }
  // Field `number`, a message whose body write(*this) appends. Its length goes in a byte set
  // aside before it: a body of 128 bytes or more, whose length takes more, is moved once to make
  // room (most nested messages, a key and its value, are shorter).
  template <typename Write>
  void Message(uint32_t number, Write write) {
    char tag[5 + 1];
    const size_t n = EncodeVarint(uint64_t{number} << 3 | wire::kLength, tag);
    tag[n] = 0;
    out_->append(tag, n + 1);
    const size_t start = out_->size();
    write(*this);
    const size_t size = out_->size() - start;
    if (size < 0x80) {
      (*out_)[start - 1] = static_cast<char>(size);
      return;
    }
    char length[10];
    out_->replace(start - 1, 1, length, EncodeVarint(size, length));
  }

  // The tag and length of field `number`, a message of `size` bytes whose fields are written
  // next: a message whose size is known beforehand, written without moving it.
  void Header(uint32_t number, size_t size) {
    char bytes[kFieldOverhead];
    size_t n = EncodeVarint(uint64_t{number} << 3 | wire::kLength, bytes);
    n += EncodeVarint(size, bytes + n);
    out_->append(bytes, n);
  }
  // The bytes field `number` takes with `size` bytes of contents: its tag, length and contents.
  static size_t FieldSize(uint32_t number, size_t size) {
    return VarintSize(uint64_t{number} << 3) + VarintSize(size) + size;
  }

  // Fields already encoded, appended as they are.
  void Raw(absl::string_view fields) { out_->append(fields.data(), fields.size()); }
  // An item of a packed repeated field, without tag, written at `out`: the bytes written (at
  // most kMaxItem). Packed fields gather their items and Raw() them together.
  static size_t EncodeVarint(uint64_t value, char* out) {
    size_t n = 0;
    while (value >= 0x80) {
      out[n++] = static_cast<char>(value | 0x80);
      value >>= 7;
    }
    out[n++] = static_cast<char>(value);
    return n;
  }
  static size_t EncodeFixed64(uint64_t value, char* out) {
    for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(value >> (8 * i));
    return 8;
  }
  static constexpr size_t kMaxItem = 10;

  // The most bytes a field's tag and length take before `size` bytes of contents.
  static constexpr size_t kFieldOverhead = 5 + 10;

 private:
  static size_t VarintSize(uint64_t value) {
    size_t n = 1;
    while (value >= 0x80) {
      value >>= 7;
      ++n;
    }
    return n;
  }
  std::string* out_;
};

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_OUTPUT_OTLP_OTLP_WIRE_WRITER_H_
