// Timestamps as RFC 3339 text in UTC, formatted by hand: the outputs write one for every event,
// and absl::FormatTime's time-zone lookup and std::string cost more than the rest of a small
// event.
//
// Thread safety: stateless functions; call from any thread.
#ifndef SHIPPER_SHIPPER_EVENT_DATE_TIME_H_
#define SHIPPER_SHIPPER_EVENT_DATE_TIME_H_

#include <cstddef>
#include <cstdint>

namespace shipper {

// Writes `n` as exactly `width` decimal digits ending just before `end`.
inline void Digits(uint64_t n, int width, char* end) {
  for (int i = 0; i < width; ++i, n /= 10) *--end = static_cast<char>('0' + n % 10);
}

// Writes `seconds` since the epoch as "YYYY-MM-DDTHH:MM:SS" (UTC) at `out`; false, writing
// nothing, for a year outside 0000-9999.
bool FormatDateTime(int64_t seconds, char (&out)[19]);

// The longest FormatRfc3339() writes: "YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ".
constexpr size_t kRfc3339Max = 30;

// Writes the time `seconds` and `nanos` (0 to 999,999,999) after the epoch as
// absl::FormatTime("%Y-%m-%dT%H:%M:%E*SZ", time, absl::UTCTimeZone()) does: the fraction with as
// many digits as it needs, none when it is 0. Returns the length written, or 0 (writing nothing)
// where that text would differ from this one's shape: a year outside 1000-9999, nanos out of
// range.
size_t FormatRfc3339(int64_t seconds, int32_t nanos, char (&out)[kRfc3339Max]);

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_EVENT_DATE_TIME_H_
