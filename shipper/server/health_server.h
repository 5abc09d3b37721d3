// A second gRPC server that serves only the standard health service (grpc.health.v1.Health,
// its Check method: what Kubernetes' gRPC probes and health_probe call).
//
// Kubernetes' native gRPC probes connect over TCP to the pod's IP. When Shipper's Producer API
// listens on a unix socket shared with the agent (the sidecar pattern), this listener gives the
// kubelet something to probe without exposing the Producer API to the cluster: any other method
// on it is UNIMPLEMENTED, and it has no reflection either.
//
// Thread safety: SetServing() may be called from any thread; Shutdown() from one thread.
#ifndef SHIPPER_SHIPPER_SERVER_HEALTH_SERVER_H_
#define SHIPPER_SHIPPER_SERVER_HEALTH_SERVER_H_

#include <atomic>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace grpc {
class Server;
}  // namespace grpc

namespace shipper {

class HealthServer {
 public:
  // Listens on `address` (host:port; port 0 picks a free one), reporting SERVING for the server
  // as a whole (service "") and for the Producer service; other names are NOT_FOUND, as the
  // protocol asks. UNAVAILABLE, naming the config key, when the address cannot be bound.
  // REQUIRES: `address` is a listener's host:port (address.h), as its key checks.
  static absl::StatusOr<std::unique_ptr<HealthServer>> Start(const std::string& address);
  ~HealthServer();  // Shutdown()

  // host:port with the real port.
  const std::string& address() const { return address_; }

  // NOT_SERVING while Shipper drains: the kubelet stops routing to the pod and the probe says why.
  void SetServing(bool serving);

  // Stops listening; calls in flight get at most a second to finish. Idempotent.
  void Shutdown();

 private:
  class Service;
  HealthServer();

  std::atomic<bool> serving_{true};
  std::unique_ptr<Service> service_;  // reads serving_
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
  bool shut_down_ = false;
};

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_SERVER_HEALTH_SERVER_H_
