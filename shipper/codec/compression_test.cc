#include "shipper/codec/compression.h"

#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/memory_budget.h"

namespace shipper {
namespace {

using ::testing::HasSubstr;

constexpr ContentCoding kCodings[] = {ContentCoding::kGzip, ContentCoding::kDeflate,
                                      ContentCoding::kZstd};

std::string Encoded(ContentCoding coding, absl::string_view plain, int level = 3) {
  absl::StatusOr<std::string> encoded = Encode(coding, plain, level);
  EXPECT_TRUE(encoded.ok()) << encoded.status();
  return *encoded;
}

// zlib's deflate without its 2-byte header and 4-byte Adler-32 trailer: raw deflate.
std::string RawDeflate(absl::string_view plain) {
  const std::string zlib = Encoded(ContentCoding::kDeflate, plain);
  return zlib.substr(2, zlib.size() - 6);
}

// Bytes no coding shrinks.
std::string Noise(size_t size) {
  std::string noise(size, '\0');
  uint32_t x = 1;
  for (char& c : noise) c = static_cast<char>((x = x * 1103515245 + 12345) >> 24);
  return noise;
}

struct Charges {
  size_t charged = 0;
  size_t budget = SIZE_MAX;
  bool operator()(size_t n) {
    if (charged + n > budget) return false;
    charged += n;
    return true;
  }
};

// Feeds `compressed` a byte at a time and returns what it decodes to, or the first error.
absl::StatusOr<std::string> DecodeByBytes(ContentCoding coding, absl::string_view compressed,
                                          runtime::MemoryBudget* budget,
                                          size_t max_bytes = 1 << 20) {
  Decoder decoder(coding, max_bytes, "limit", budget);
  std::string out;
  for (char c : compressed) {
    absl::Status s = decoder.Feed(absl::string_view(&c, 1), [&](const char* data, size_t size) {
      out.append(data, size);
      return true;
    });
    if (!s.ok()) return s;
  }
  if (absl::Status s = decoder.Finish(); !s.ok()) return s;
  EXPECT_EQ(decoder.decoded(), out.size());
  return out;
}

TEST(CompressionTest, EveryCodingRoundTripsAtEveryLevelInPieces) {
  // The output grows 64 KiB at a time: bodies whose output fits in one step, spans many (level 0
  // stores 4 MB as it is), and none at all.
  const std::string large = Noise(100000) + std::string(4 << 20, 'p') + "tail";
  for (ContentCoding coding : kCodings) {
    for (int level : {0, 1, 9, 19}) {
      const bool zstd = coding == ContentCoding::kZstd;
      if ((zstd && level == 0) || (!zstd && level == 19)) continue;  // zlib 0-9, zstd 1-19
      for (const std::string& plain : {std::string(), std::string("{}\n"), large}) {
        SCOPED_TRACE(absl::StrCat(static_cast<int>(coding), " level ", level, " ", plain.size()));
        Encoder encoder(coding, level);
        // Pieces smaller and larger than what the encoder gathers before it compresses.
        for (size_t at = 0, size = 7; at < plain.size(); at += size, size *= 3) {
          encoder.Add(absl::string_view(plain).substr(at, size));
        }
        absl::StatusOr<std::string> encoded = encoder.Finish();
        ASSERT_TRUE(encoded.ok()) << encoded.status();
        runtime::MemoryBudget budget(0);
        std::string decoded;
        auto charge = [](size_t) { return true; };
        ASSERT_TRUE(Decode(coding, *encoded, 8 << 20, "limit", &budget, charge, &decoded).ok());
        EXPECT_EQ(decoded, plain);
        EXPECT_EQ(budget.in_use(), 0u) << "the decoder's state is given back";
      }
    }
  }
  EXPECT_EQ(Encoded(ContentCoding::kGzip, "", 0).substr(0, 2), "\x1f\x8b");
}

TEST(CompressionTest, ABodyArrivingAByteAtATimeDecodes) {
  const std::string plain = Noise(20000) + std::string(100000, 'p') + "tail";
  for (ContentCoding coding : kCodings) {
    runtime::MemoryBudget budget(0);
    EXPECT_EQ(DecodeByBytes(coding, Encoded(coding, plain), &budget).value_or("failed"), plain);
    EXPECT_EQ(budget.in_use(), 0u);
  }
}

TEST(CompressionTest, RawDeflateAndSeveralMembersOrFramesDecode) {
  runtime::MemoryBudget budget(0);
  EXPECT_EQ(DecodeByBytes(ContentCoding::kDeflate, RawDeflate("raw body"), &budget).value(),
            "raw body");
  for (ContentCoding coding : {ContentCoding::kGzip, ContentCoding::kZstd}) {
    EXPECT_EQ(DecodeByBytes(coding, Encoded(coding, "one ") + Encoded(coding, "two"), &budget)
                  .value_or("failed"),
              "one two");
  }
  // zlib's format has one stream.
  EXPECT_EQ(
      DecodeByBytes(ContentCoding::kDeflate,
                    Encoded(ContentCoding::kDeflate, "a") + Encoded(ContentCoding::kDeflate, "b"),
                    &budget)
          .status()
          .code(),
      absl::StatusCode::kInvalidArgument);
}

TEST(CompressionTest, DecodesWhatFitsAndChargesBeforeItGrows) {
  const std::string plain(1 << 20, 'p');
  for (ContentCoding coding : kCodings) {
    Charges charges;
    runtime::MemoryBudget budget(0);
    std::string out;
    ASSERT_TRUE(
        Decode(coding, Encoded(coding, plain), 1 << 20, "limit", &budget, std::ref(charges), &out)
            .ok());
    EXPECT_EQ(out, plain);  // exactly at the limit is taken
    EXPECT_GE(charges.charged, out.size());
    EXPECT_EQ(budget.in_use(), 0u);
  }
  EXPECT_TRUE(LooksLikeGzip(Encoded(ContentCoding::kGzip, plain)));
  EXPECT_FALSE(LooksLikeGzip("\x0a\x02"));
}

TEST(CompressionTest, ABombStopsAtTheLimitInEveryCoding) {
  const std::string zeros(64 << 20, '\0');
  for (ContentCoding coding : kCodings) {
    SCOPED_TRACE(static_cast<int>(coding));
    const std::string bomb = Encoded(coding, zeros, 9);
    EXPECT_LT(bomb.size(), 100 << 10);
    Charges charges;
    runtime::MemoryBudget budget(0);
    std::string out;
    const absl::Status s = Decode(coding, bomb, 1 << 20, "shipper.otlp.max_message_size", &budget,
                                  std::ref(charges), &out);
    EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
    EXPECT_THAT(s.message(), HasSubstr("shipper.otlp.max_message_size"));
    EXPECT_LE(charges.charged, (1 << 20) + 0u) << "never more than the limit held";
    EXPECT_TRUE(out.empty());
  }
}

TEST(CompressionTest, NoRoomTellsRetryLaterFromTooLarge) {
  for (ContentCoding coding : kCodings) {
    runtime::MemoryBudget budget(0);
    Charges small{0, 64 << 10};
    std::string out;
    // Fits the limit, not the budget now: retry later.
    EXPECT_EQ(Decode(coding, Encoded(coding, std::string(512 << 10, 'a')), 1 << 20, "limit",
                     &budget, std::ref(small), &out)
                  .code(),
              absl::StatusCode::kUnavailable);
    // Beyond the limit: too large, even though the budget stopped it first.
    Charges again{0, 64 << 10};
    EXPECT_EQ(Decode(coding, Encoded(coding, std::string(2 << 20, 'a')), 1 << 20, "limit", &budget,
                     std::ref(again), &out)
                  .code(),
              absl::StatusCode::kResourceExhausted);
  }
}

TEST(CompressionTest, ZstdsStateIsChargedBeforeItIsAllocated) {
  const std::string plain = Noise(1 << 20);
  {
    const ContentCoding coding = ContentCoding::kZstd;
    const std::string encoded = Encoded(coding, plain);
    // A budget too small for the decoder's window: retry later, nothing taken.
    runtime::MemoryBudget tiny(1024);
    absl::StatusOr<std::string> refused = DecodeByBytes(coding, encoded, &tiny);
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable);
    EXPECT_THAT(refused.status().message(), HasSubstr("shipper.queue.mem.bytes"));
    EXPECT_EQ(tiny.in_use(), 0u);
    // What it holds while decoding is charged, and given back.
    runtime::MemoryBudget counting(0);
    Decoder decoder(coding, 2 << 20, "limit", &counting);
    size_t held = 0;
    ASSERT_TRUE(decoder
                    .Feed(encoded,
                          [&](const char*, size_t) {
                            held = std::max(held, counting.in_use());
                            return true;
                          })
                    .ok());
    EXPECT_GE(held, 1u << 20) << "its window";
    EXPECT_GT(counting.in_use(), 0u);
  }
}

TEST(CompressionTest, AZstdFrameAsksForNoMoreWindowThanTheLimitNeeds) {
  // More than an Encoder gathers, so that its frame is streamed: its header has a window
  // descriptor (magic, frame header descriptor, then the window's exponent less 10, << 3).
  const std::string plain(100 << 10, 'w');
  std::string frame = Encoded(ContentCoding::kZstd, plain);
  ASSERT_EQ(static_cast<unsigned char>(frame[4]) & 0x20, 0) << "single segment";
  frame[5] = static_cast<char>((27 - 10) << 3);  // 128 MiB, as zstd --long=27 asks
  runtime::MemoryBudget budget(0);
  absl::StatusOr<std::string> refused = DecodeByBytes(ContentCoding::kZstd, frame, &budget);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("window larger than limit"));
  EXPECT_EQ(budget.in_use(), 0u);
  // The same window is taken where the limit needs it.
  EXPECT_EQ(DecodeByBytes(ContentCoding::kZstd, frame, &budget, 128 << 20).value_or("failed"),
            plain);
}

