// Counts finished gRPC calls by method and status code (shipper_grpc_requests_total), through a
// server interceptor, so no service code has to remember to count.
//
// Methods outside kCountedMethods are counted as method="other", which bounds the label values
// whatever paths clients send.
//
// Thread safety: gRPC creates and runs the interceptors on its threads; counting is lock-free
// once a (method, code) pair has been seen.
#ifndef SHIPPER_SHIPPER_METRICS_GRPC_METRICS_H_
#define SHIPPER_SHIPPER_METRICS_GRPC_METRICS_H_

#include "grpcpp/server_builder.h"

namespace shipper::metrics {

inline constexpr const char* kCountedMethods[] = {
    "/elastic.agent.shipper.v1.Producer/PublishEvents",
    "/elastic.agent.shipper.v1.Producer/PersistedIndex",
    "/grpc.health.v1.Health/Check",
    "/grpc.health.v1.Health/Watch",
};

// Installs the counting interceptor on `builder`. gRPC takes one list of interceptor creators
// per server: a second SetInterceptorCreators() call would replace this one.
void AddGrpcMetrics(grpc::ServerBuilder* builder);

}  // namespace shipper::metrics

#endif  // SHIPPER_SHIPPER_METRICS_GRPC_METRICS_H_
