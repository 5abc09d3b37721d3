#include "shipper/metrics/grpc_metrics.h"

#include <array>
#include <atomic>
#include <cstring>
#include <iterator>
#include <memory>
#include <vector>

#include "grpcpp/support/server_interceptor.h"
#include "shipper/metrics/shipper_metrics.h"

namespace shipper::metrics {
namespace {

constexpr size_t kMethods = std::size(kCountedMethods) + 1;  // the last is "other"
constexpr int kCodes = grpc::StatusCode::UNAUTHENTICATED + 1;

// "DEADLINE_EXCEEDED" etc., as gRPC's own documentation spells the codes.
absl::string_view CodeName(int code) {
  static constexpr const char* kNames[kCodes] = {"OK",
                                                 "CANCELLED",
                                                 "UNKNOWN",
                                                 "INVALID_ARGUMENT",
                                                 "DEADLINE_EXCEEDED",
                                                 "NOT_FOUND",
                                                 "ALREADY_EXISTS",
                                                 "PERMISSION_DENIED",
                                                 "RESOURCE_EXHAUSTED",
                                                 "FAILED_PRECONDITION",
                                                 "ABORTED",
                                                 "OUT_OF_RANGE",
                                                 "UNIMPLEMENTED",
                                                 "INTERNAL",
                                                 "UNAVAILABLE",
                                                 "DATA_LOSS",
                                                 "UNAUTHENTICATED"};
  return kNames[code];
}

// The counters by method and code, looked up in the family once per pair, then kept.
class Counters {
 public:
  Counter& Get(size_t method, int code) {
    std::atomic<Counter*>& slot = cache_[method][code];
    Counter* counter = slot.load(std::memory_order_acquire);
    if (counter == nullptr) {
      counter = &ShipperMetrics::Get().GrpcRequests(
          method < std::size(kCountedMethods) ? kCountedMethods[method] : "other", CodeName(code));
      slot.store(counter, std::memory_order_release);
    }
    return *counter;
  }

 private:
  std::array<std::array<std::atomic<Counter*>, kCodes>, kMethods> cache_{};
};

class MetricsInterceptor final : public grpc::experimental::Interceptor {
 public:
  MetricsInterceptor(Counters* counters, size_t method) : counters_(counters), method_(method) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_STATUS)) {
      int code = methods->GetSendStatus().error_code();
      if (code < 0 || code >= kCodes) code = grpc::StatusCode::UNKNOWN;
      counters_->Get(method_, code).Add();
    }
    methods->Proceed();
  }

 private:
  Counters* const counters_;
  const size_t method_;
};

class MetricsFactory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    size_t method = 0;
    while (method < std::size(kCountedMethods) &&
           std::strcmp(info->method(), kCountedMethods[method]) != 0) {
      ++method;
    }
    return new MetricsInterceptor(&counters_, method);
  }

 private:
  Counters counters_;
};

}  // namespace

void AddGrpcMetrics(grpc::ServerBuilder* builder) {
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> creators;
  creators.push_back(std::make_unique<MetricsFactory>());
  builder->experimental().SetInterceptorCreators(std::move(creators));
}

}  // namespace shipper::metrics