TEST(CompressionTest, DamagedTruncatedOrNotEncoded) {
  runtime::MemoryBudget budget(0);
  for (ContentCoding coding : kCodings) {
    SCOPED_TRACE(static_cast<int>(coding));
    const std::string good = Encoded(coding, Noise(10000) + "tail");
    EXPECT_EQ(DecodeByBytes(coding, good.substr(0, good.size() / 2), &budget).status().code(),
              absl::StatusCode::kInvalidArgument);
    std::string damaged = good;
    damaged[damaged.size() - 2] ^= 0x55;  // in the checksum
    EXPECT_EQ(DecodeByBytes(coding, damaged, &budget).status().code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(DecodeByBytes(coding, "not encoded at all", &budget).status().code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(DecodeByBytes(coding, good + "x", &budget).status().code(),
              absl::StatusCode::kInvalidArgument)
        << "data after its end";
    EXPECT_EQ(DecodeByBytes(coding, "", &budget).status().code(),
              absl::StatusCode::kInvalidArgument)
        << "no body at all";
  }
  EXPECT_EQ(budget.in_use(), 0u);
}

TEST(CompressionTest, ContentEncodings) {
  EXPECT_EQ(ParseContentEncoding(""), ContentCoding::kIdentity);
  EXPECT_EQ(ParseContentEncoding("identity"), ContentCoding::kIdentity);
  EXPECT_EQ(ParseContentEncoding(" GZIP "), ContentCoding::kGzip);
  EXPECT_EQ(ParseContentEncoding("x-gzip"), ContentCoding::kGzip);
  EXPECT_EQ(ParseContentEncoding("deflate"), ContentCoding::kDeflate);
  EXPECT_EQ(ParseContentEncoding("Zstd"), ContentCoding::kZstd);
  EXPECT_EQ(ParseContentEncoding("br"), std::nullopt);
  EXPECT_EQ(ParseContentEncoding("snappy"), std::nullopt);
  EXPECT_EQ(ParseContentEncoding("gzip, br"), std::nullopt);
}

}  // namespace
}  // namespace shipper
