// health_probe against the real shipper's health-only listener: SERVING while it serves,
// NOT_SERVING while it drains after SIGTERM, and a clear failure when nothing answers.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <regex>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/producer.grpc.pb.h"
#include "tests/testing/shipper_process.h"

namespace shipper {
namespace {

using ::shipper::testing::RunShipper;
using ::shipper::testing::ShipperProcess;

constexpr char kProbe[] = "shipper/server/health_probe";

// The health listener's address, from the shipper's log.
std::string HealthAddress(const ShipperProcess& shipper) {
  static const std::regex kHealth("gRPC health service \\(only\\) on (\\S+)");
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  std::smatch match;
  std::string log;
  while (!std::regex_search(log = shipper.Log(), match, kHealth)) {
    if (absl::Now() > deadline) {
      ADD_FAILURE() << "no health listener in the log:\n" << log;
      return "";
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  return match[1];
}

std::pair<int, std::string> Probe(const std::string& address) {
  return RunShipper({absl::StrCat("--address=", address), "--timeout=2s"}, kProbe);
}

TEST(HealthProbeTest, ServingShipperExitsZero) {
  absl::StatusOr<ShipperProcess> shipper =
      ShipperProcess::Start({"-E", "shipper.server.health.address=127.0.0.1:0", "-E",
                             "shipper.output.discard.enabled=true"});
  ASSERT_TRUE(shipper.ok()) << shipper.status();
  const std::string health = HealthAddress(*shipper);
  ASSERT_NE(health, shipper->address()) << "the health listener is a second port";
  auto [code, output] = Probe(health);
  EXPECT_EQ(code, 0) << output;
  EXPECT_NE(output.find("SERVING"), std::string::npos) << output;
}

// The file output writing into a FIFO that the test holds open but never reads: each write
// succeeds and each flush fails (fdatasync on a FIFO is EINVAL), so the one event published stays
// in the queue and the drain after SIGTERM lasts until shutdown_timeout. Meanwhile the probe must
// see NOT_SERVING, and Shipper must still exit 0 when the drain gives up.
TEST(HealthProbeTest, DrainingShipperIsNotServing) {
  const std::string dir = ::testing::TempDir();
  const std::string fifo = absl::StrCat(dir, "/stuck.fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  const int reader = open(fifo.c_str(), O_RDONLY | O_NONBLOCK);  // lets the writer open it
  ASSERT_GE(reader, 0) << std::strerror(errno);

  absl::StatusOr<ShipperProcess> shipper = ShipperProcess::Start(
      {"-E", "shipper.server.health.address=127.0.0.1:0", "-E",
       absl::StrCat("shipper.output.file.path=", dir), "-E",
       "shipper.output.file.filename=stuck.fifo", "-E", "shipper.output.file.fsync=batch", "-E",
       "shipper.shutdown_timeout=4s"});
  ASSERT_TRUE(shipper.ok()) << shipper.status();
  const std::string health = HealthAddress(*shipper);

  auto stub = elastic::agent::shipper::v1::Producer::NewStub(
      grpc::CreateChannel(shipper->address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  elastic::agent::shipper::v1::messages::PublishRequest request;
  (*request.add_events()->mutable_fields()->mutable_data())["message"].set_string_value("stuck");
  elastic::agent::shipper::v1::messages::PublishReply reply;
  ASSERT_TRUE(stub->PublishEvents(&context, request, &reply).ok());
  ASSERT_EQ(reply.accepted_count(), 1u);

  shipper->Signal(SIGTERM);
  std::pair<int, std::string> probe;
  const absl::Time deadline = absl::Now() + absl::Seconds(3);
  do {
    probe = Probe(health);
  } while (probe.second.find("NOT_SERVING") == std::string::npos && absl::Now() < deadline);
  EXPECT_EQ(probe.first, 1) << probe.second;
  EXPECT_NE(probe.second.find("NOT_SERVING"), std::string::npos) << probe.second;
  absl::StatusOr<int> exit = shipper->Wait(absl::Seconds(15));
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_EQ(*exit, 0) << shipper->Log();
  close(reader);
}

TEST(HealthProbeTest, NothingListeningExitsOneAndSaysSo) {
  absl::StatusOr<ShipperProcess> gone =
      ShipperProcess::Start({"-E", "shipper.server.health.address=127.0.0.1:0", "-E",
                             "shipper.output.discard.enabled=true"});
  ASSERT_TRUE(gone.ok()) << gone.status();
  const std::string health = HealthAddress(*gone);
  gone->Signal(SIGKILL);
  ASSERT_TRUE(gone->Wait(absl::Seconds(10)).ok());
  auto [code, output] = RunShipper({absl::StrCat("--address=", health), "--timeout=300ms"}, kProbe);
  EXPECT_EQ(code, 1) << output;
  EXPECT_NE(output.find("no answer"), std::string::npos) << output;
}

}  // namespace
}  // namespace shipper
