// A request's body as it arrives, held only in memory charged to a MemoryBudget before it is
// allocated: the same bytes cost the same whether they came with a Content-Length, chunked, or
// inflated from a compressed body, so that the verdict on an export never depends on how it was
// sent (otlp_exports.h).
//
// Bytes of unknown length go into pieces of kPieceBytes (or what arrived at once, when more),
// each charged as it is allocated: at most kPieceBytes more than the body. Flatten() copies them
// into one run of exactly the body's size, charged before it is made, and gives the pieces back
// (a single piece with room to spare too: what Export() converts then holds the body's size). A
// body of known length is one piece of exactly that length. So a body of n bytes holds at most n +
// kPieceBytes while it arrives, 2n + kPieceBytes while it is flattened, and n once flat. Small
// pieces keep that excess small, so that a body whose records fit the budget is not refused for its
// pieces; 16 KiB pieces cost a 64 MiB body 4096 of them.
//
// Thread safety: one thread at a time. The budget is shared and thread-safe.
#ifndef SHIPPER_SHIPPER_INPUT_OTLP_OTLP_REQUEST_BODY_H_
#define SHIPPER_SHIPPER_INPUT_OTLP_OTLP_REQUEST_BODY_H_

#include <cstddef>
#include <memory>
#include <vector>

#include "absl/strings/string_view.h"
#include "runtime/memory_budget.h"

namespace shipper {

class RequestBody {
 public:
  // The size of a piece of a body of unknown length.
  static constexpr size_t kPieceBytes = 16 << 10;

  // `budget` must outlive the body.
  explicit RequestBody(runtime::MemoryBudget* budget) : budget_(budget) {}
  ~RequestBody() { Clear(); }
  RequestBody(const RequestBody&) = delete;
  RequestBody& operator=(const RequestBody&) = delete;

  // Room for `length` bytes in one piece, when the length is known before the body arrives.
  // False (holding nothing more) when the budget has no room for them now. REQUIRES: empty.
  bool Expect(size_t length);
  // Appends `size` bytes; false when the budget has no room for a piece now (the body is then
  // incomplete: the request is answered without it).
  bool Append(const char* data, size_t size);
  // Makes the body one run of bytes (bytes()). False when the budget has no room for the copy
  // now; the body stays as it was.
  bool Flatten();
  // REQUIRES: Flatten() returned true, or the body is one piece (Expect()).
  absl::string_view bytes() const;

  size_t size() const { return size_; }
  // What the body holds charged to the budget.
  size_t charged() const { return charged_; }
  // Frees every piece and gives their charge back.
  void Clear();

 private:
  struct Piece {
    std::unique_ptr<char[]> data;
    size_t capacity = 0;
    size_t used = 0;
  };
  // A piece of `capacity` bytes at the end, charged first; false when there is no room.
  bool AddPiece(size_t capacity);

  runtime::MemoryBudget* const budget_;
  std::vector<Piece> pieces_;
  size_t size_ = 0;
  size_t charged_ = 0;
};

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_INPUT_OTLP_OTLP_REQUEST_BODY_H_
