#include "shipper/input/otlp/otlp_request_body.h"

#include <algorithm>
#include <cstring>

#include "glog/logging.h"

namespace shipper {

bool RequestBody::AddPiece(size_t capacity) {
  if (!budget_->TryAcquire(capacity)) return false;
  charged_ += capacity;
  pieces_.push_back(Piece{std::unique_ptr<char[]>(new char[capacity]), capacity, 0});
  return true;
}

bool RequestBody::Expect(size_t length) {
  CHECK(pieces_.empty());
  return length == 0 || AddPiece(length);
}

bool RequestBody::Append(const char* data, size_t size) {
  while (size > 0) {
    if (pieces_.empty() || pieces_.back().used == pieces_.back().capacity) {
      if (!AddPiece(std::max(kPieceBytes, size))) return false;
    }
    Piece& piece = pieces_.back();
    const size_t n = std::min(size, piece.capacity - piece.used);
    std::memcpy(piece.data.get() + piece.used, data, n);
    piece.used += n;
    size_ += n;
    data += n;
    size -= n;
  }
  return true;
}

bool RequestBody::Flatten() {
  // Already one run of exactly its bytes (a known length), or nothing.
  if (charged_ == size_ && pieces_.size() <= 1) return true;
  Piece flat;
  if (!budget_->TryAcquire(size_)) return false;
  flat.data.reset(new char[size_]);
  flat.capacity = size_;
  for (const Piece& piece : pieces_) {
    std::memcpy(flat.data.get() + flat.used, piece.data.get(), piece.used);
    flat.used += piece.used;
  }
  Clear();
  size_ = flat.used;
  charged_ = flat.capacity;
  pieces_.push_back(std::move(flat));
  return true;
}

absl::string_view RequestBody::bytes() const {
  CHECK_LE(pieces_.size(), 1u);
  if (pieces_.empty()) return {};
  return absl::string_view(pieces_[0].data.get(), pieces_[0].used);
}

void RequestBody::Clear() {
  pieces_.clear();
  if (charged_ > 0) budget_->Release(charged_);
  charged_ = 0;
  size_ = 0;
}

}  // namespace shipper
