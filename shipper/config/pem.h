// PEM files that config keys name (TLS certificates and keys), read once at start.
//
// Thread safety: stateless; call from any thread.
#ifndef SHIPPER_SHIPPER_CONFIG_PEM_H_
#define SHIPPER_SHIPPER_CONFIG_PEM_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace shipper {

// The contents of the file at `path`, which config key `key` names, checked to hold a `what`
// block ("CERTIFICATE", "PRIVATE KEY"). INVALID_ARGUMENT names the key and what is wrong.
absl::StatusOr<std::string> ReadPem(absl::string_view key, const std::string& path,
                                    absl::string_view what);

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_CONFIG_PEM_H_
