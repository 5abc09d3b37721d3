#include "shipper/input/otlp/otlp_gzip.h"

#include <zlib.h>

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace shipper {
namespace {

using ::testing::HasSubstr;

std::string Gzip(const std::string& plain) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, plain.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(plain.data()));
  z.avail_in = plain.size();
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = out.size();
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
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

}  // namespace
}  // namespace shipper
