// Start and --check_config run one validation path (config.h: LoadConfig, then Preflight): every
// config start refuses, --check_config refuses too, with the same exit code and the same words;
// and --check_config creates, binds and writes nothing.
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/shipper_process.h"

namespace shipper {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string TempDir() {
  std::string dir = absl::StrCat(getenv("TEST_TMPDIR"), "/",
                                 ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// -E overrides from "key=value" items.
std::vector<std::string> Overrides(const std::vector<std::string>& items) {
  std::vector<std::string> args;
  for (const std::string& item : items) args.insert(args.end(), {"-E", item});
  return args;
}

struct BadConfig {
  std::string name;
  std::vector<std::string> overrides;
  std::string refusal;  // a part of the message both paths print
};

TEST(CheckConfigTest, StartAndCheckConfigRefuseTheSameWithTheSameWords) {
  const std::string dir = TempDir();
  std::ofstream(dir + "/a-file") << "x";
  const std::string out = absl::StrCat("shipper.output.file.path=", dir, "/out");
  const std::vector<BadConfig> configs = {
      // The ones start refused and --check_config let pass before.
      {"unterminated redis key",
       {"shipper.output.redis.enabled=true", "shipper.output.redis.key=\"%{[x\""},
       "shipper.output.redis.key: bad field reference"},
      {"missing TLS files",
       {out, "shipper.server.ssl.certificate=/no/such.crt", "shipper.server.ssl.key=/no/such.key"},
       "config key 'shipper.server.ssl.certificate': cannot read '/no/such.crt'"},
      {"queue too big",
       {out, "shipper.queue.mem.events=100000000000"},
       "shipper.queue.mem.events: must be between 1 and 67108864"},
      {"socket in a missing directory",
       {out, "shipper.server.server=unix:///no/such/dir/s.sock"},
       "cannot listen on 'unix:///no/such/dir/s.sock'"},
      {"file output path is a file",
       {absl::StrCat("shipper.output.file.path=", dir, "/a-file")},
       "shipper.output.file.path: '"},
      {"unresolvable listen address",
       {out, "shipper.server.server=999.1.1.1:80"},
       "cannot listen on '999.1.1.1:80'"},
      {"missing CA of the forwarding output",
       {"shipper.output.shipper.enabled=true", "shipper.output.shipper.server=127.0.0.1:1",
        "shipper.output.shipper.ssl.enabled=true",
        "shipper.output.shipper.ssl.certificate_authorities=/no/such/ca.crt"},
       "'shipper.output.shipper.ssl.certificate_authorities': cannot read '/no/such/ca.crt'"},
      {"dead letters where no directory can be",
       {out, absl::StrCat("shipper.dead_letter.path=", dir, "/a-file/dl.ndjson")},
       "/a-file' is not a directory"},
      // One per output.
      {"file: one file",
       {out, "shipper.output.file.number_of_files=1"},
       "expected a whole number >= 2"},
      {"console and file both enabled",
       {out, "shipper.output.console.enabled=true", "shipper.output.file.enabled=true"},
       "exactly one output may be enabled, but these are: file, console"},
      {"discard and redis both enabled",
       {"shipper.output.discard.enabled=true", "shipper.output.redis.enabled=true"},
       "exactly one output may be enabled, but these are: redis, discard"},
      {"redis: bad host",
       {"shipper.output.redis.enabled=true", "shipper.output.redis.hosts=a:x"},
       "shipper.output.redis.hosts: 'a:x' is not host:port"},
      {"shipper: no server",
       {"shipper.output.shipper.enabled=true"},
       "needs shipper.output.shipper.server"},
      {"otlp output: no endpoint",
       {"shipper.output.otlp.enabled=true"},
       "needs shipper.output.otlp.endpoint"},
      {"otlp output: gRPC endpoint given as a URL",
       {"shipper.output.otlp.enabled=true", "shipper.output.otlp.endpoint=http://collector:4317"},
       "shipper.output.otlp.endpoint: 'http://collector:4317' is a URL"},
      {"otlp output: HTTP endpoint not a URL",
       {"shipper.output.otlp.enabled=true", "shipper.output.otlp.protocol=http/protobuf",
        "shipper.output.otlp.endpoint=collector:4318"},
       "shipper.output.otlp.endpoint: 'collector:4318' is not"},
      {"otlp output: https without TLS",
       {"shipper.output.otlp.enabled=true", "shipper.output.otlp.protocol=http/json",
        "shipper.output.otlp.endpoint=https://collector:4318"},
       "needs TLS, but shipper.output.otlp.ssl.enabled is false"},
      {"otlp output: zstd over gRPC",
       {"shipper.output.otlp.enabled=true", "shipper.output.otlp.endpoint=collector:4317",
        "shipper.output.otlp.compression=zstd"},
       "shipper.output.otlp.compression: zstd only with shipper.output.otlp.protocol http"},
      {"otlp output: brotli",
       {"shipper.output.otlp.compression=br"},
       "'shipper.output.otlp.compression': expected one of gzip|zstd|none"},
      {"otlp output: a header without a colon",
       {"shipper.output.otlp.enabled=true", "shipper.output.otlp.endpoint=collector:4317",
        "shipper.output.otlp.headers=['Authorization Bearer x']"},
       "shipper.output.otlp.headers: 'Authorization Bearer x' is not 'Name: value'"},
      {"otlp output: max_request_bytes too small",
       {"shipper.output.otlp.max_request_bytes=100"},
       "'shipper.output.otlp.max_request_bytes': expected a whole number >= 1024"},
      // One per queue option.
      {"queue events 0", {out, "shipper.queue.mem.events=0"}, "shipper.queue.mem.events"},
      {"queue bytes", {out, "shipper.queue.mem.bytes=lots"}, "'shipper.queue.mem.bytes'"},
      {"queue min_events",
       {out, "shipper.queue.mem.flush.min_events=-1"},
       "'shipper.queue.mem.flush.min_events'"},
      {"queue timeout",
       {out, "shipper.queue.mem.flush.timeout=-5ms"},
       "'shipper.queue.mem.flush.timeout'"},
      {"queue wait strategy",
       {out, "shipper.queue.mem.wait_strategy=spin"},
       "'shipper.queue.mem.wait_strategy'"},
      {"otlp: bad ack", {out, "shipper.otlp.ack=sometimes"}, "'shipper.otlp.ack'"},
      {"otlp: http on a unix socket",
       {out, "shipper.otlp.http.server=unix:///tmp/otlp.sock"},
       "'shipper.otlp.http.server'"},
      {"otlp: unresolvable gRPC address",
       {out, "shipper.otlp.enabled=true", "shipper.otlp.grpc.server=no-such-host.invalid:4317"},
       "shipper.otlp.grpc.server"},
      {"otlp: both transports off",
       {out, "shipper.otlp.enabled=true", "shipper.otlp.grpc.enabled=false",
        "shipper.otlp.http.enabled=false"},
       "shipper.otlp.grpc.enabled"},
      {"otlp: TLS key without certificate",
       {out, "shipper.otlp.ssl.key=/etc/hostname"},
       "shipper.otlp.ssl"},
      // A value -E cannot read as YAML says so, instead of "got a null".
      {"unquoted format", {"shipper.output.redis.key=%{[x"}, "is not valid YAML"},
  };
  for (const BadConfig& config : configs) {
    SCOPED_TRACE(config.name);
    const std::vector<std::string> args = Overrides(config.overrides);
    std::vector<std::string> check = args;
    check.push_back("--check_config");
    auto [check_code, check_output] = testing::RunShipper(check);
    auto [start_code, start_output] = testing::RunShipper(args);
    EXPECT_EQ(check_code, 2) << check_output;
    EXPECT_EQ(start_code, 2) << start_output;
    EXPECT_THAT(check_output, StartsWith("shipper: "));
    EXPECT_THAT(check_output, HasSubstr(config.refusal));
    EXPECT_EQ(check_output, start_output);
  }
}

TEST(CheckConfigTest, ReportsEveryProblemNotOnlyTheFirst) {
  std::vector<std::string> args =
      Overrides({"shipper.queue.mem.wait_strategy=spin", "shipper.output.file.number_of_files=1",
                 "shipper.output.backoff.init=5s", "shipper.output.backoff.max=1s"});
  args.push_back("--check_config");
  auto [code, output] = testing::RunShipper(args);
  EXPECT_EQ(code, 2);
  EXPECT_THAT(output, HasSubstr("shipper.queue.mem.wait_strategy"));
  EXPECT_THAT(output, HasSubstr("shipper.output.file.number_of_files"));
  EXPECT_THAT(output, HasSubstr("shipper.output.backoff.max (1s) is below"));

  std::tie(code, output) = testing::RunShipper(
      {"-E", "shipper.server.server=999.1.1.1:80", "-E",
       "shipper.server.ssl.certificate=/no/such.crt", "-E", "shipper.server.ssl.key=/no/such.key",
       "-E", "shipper.output.file.path=/proc/self/no", "--check_config"});
  EXPECT_EQ(code, 2);
  EXPECT_THAT(output, HasSubstr("cannot listen on '999.1.1.1:80'"));
  EXPECT_THAT(output, HasSubstr("/no/such.crt"));
  EXPECT_THAT(output, HasSubstr("/no/such.key"));
  EXPECT_THAT(output, HasSubstr("shipper.output.file.path"));
}

TEST(CheckConfigTest, LeavesNoFileDirectoryOrSocketBehind) {
  // Short: a socket's path has at most 107 bytes, and the test's temp dir is deep.
  char short_dir[] = "/tmp/check-config-XXXXXX";
  ASSERT_NE(mkdtemp(short_dir), nullptr);
  const std::string dir = short_dir;
  std::vector<std::string> args = Overrides(
      {absl::StrCat("shipper.server.server=unix://", dir, "/shipper.sock"),
       absl::StrCat("shipper.output.file.path=", dir, "/out/deeper"),
       absl::StrCat("shipper.dead_letter.path=", dir, "/dead/letters.ndjson"), "http.port=0"});
  args.push_back("--check_config");
  auto [code, output] = testing::RunShipper(args);
  EXPECT_EQ(code, 0) << output;
  EXPECT_THAT(output, HasSubstr("config OK"));
  std::vector<std::string> left;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    left.push_back(entry.path());
  }
  EXPECT_TRUE(left.empty()) << absl::StrJoin(left, ", ");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace shipper
