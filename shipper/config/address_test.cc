// Every rule of the one address parser, each form accepted or refused the same way for every key.
#include "shipper/config/address.h"

#include <sys/socket.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace shipper {
namespace {

using ::testing::HasSubstr;

constexpr AddressRules kClient{};
constexpr AddressRules kListen = kListenAddress;

Address Parsed(absl::string_view text, const AddressRules& rules = kClient) {
  absl::StatusOr<Address> address = ParseAddress(text, rules);
  EXPECT_TRUE(address.ok()) << text << ": " << address.status();
  return address.ok() ? *address : Address{};
}

std::string Why(absl::string_view text, const AddressRules& rules = kClient) {
  absl::StatusOr<Address> address = ParseAddress(text, rules);
  EXPECT_FALSE(address.ok()) << text << " parsed";
  EXPECT_EQ(address.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(address.status().message());
}

TEST(AddressTest, Ipv4AndHostNames) {
  Address a = Parsed("127.0.0.1:6379");
  EXPECT_EQ(a.host, "127.0.0.1");
  EXPECT_EQ(a.port, 6379);
  EXPECT_EQ(a.unix_path, "");
  EXPECT_EQ(a.ToString(), "127.0.0.1:6379");
  a = Parsed("kafka-1.prod_cluster.example.com:9092");
  EXPECT_EQ(a.host, "kafka-1.prod_cluster.example.com");
  EXPECT_EQ(a.port, 9092);
  EXPECT_THAT(Why("kafka one:9092"), HasSubstr("'kafka one' is not a host name or IP address"));
  EXPECT_THAT(Why("-kafka:9092"), HasSubstr("is not a host name"));
  EXPECT_THAT(Why("user@kafka:9092"), HasSubstr("is not a host name"));
}

TEST(AddressTest, Ipv6InBrackets) {
  Address a = Parsed("[::1]:50051");
  EXPECT_EQ(a.host, "::1");
  EXPECT_EQ(a.port, 50051);
  EXPECT_EQ(a.ToString(), "[::1]:50051");
  EXPECT_EQ(Parsed("[fe80::1%eth0]:80").host, "fe80::1%eth0");
  EXPECT_THAT(Why("::1:50051"), HasSubstr("an IPv6 address goes in brackets: [::1]:port"));
  EXPECT_THAT(Why("[::1:50051"), HasSubstr("no ] after ["));
  EXPECT_THAT(Why("[kafka]:9092"), HasSubstr("'kafka' is not an IPv6 address"));
  EXPECT_THAT(Why("[::1]9092"), HasSubstr("expected :port after ]"));
}

TEST(AddressTest, MissingOrInvalidPort) {
  EXPECT_EQ(Why("kafka"), "not host:port: no port");
  EXPECT_EQ(Why("[::1]"), "not host:port: no port");
  EXPECT_EQ(Why("kafka:"), "not host:port: no port after :");
  EXPECT_THAT(Why("kafka:x"), HasSubstr("port 'x' is not a number from 1 to 65535"));
  EXPECT_THAT(Why("kafka:+1"), HasSubstr("port '+1'"));
  EXPECT_THAT(Why("kafka:65536"), HasSubstr("port '65536'"));
  EXPECT_THAT(Why("kafka:0"), HasSubstr("port '0' is not a number from 1 to 65535"));
  EXPECT_EQ(Parsed("kafka:65535").port, 65535);
  EXPECT_THAT(Why(":9092"), HasSubstr("no host"));
  EXPECT_EQ(Why(""), "not host:port: empty");
}

TEST(AddressTest, ADefaultPortForAHostAlone) {
  const AddressRules redis{false, false, /*default_port=*/6379};
  EXPECT_EQ(Parsed("redis", redis).port, 6379);
  EXPECT_EQ(Parsed("[::1]", redis).port, 6379);
  EXPECT_EQ(Parsed("redis:6380", redis).port, 6380);
  EXPECT_THAT(Why("redis:", redis), HasSubstr("no port after :"));
}

TEST(AddressTest, ListenersTakeAnEmptyHostAndPortZero) {
  Address a = Parsed(":50051", kListen);
  EXPECT_EQ(a.host, "");
  EXPECT_EQ(a.ToString(), ":50051");
  EXPECT_EQ(Parsed("127.0.0.1:0", kListen).port, 0);
  EXPECT_THAT(Why("127.0.0.1:-1", kListen), HasSubstr("from 0 to 65535"));
  EXPECT_THAT(Why(":", kListen), HasSubstr("no port after :"));
  EXPECT_THAT(Why("localhost", kListen), HasSubstr("not host:port or unix:///path: no port"));
}

TEST(AddressTest, UnixSockets) {
  EXPECT_EQ(Parsed("unix:///run/shipper.sock", kListen).unix_path, "/run/shipper.sock");
  EXPECT_EQ(Parsed("unix:run/shipper.sock", kListen).unix_path, "run/shipper.sock");
  EXPECT_EQ(Parsed("unix:///run/shipper.sock", kListen).ToString(), "unix:///run/shipper.sock");
  EXPECT_EQ(Parsed("127.0.0.1:50051", kListen).unix_path, "");
  EXPECT_THAT(Why("unix://", kListen), HasSubstr("no path after unix:"));
  EXPECT_EQ(Why("unix:///run/shipper.sock"), "not host:port: a unix socket is not allowed here");
}

TEST(AddressTest, CheckAddressNamesTheKey) {
  EXPECT_TRUE(CheckAddress("shipper.output.kafka.hosts", "kafka:9092", kClient).ok());
  EXPECT_EQ(CheckAddress("shipper.output.kafka.hosts", "kafka", kClient).message(),
            "shipper.output.kafka.hosts: 'kafka' is not host:port: no port");
}

TEST(AddressTest, ResolveListenAddress) {
  absl::StatusOr<AddressList> any = ResolveListenAddress(Parsed(":0", kListen));
  ASSERT_TRUE(any.ok()) << any.status();
  absl::StatusOr<AddressList> loopback = ResolveListenAddress(Parsed("[::1]:0", kListen));
  ASSERT_TRUE(loopback.ok()) << loopback.status();
  EXPECT_EQ((*loopback)->ai_family, AF_INET6);
  EXPECT_FALSE(ResolveListenAddress(Parsed("999.1.1.1:80", kListen)).ok());
}

}  // namespace
}  // namespace shipper
