#include "shipper/input/registry.h"

#include "shipper/input/otlp/otlp_settings.h"
#include "shipper/input/producer/producer_input.h"

namespace shipper {

const std::vector<InputType>& Inputs() {
  static const std::vector<InputType>* inputs = new std::vector<InputType>{
      ProducerInputType(),
      OtlpInputType(),
  };
  return *inputs;
}

}  // namespace shipper
