// The input table: every input Shipper has, one line each in registry.cc.
//
// Adding an input: its folder shipper/input/<name>/ (settings, keys, checks, factory, its own
// cc_library and tests), one line in Inputs() and one dep in BUILD.bazel's registry target (plus
// WORKSPACE and ./dev's package list when it brings a library of its own).
//
// Thread safety: the table is built once and immutable; read it from any thread.
#ifndef SHIPPER_SHIPPER_INPUT_REGISTRY_H_
#define SHIPPER_SHIPPER_INPUT_REGISTRY_H_

#include <vector>

#include "shipper/input/input.h"

namespace shipper {

// Every input, in the order --help lists their keys.
const std::vector<InputType>& Inputs();

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_INPUT_REGISTRY_H_
