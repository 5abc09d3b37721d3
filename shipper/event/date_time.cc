#include "shipper/event/date_time.h"

#include <cstring>

namespace shipper {

bool FormatDateTime(int64_t seconds, char (&out)[19]) {
  // Days since 1970-01-01 to a civil date: Howard Hinnant's days_from_civil, inverted.
  int64_t days = seconds / 86400;
  int64_t rest = seconds % 86400;
  if (rest < 0) rest += 86400, days -= 1;
  const int64_t z = days + 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  const int64_t day = doy - (153 * mp + 2) / 5 + 1;
  const int64_t month = mp < 10 ? mp + 3 : mp - 9;
  const int64_t year = yoe + era * 400 + (month <= 2);
  if (year < 0 || year > 9999) return false;
  std::memcpy(out, "0000-00-00T00:00:00", sizeof out);
  Digits(year, 4, out + 4);
  Digits(month, 2, out + 7);
  Digits(day, 2, out + 10);
  Digits(rest / 3600, 2, out + 13);
  Digits(rest / 60 % 60, 2, out + 16);
  Digits(rest % 60, 2, out + 19);
  return true;
}

size_t FormatRfc3339(int64_t seconds, int32_t nanos, char (&out)[kRfc3339Max]) {
  // 1000-01-01T00:00:00Z and 10000-01-01T00:00:00Z: absl writes other years in other widths.
  constexpr int64_t kYear1000 = -30610224000, kYear10000 = 253402300800;
  char date_time[19];
  if (seconds < kYear1000 || seconds >= kYear10000 || nanos < 0 || nanos > 999999999 ||
      !FormatDateTime(seconds, date_time)) {
    return 0;
  }
  std::memcpy(out, date_time, sizeof date_time);
  size_t n = sizeof date_time;
  if (nanos != 0) {
    int digits = 9;
    while (nanos % 10 == 0) nanos /= 10, --digits;
    out[n++] = '.';
    Digits(nanos, digits, out + n + digits);
    n += digits;
  }
  out[n++] = 'Z';
  return n;
}

}  // namespace shipper
