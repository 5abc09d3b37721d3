#include "shipper/input/otlp/otlp_gzip.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shipper/input/otlp/otlp_compress_testing.h"

namespace shipper {
namespace {

using ::testing::HasSubstr;

std::string Gzip(const std::string& plain) { return testing::Compress(plain); }

struct Charges {
  size_t charged = 0;
  size_t budget = SIZE_MAX;
  bool operator()(size_t n) {
    if (charged + n > budget) return false;
    charged += n;
    return true;
  }
};

TEST(OtlpGzipTest, InflatesWhatFitsAndChargesBeforeItGrows) {
  const std::string plain(1 << 20, 'p');
  Charges charges;
  std::string out;
  ASSERT_TRUE(Gunzip(Gzip(plain), 1 << 20, "limit", std::ref(charges), &out).ok());
  EXPECT_EQ(out, plain);  // exactly at the limit is taken
  EXPECT_GE(charges.charged, out.size());
  EXPECT_TRUE(LooksLikeGzip(Gzip(plain)));
  EXPECT_FALSE(LooksLikeGzip("\x0a\x02"));
}

TEST(OtlpGzipTest, SeveralMembersFollowEachOther) {
  Charges charges;
  std::string out;
  ASSERT_TRUE(Gunzip(Gzip("one ") + Gzip("two"), 100, "limit", std::ref(charges), &out).ok());
  EXPECT_EQ(out, "one two");
}

TEST(OtlpGzipTest, ABombStopsAtTheLimit) {
  const std::string bomb = Gzip(std::string(64 << 20, '\0'));
  EXPECT_LT(bomb.size(), 100 << 10);
  Charges charges;
  std::string out;
  const absl::Status s =
      Gunzip(bomb, 1 << 20, "shipper.otlp.max_message_size", std::ref(charges), &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(s.message(), HasSubstr("shipper.otlp.max_message_size"));
  EXPECT_LE(charges.charged, (1 << 20) + 0u) << "never more than the limit held";
  EXPECT_TRUE(out.empty());
}

TEST(OtlpGzipTest, NoRoomTellsRetryLaterFromTooLarge) {
  Charges small{0, 64 << 10};
  std::string out;
  // Fits the limit, not the budget now: retry later.
  EXPECT_EQ(
      Gunzip(Gzip(std::string(512 << 10, 'a')), 1 << 20, "limit", std::ref(small), &out).code(),
      absl::StatusCode::kUnavailable);
  // Beyond the limit: too large, even though the budget stopped it first.
  Charges again{0, 64 << 10};
  EXPECT_EQ(Gunzip(Gzip(std::string(2 << 20, 'a')), 1 << 20, "limit", std::ref(again), &out).code(),
            absl::StatusCode::kResourceExhausted);
}

TEST(OtlpGzipTest, DamagedOrTruncatedOrNotGzip) {
  const std::string good = Gzip(std::string(10000, 'x') + "tail");
  Charges charges;
  std::string out;
  EXPECT_EQ(
      Gunzip(good.substr(0, good.size() / 2), 1 << 20, "limit", std::ref(charges), &out).code(),
      absl::StatusCode::kInvalidArgument);
  std::string damaged = good;
  damaged[damaged.size() - 6] ^= 0x55;  // the CRC
  EXPECT_EQ(Gunzip(damaged, 1 << 20, "limit", std::ref(charges), &out).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Gunzip("not gzip at all", 1 << 20, "limit", std::ref(charges), &out).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(OtlpInflaterTest, InflatesABodyThatArrivesAByteAtATimeInEveryCoding) {
  const std::string plain = std::string(100000, 'p') + "tail";
  for (int bits : {16 + MAX_WBITS, MAX_WBITS, -MAX_WBITS}) {
    SCOPED_TRACE(bits);
    const std::string compressed = testing::Compress(plain, bits);
    Inflater inflater(bits > 16 ? ContentCoding::kGzip : ContentCoding::kDeflate, 1 << 20, "limit");
    std::string out;
    for (char c : compressed) {
      ASSERT_TRUE(inflater
                      .Feed(absl::string_view(&c, 1),
                            [&](const char* data, size_t size) {
                              out.append(data, size);
                              return true;
                            })
                      .ok());
    }
    EXPECT_TRUE(inflater.Finish().ok());
    EXPECT_EQ(out, plain);
  }
  EXPECT_EQ(ParseContentEncoding(""), ContentCoding::kIdentity);
  EXPECT_EQ(ParseContentEncoding(" GZIP "), ContentCoding::kGzip);
  EXPECT_EQ(ParseContentEncoding("zstd"), std::nullopt);
  EXPECT_EQ(ParseContentEncoding("gzip, br"), std::nullopt);
}

}  // namespace
}  // namespace shipper
