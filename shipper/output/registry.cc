#include "shipper/output/registry.h"

#include "shipper/output/console/console_output.h"
#include "shipper/output/discard/discard_output.h"
#include "shipper/output/elasticsearch/elasticsearch_output.h"
#include "shipper/output/file/file_output.h"
#include "shipper/output/kafka/kafka_output.h"
#include "shipper/output/otlp/otlp_output.h"
#include "shipper/output/redis/redis_output.h"
#include "shipper/output/shipper/shipper_output.h"

namespace shipper {

const std::vector<OutputType>& Outputs() {
  static const std::vector<OutputType>* outputs = new std::vector<OutputType>{
      FileOutputType(),          ConsoleOutputType(), RedisOutputType(), ShipperOutputType(),
      ElasticsearchOutputType(), KafkaOutputType(),   OtlpOutputType(),  DiscardOutputType(),
  };
  return *outputs;
}

}  // namespace shipper
