#include "shipper/codec/compression.h"

#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_createDCtx_advanced: zstd's memory through a budget
#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "glog/logging.h"

namespace shipper {
namespace {

// Decode's output grows by this much at a time (or what is left of max_bytes).
constexpr size_t kStep = 256 << 10;
// What a decoder writes into at once.
constexpr size_t kOutputBuffer = 16 << 10;
// An Encoder gathers pieces up to this before it compresses them, so that small pieces (an
// action line, a tiny event's document) do not each pay a call into the library.
constexpr size_t kPending = 64 << 10;
// An Encoder's output grows by this much at a time: sized for the worst case up front, a
// megabyte body's output would cost more in zeroing and page faults than its compression.
constexpr size_t kChunk = 64 << 10;

// The window a zstd frame may ask for: what a body of max_bytes needs, but never less than
// zstd's level 19 and the Go encoder (the Collector's) ask for by default, nor more than zstd's
// own default limit.
int ZstdWindowLogMax(size_t max_bytes) {
  int log = 23;  // 8 MiB
  while (log < ZSTD_WINDOWLOG_LIMIT_DEFAULT && (size_t{1} << log) < max_bytes) ++log;
  return log;
}

absl::Status NoRoom() {
  return absl::UnavailableError(
      "the memory budget (shipper.queue.mem.bytes) has no room to decode the request now");
}

// A codec library's allocations, charged to a budget before they are made. Each block carries
// its size in front: zlib's and zstd's free functions are not told it.
class ChargedMemory {
 public:
  explicit ChargedMemory(runtime::MemoryBudget* budget) : budget_(budget) {}

  void* Allocate(size_t size) {
    if (size > SIZE_MAX - kHeader || !budget_->TryAcquire(size + kHeader)) {
      refused_ = true;
      return nullptr;
    }
    char* block = static_cast<char*>(std::malloc(size + kHeader));
    if (block == nullptr) {
      budget_->Release(size + kHeader);
      return nullptr;
    }
    const size_t total = size + kHeader;
    std::memcpy(block, &total, sizeof total);
    return block + kHeader;
  }

  void Free(void* address) {
    if (address == nullptr) return;
    char* block = static_cast<char*>(address) - kHeader;
    size_t total;
    std::memcpy(&total, block, sizeof total);
    std::free(block);
    budget_->Release(total);
  }

  // Whether the budget refused an allocation (the library's failure is then ours to explain).
  bool refused() const { return refused_; }

 private:
  static constexpr size_t kHeader = alignof(std::max_align_t);

