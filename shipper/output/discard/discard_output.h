// The discard output: counts and drops, so that benchmarks measure everything but an output.
//
// Thread safety: Write() from several threads at once.
#ifndef SHIPPER_SHIPPER_OUTPUT_DISCARD_DISCARD_OUTPUT_H_
#define SHIPPER_SHIPPER_OUTPUT_DISCARD_DISCARD_OUTPUT_H_

#include "shipper/output/output.h"

namespace shipper {

// The registry's entry (registry.cc); its only key is shipper.output.discard.enabled.
OutputType DiscardOutputType();

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_OUTPUT_DISCARD_DISCARD_OUTPUT_H_
