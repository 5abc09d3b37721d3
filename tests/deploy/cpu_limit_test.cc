// The CPU limit in each manifest is one the runtime module turns into the intended thread count.
//
// For every workload running the shipper image, the container's resources.limits.cpu becomes a
// CFS quota the way the kubelet converts it (quota = milliCPU × period / 1000, period 100 ms),
// written into cgroup v1 and v2 fixture trees; runtime::DetectCpuQuota, with the rounding from
// the workload's own ConfigMap, must find exactly that quota and the effective CPUs below. A
// changed limit fails here until this table (and docs/operations.md "Sizing the CPU limit")
// agree with it.
#include <map>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "runtime/cgroup_fixture.h"
#include "runtime/cpu_quota.h"
#include "shipper/config/config.h"
#include "yaml-cpp/yaml.h"

namespace shipper {
namespace {

constexpr int64_t kCfsPeriodUs = 100000;  // the kubelet's default cpu.cfs_period_us
constexpr int kNodeCpus = 64;             // a big node: the limit, not the host, must bind

// "Kind/name" of each workload with a shipper container → the effective CPUs it should get.
const std::map<std::string, int>& Expected() {
  static const auto* expected = new std::map<std::string, int>{
      {"DaemonSet/log-agent", 1},            // 500m: floor, minimum 1
      {"Deployment/example-app", 1},         // 500m
      {"Deployment/shipper-aggregator", 2},  // 2
  };
  return *expected;
}

const std::vector<std::string> kManifests = {
    "deploy/k8s/sidecar-config.yaml", "deploy/k8s/daemonset.yaml", "deploy/k8s/deployment.yaml",
    "deploy/k8s/aggregator.yaml"};

// Kubernetes' CPU quantity ("500m", "2", "1.5") in millicores; -1 when unparsable.
int64_t MilliCpus(absl::string_view quantity) {
  if (absl::ConsumeSuffix(&quantity, "m")) {
    int64_t milli;
    return absl::SimpleAtoi(quantity, &milli) ? milli : -1;
  }
  double cpus;
  return absl::SimpleAtod(quantity, &cpus) ? static_cast<int64_t>(cpus * 1000 + 0.5) : -1;
}

// As the kubelet's MilliCPUToQuota: at least 1 ms per period.
int64_t QuotaUs(int64_t milli) { return std::max<int64_t>(milli * kCfsPeriodUs / 1000, 1000); }

struct ShipperContainer {
  std::string workload;  // Kind/name
  std::string limit;     // resources.limits.cpu as written
  std::string config;    // shipper.yml of the ConfigMap mounted at /etc/shipper
};

std::vector<ShipperContainer> FindShipperContainers() {
  std::map<std::string, std::string> configs;  // ConfigMap name → shipper.yml
  std::vector<YAML::Node> workloads;
  for (const std::string& path : kManifests) {
    for (const YAML::Node& doc : YAML::LoadAllFromFile(path)) {
      const std::string kind = doc["kind"].as<std::string>();
      if (kind == "ConfigMap" && doc["data"]["shipper.yml"]) {
        configs[doc["metadata"]["name"].as<std::string>()] =
            doc["data"]["shipper.yml"].as<std::string>();
      } else if (kind == "Deployment" || kind == "DaemonSet") {
        workloads.push_back(doc);
      }
    }
  }
  std::vector<ShipperContainer> found;
  for (const YAML::Node& w : workloads) {
    const YAML::Node spec = w["spec"]["template"]["spec"];
    std::map<std::string, std::string> config_volumes;  // volume name → ConfigMap name
    for (const YAML::Node& v : spec["volumes"]) {
      if (v["configMap"])
        config_volumes[v["name"].as<std::string>()] = v["configMap"]["name"].as<std::string>();
    }
    for (const char* list : {"initContainers", "containers"}) {
      for (const YAML::Node& c : spec[list]) {
        if (c["image"].as<std::string>() != "shipper") continue;
        ShipperContainer s;
        s.workload =
            absl::StrCat(w["kind"].as<std::string>(), "/", w["metadata"]["name"].as<std::string>());
        s.limit = c["resources"]["limits"]["cpu"].as<std::string>("");
        for (const YAML::Node& m : c["volumeMounts"]) {
          if (m["mountPath"].as<std::string>() == "/etc/shipper") {
            s.config = configs[config_volumes[m["name"].as<std::string>()]];
          }
        }
        found.push_back(s);
      }
    }
  }
  return found;
}

TEST(CpuLimitTest, EveryShipperContainerIsInTheTable) {
  std::vector<ShipperContainer> containers = FindShipperContainers();
  ASSERT_EQ(containers.size(), Expected().size());
  for (const ShipperContainer& c : containers) {
    EXPECT_EQ(Expected().count(c.workload), 1u)
        << c.workload << " runs Shipper: add its expected effective CPUs to this test";
  }
}

TEST(CpuLimitTest, LimitBecomesTheExpectedEffectiveCpus) {
  for (const ShipperContainer& c : FindShipperContainers()) {
    SCOPED_TRACE(c.workload);
    const int64_t milli = MilliCpus(c.limit);
    ASSERT_GT(milli, 0) << "resources.limits.cpu '" << c.limit
                        << "' must be set, e.g. 500m: Shipper sizes its pools from it";
    ASSERT_FALSE(c.config.empty()) << "no ConfigMap with shipper.yml mounted at /etc/shipper";
    absl::StatusOr<Config> config = ParseConfig(c.config, c.workload, {});
    ASSERT_TRUE(config.ok()) << config.status();

    const std::string quota = absl::StrCat(QuotaUs(milli));
    const std::string period = absl::StrCat(kCfsPeriodUs);
    for (int version : {1, 2}) {
      SCOPED_TRACE(absl::StrCat("cgroup v", version));
      runtime::CgroupFixture fixture;
      const std::string pod = "/kubepods/burstable/pod1/container1";
      if (version == 1) {
        fixture.SetUpV1("/", pod);
        fixture.SetV1Quota(pod, quota, period);
      } else {
        fixture.SetUpV2("/", pod);
        fixture.SetV2Max(pod, absl::StrCat(quota, " ", period));
      }
      runtime::CpuQuotaOptions options;
      options.proc_root = fixture.proc_root();
      options.cgroup_root = fixture.cgroup_root();
      options.rounding = config->cpu.rounding;
      options.affinity_cpus = [] { return kNodeCpus; };
      options.host_cpus = [] { return kNodeCpus; };
      runtime::CpuQuota detected = runtime::DetectCpuQuota(options);
      EXPECT_EQ(detected.source, absl::StrCat("cgroup", version)) << detected.reason;
      EXPECT_EQ(detected.quota_us, QuotaUs(milli));
      EXPECT_EQ(detected.period_us, kCfsPeriodUs);
      EXPECT_EQ(detected.effective_cpus, Expected().at(c.workload))
          << "limits.cpu " << c.limit << " gives " << detected.ToString();
    }
  }
}

TEST(CpuLimitTest, QuantitiesAsKubernetesWritesThem) {
  EXPECT_EQ(MilliCpus("500m"), 500);
  EXPECT_EQ(MilliCpus("2"), 2000);
  EXPECT_EQ(MilliCpus("1.5"), 1500);
  EXPECT_EQ(MilliCpus("lots"), -1);
  EXPECT_EQ(QuotaUs(500), 50000);
  EXPECT_EQ(QuotaUs(1), 1000);
}

}  // namespace
}  // namespace shipper
