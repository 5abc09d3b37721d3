#include "shipper/output/batch_json.h"

namespace shipper {

void BatchJson::Encode(const Events& events) {
  buffer_.Clear();
  ends_.clear();
  for (size_t i = 0; i < events.size(); ++i) {
    writer_.Append(events.bytes(i), events.index(i));
    ends_.push_back(buffer_.GetSize());
  }
}

absl::string_view BatchJson::line(size_t i) const {
  const size_t begin = i == 0 ? 0 : ends_[i - 1];
  return ndjson().substr(begin, ends_[i] - begin);
}

absl::string_view BatchJson::document(size_t i) const {
  absl::string_view l = line(i);
  l.remove_suffix(1);
  return l;
}

}  // namespace shipper