  runtime::MemoryBudget* const budget_;
  bool refused_ = false;
};

}  // namespace

std::optional<ContentCoding> ParseContentEncoding(absl::string_view header) {
  const std::string coding = absl::AsciiStrToLower(absl::StripAsciiWhitespace(header));
  if (coding.empty() || coding == "identity") return ContentCoding::kIdentity;
  if (coding == "gzip" || coding == "x-gzip") return ContentCoding::kGzip;
  if (coding == "deflate") return ContentCoding::kDeflate;
  if (coding == "zstd") return ContentCoding::kZstd;
  return std::nullopt;
}

bool LooksLikeGzip(absl::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

// What every coding's decoder shares: the output's bound and count.
class Decoder::Codec {
 public:
  Codec(absl::string_view name, size_t max_bytes, absl::string_view limit_key)
      : name_(name), max_bytes_(max_bytes), limit_key_(limit_key) {}
  virtual ~Codec() = default;

  virtual absl::Status Feed(absl::string_view compressed, Sink sink) = 0;

  absl::Status Finish() const {
    if (ended_) return absl::OkStatus();
    return Invalid("it ends early");
  }

  size_t decoded() const { return decoded_; }

 protected:
  // Counts a piece of output and hands it to `sink`.
  absl::Status Emit(const char* data, size_t size, Sink sink) {
    if (size == 0) return absl::OkStatus();
    decoded_ += size;
    if (decoded_ > max_bytes_) {
      return absl::ResourceExhaustedError(absl::StrCat("the request decodes to more than ",
                                                       limit_key_, " (", max_bytes_, " bytes)"));
    }
    if (!sink(data, size)) return absl::CancelledError("the sink took no more");
    return absl::OkStatus();
  }

  absl::Status Invalid(absl::string_view why) const {
    return absl::InvalidArgumentError(
        absl::StrCat("the request is not a valid ", name_, " stream: ", why));
  }

  const absl::string_view name_;
  const size_t max_bytes_;
  const std::string limit_key_;
  bool ended_ = false;  // the last member or frame ended, no byte after it yet

 private:
  size_t decoded_ = 0;
};

namespace {

// gzip and deflate, by zlib.
class ZlibDecoder final : public Decoder::Codec {
 public:
  // zlib's state is fixed (about 45 KiB with its 32 KiB window), whatever the sender does: like
  // a connection's buffers, it is not charged, so that a compressed body needs the room of the
  // same body sent plain.
  ZlibDecoder(ContentCoding coding, size_t max_bytes, absl::string_view limit_key)
      : Codec(coding == ContentCoding::kGzip ? "gzip" : "deflate", max_bytes, limit_key),
        gzip_(coding == ContentCoding::kGzip) {}

  ~ZlibDecoder() override {
    if (started_) inflateEnd(&z_);
  }

  absl::Status Feed(absl::string_view compressed, Decoder::Sink sink) override {
    if (compressed.empty()) return absl::OkStatus();
    if (!started_) {
      int bits = 16 + MAX_WBITS;  // gzip only
      if (!gzip_) {
        // zlib's header: compression method 8, a window of at most 32 KiB. Else raw deflate.
        const auto first = static_cast<unsigned char>(compressed[0]);
        bits = (first & 0x0f) == 8 && (first >> 4) <= 7 ? MAX_WBITS : -MAX_WBITS;
      }
      const int rc = inflateInit2(&z_, bits);
      if (rc != Z_OK) return Failed(rc);
      started_ = true;
    }
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
    z_.avail_in = static_cast<uInt>(compressed.size());
    unsigned char out[kOutputBuffer];
    for (;;) {
      if (ended_) {
        if (z_.avail_in == 0) break;
        if (!gzip_) return Invalid("data follows its end");
        inflateReset(&z_);  // another gzip member follows
        ended_ = false;
      }
      z_.next_out = out;
      z_.avail_out = sizeof out;
      const int rc = inflate(&z_, Z_NO_FLUSH);
      const size_t produced = sizeof out - z_.avail_out;
      if (absl::Status s = Emit(reinterpret_cast<const char*>(out), produced, sink); !s.ok()) {
        return s;
      }
      if (rc == Z_STREAM_END) {
        ended_ = true;
        continue;
      }
      if (rc == Z_BUF_ERROR && produced == 0) break;  // wants more input
      if (rc != Z_OK && rc != Z_BUF_ERROR) return Failed(rc);
      if (z_.avail_in == 0 && z_.avail_out != 0) break;  // all input taken, all output out
    }
    return absl::OkStatus();
  }

 private:
  absl::Status Failed(int rc) const {
    if (rc == Z_MEM_ERROR) return absl::ResourceExhaustedError("zlib: out of memory");
    return Invalid(z_.msg != nullptr ? z_.msg : "damaged");
  }

  const bool gzip_;
  z_stream z_{};
  bool started_ = false;  // the first bytes were seen (deflate decides zlib or raw on them)
};

// zstd's state is as large as the window the sender's frame asks for: charged as it is allocated.
class ZstdDecoder final : public Decoder::Codec {
 public:
  ZstdDecoder(size_t max_bytes, absl::string_view limit_key, runtime::MemoryBudget* budget)
      : Codec("zstd", max_bytes, limit_key), memory_(budget) {
    const ZSTD_customMem memory{
        [](void* memory, size_t size) {
          return static_cast<ChargedMemory*>(memory)->Allocate(size);
        },
        [](void* memory, void* address) { static_cast<ChargedMemory*>(memory)->Free(address); },
        &memory_};
    dctx_ = ZSTD_createDCtx_advanced(memory);
    if (dctx_ != nullptr) {
      CHECK(!ZSTD_isError(
          ZSTD_DCtx_setParameter(dctx_, ZSTD_d_windowLogMax, ZstdWindowLogMax(max_bytes))));
    }
  }

  ~ZstdDecoder() override { ZSTD_freeDCtx(dctx_); }

  absl::Status Feed(absl::string_view compressed, Decoder::Sink sink) override {
    if (compressed.empty()) return absl::OkStatus();
    if (dctx_ == nullptr) return NoRoom();
    ZSTD_inBuffer in{compressed.data(), compressed.size(), 0};
    char out[kOutputBuffer];
    for (;;) {
      ZSTD_outBuffer output{out, sizeof out, 0};
      // 0: a frame ended and all its output is out; the next call starts the next frame.
      const size_t rc = ZSTD_decompressStream(dctx_, &output, &in);
      if (ZSTD_isError(rc)) return Failed(rc);
      if (absl::Status s = Emit(out, output.pos, sink); !s.ok()) return s;
      ended_ = rc == 0;
      if (in.pos == in.size && (ended_ || output.pos < output.size)) break;
    }
    return absl::OkStatus();
  }

 private:
  absl::Status Failed(size_t rc) const {
    switch (ZSTD_getErrorCode(rc)) {
      case ZSTD_error_memory_allocation:
        if (memory_.refused()) return NoRoom();
        break;
      case ZSTD_error_frameParameter_windowTooLarge:
        return Invalid(absl::StrCat("its frame asks for a window larger than ", limit_key_, " (",
                                    max_bytes_, " bytes) needs: compress with a window of at most ",
                                    size_t{1} << ZstdWindowLogMax(max_bytes_), " bytes"));
      default:
        break;
    }
    return Invalid(ZSTD_getErrorName(rc));
  }

  ChargedMemory memory_;       // before dctx_, which gives it back as it goes
  ZSTD_DCtx* dctx_ = nullptr;  // null when the budget had no room for it
};

}  // namespace

Decoder::Decoder(ContentCoding coding, size_t max_bytes, absl::string_view limit_key,
                 runtime::MemoryBudget* budget) {
  CHECK(coding != ContentCoding::kIdentity);
  if (coding == ContentCoding::kZstd) {
    codec_ = std::make_unique<ZstdDecoder>(max_bytes, limit_key, budget);
  } else {
    codec_ = std::make_unique<ZlibDecoder>(coding, max_bytes, limit_key);
  }
}

Decoder::~Decoder() = default;

absl::Status Decoder::Feed(absl::string_view compressed, Sink sink) {
  return codec_->Feed(compressed, sink);
}

absl::Status Decoder::Finish() { return codec_->Finish(); }

size_t Decoder::decoded() const { return codec_->decoded(); }

absl::Status Decode(ContentCoding coding, absl::string_view compressed, size_t max_bytes,
                    absl::string_view limit_key, runtime::MemoryBudget* budget,
                    absl::FunctionRef<bool(size_t)> charge, std::string* out) {
  Decoder decoder(coding, max_bytes, limit_key, budget);
  const size_t start = out->size();
  size_t charged = 0;
  bool no_room = false;
  absl::Status status = decoder.Feed(compressed, [&](const char* data, size_t size) {
    if (no_room) return true;  // decoded only to be measured
    const size_t need = out->size() - start + size;
    if (need > charged) {
      const size_t grow = std::min(std::max(kStep, need - charged), max_bytes - charged);
      if (!charge(grow)) {
        // The rest is decoded only to tell a request that would fit once there is room
        // (UNAVAILABLE) from one too large ever to fit (RESOURCE_EXHAUSTED, a bomb among them).
        no_room = true;
        return true;
      }
      charged += grow;
      out->reserve(start + charged);
    }
    out->append(data, size);
    return true;
  });
  if (status.ok()) status = decoder.Finish();
  if (status.ok() && no_room) status = NoRoom();
  if (!status.ok()) *out = std::string();
  return status;
}

// What every coding's encoder shares: gathering small pieces, and the output growing in steps.
class Encoder::Codec {
 public:
  virtual ~Codec() = default;

  void Add(absl::string_view piece) {
    if (pending_.size() + piece.size() > kPending) {
      ok_ = ok_ && Compress(pending_, /*finish=*/false);
      pending_.clear();
    }
    if (piece.size() > kPending) {
      ok_ = ok_ && Compress(piece, /*finish=*/false);
    } else {
      pending_.append(piece.data(), piece.size());
    }
  }

  absl::StatusOr<std::string> Finish(absl::string_view name) {
    ok_ = ok_ && Compress(pending_, /*finish=*/true);
    if (!ok_) return absl::InternalError(absl::StrCat(name, " compression failed"));
    out_.resize(used_);
    return std::move(out_);
  }

 protected:
  Codec() { pending_.reserve(kPending); }

  // Compresses `in` into out_ after its first used_ bytes; `finish` ends the body. False when the
  // library failed.
  virtual bool Compress(absl::string_view in, bool finish) = 0;

  // Room for at least kChunk / 2 more bytes of output after the first used_.
  void Grow() {
    if (out_.size() - used_ < kChunk / 2) out_.resize(used_ + kChunk);
  }

  std::string out_;  // out_.size() is room claimed; the first used_ bytes are written
  size_t used_ = 0;
  bool ok_ = true;

 private:
  std::string pending_;  // pieces added and not yet compressed, at most kPending bytes
};

namespace {

class ZlibEncoder final : public Encoder::Codec {
 public:
  ZlibEncoder(ContentCoding coding, int level) {
    CHECK(level >= 0 && level <= 9) << "zlib level " << level;
    // The largest window; 16 more for a gzip header and trailer.
    const int bits = coding == ContentCoding::kGzip ? 16 + MAX_WBITS : MAX_WBITS;
    ok_ = deflateInit2(&z_, level, Z_DEFLATED, bits, 8, Z_DEFAULT_STRATEGY) == Z_OK;
  }
  ~ZlibEncoder() override { deflateEnd(&z_); }

 private:
  bool Compress(absl::string_view in, bool finish) override {
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z_.avail_in = static_cast<uInt>(in.size());
    const int flush = finish ? Z_FINISH : Z_NO_FLUSH;
    int rc;
    do {
      Grow();
      z_.next_out = reinterpret_cast<Bytef*>(out_.data() + used_);
      z_.avail_out = static_cast<uInt>(out_.size() - used_);
      rc = deflate(&z_, flush);
      used_ = out_.size() - z_.avail_out;
    } while (finish ? rc == Z_OK : z_.avail_in > 0 && rc == Z_OK);
    return finish ? rc == Z_STREAM_END : rc == Z_OK || rc == Z_BUF_ERROR;
  }

  z_stream z_{};
};

class ZstdEncoder final : public Encoder::Codec {
 public:
  explicit ZstdEncoder(int level) : cctx_(ZSTD_createCCtx()) {
    CHECK(level >= 1 && level <= 19) << "zstd level " << level;
    // With a checksum, as zstd's command line and the Go encoder write frames.
    ok_ = cctx_ != nullptr &&
          !ZSTD_isError(ZSTD_CCtx_setParameter(cctx_, ZSTD_c_compressionLevel, level)) &&
          !ZSTD_isError(ZSTD_CCtx_setParameter(cctx_, ZSTD_c_checksumFlag, 1));
  }
  ~ZstdEncoder() override { ZSTD_freeCCtx(cctx_); }

 private:
  bool Compress(absl::string_view in, bool finish) override {
    ZSTD_inBuffer input{in.data(), in.size(), 0};
    for (;;) {
      Grow();
      ZSTD_outBuffer output{out_.data() + used_, out_.size() - used_, 0};
      // With ZSTD_e_end: 0 once the frame is complete, else what is left to flush.
      const size_t rc =
          ZSTD_compressStream2(cctx_, &output, &input, finish ? ZSTD_e_end : ZSTD_e_continue);
      used_ += output.pos;
      if (ZSTD_isError(rc)) return false;
      if (finish ? rc == 0 : input.pos == input.size) return true;
    }
  }

  ZSTD_CCtx* const cctx_;
};

absl::string_view NameOf(ContentCoding coding) {
  switch (coding) {
    case ContentCoding::kGzip:
      return "gzip";
    case ContentCoding::kDeflate:
      return "deflate";
    case ContentCoding::kZstd:
      return "zstd";
    case ContentCoding::kIdentity:
      break;
  }
  return "identity";
}

}  // namespace

Encoder::Encoder(ContentCoding coding, int level) : coding_(coding) {
  CHECK(coding != ContentCoding::kIdentity);
  if (coding == ContentCoding::kZstd) {
    codec_ = std::make_unique<ZstdEncoder>(level);
  } else {
    codec_ = std::make_unique<ZlibEncoder>(coding, level);
  }
}

Encoder::~Encoder() = default;

void Encoder::Add(absl::string_view piece) { codec_->Add(piece); }

absl::StatusOr<std::string> Encoder::Finish() { return codec_->Finish(NameOf(coding_)); }

absl::StatusOr<std::string> Encode(ContentCoding coding, absl::string_view plain, int level) {
  Encoder encoder(coding, level);
  encoder.Add(plain);
  return encoder.Finish();
}

}  // namespace shipper
