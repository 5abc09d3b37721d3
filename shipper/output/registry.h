// The output registry: every output Shipper has, one line each in registry.cc.
//
// Adding an output: its folder shipper/output/<name>/ (settings, keys, checks, factory, its own
// cc_library and tests), one line in Outputs() and one dep in BUILD.bazel's registry target (plus
// WORKSPACE and ./dev's package list when it brings a library of its own).
//
// Thread safety: the table is built once and immutable; read it from any thread.
#ifndef SHIPPER_SHIPPER_OUTPUT_REGISTRY_H_
#define SHIPPER_SHIPPER_OUTPUT_REGISTRY_H_

#include <vector>

#include "shipper/output/output.h"

namespace shipper {

// Every output, in the order --help lists them.
const std::vector<OutputType>& Outputs();

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_OUTPUT_REGISTRY_H_
