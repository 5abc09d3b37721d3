// Shipper's version: --version, the startup log line and build-info metrics read it here.
#ifndef SHIPPER_SHIPPER_VERSION_H_
#define SHIPPER_SHIPPER_VERSION_H_

namespace shipper {

inline constexpr char kVersion[] = "0.1.0";

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_VERSION_H_
