// The console output: NDJSON to stdout, one batch's lines together, for debugging.
//
// Thread safety: Write() from several threads at once.
#ifndef SHIPPER_SHIPPER_OUTPUT_CONSOLE_CONSOLE_OUTPUT_H_
#define SHIPPER_SHIPPER_OUTPUT_CONSOLE_CONSOLE_OUTPUT_H_

#include "shipper/output/output.h"

namespace shipper {

// The registry's entry (registry.cc); its only key is shipper.output.console.enabled.
OutputType ConsoleOutputType();

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_OUTPUT_CONSOLE_CONSOLE_OUTPUT_H_
