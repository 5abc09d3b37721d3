#include "shipper/listener.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace shipper {
namespace {

using ::testing::HasSubstr;

std::string TempPath(const std::string& name) {
  return std::string(getenv("TEST_TMPDIR")) + "/" + name;
}

// A socket path under /tmp: TEST_TMPDIR is too long for a socket address (108 bytes). The test
// removes what it creates there.
std::string SocketPath(const std::string& name) {
  return absl::StrCat("/tmp/listener_test.", getpid(), ".", name);
}

// A unix socket bound at `path`; listening when `listen_too`. Returns its fd.
int BindSocket(const std::string& path, bool listen_too) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << strerror(errno);
  if (listen_too) {
    EXPECT_EQ(listen(fd, 1), 0);
  }
  return fd;
}

TEST(ListenerTest, UnixSocketPath) {
  EXPECT_EQ(UnixSocketPath("unix:///run/shipper.sock"), "/run/shipper.sock");
  EXPECT_EQ(UnixSocketPath("unix:run/shipper.sock"), "run/shipper.sock");
  EXPECT_EQ(UnixSocketPath("127.0.0.1:50051"), "");
}

TEST(ListenerTest, StaleSocketIsReplacedLiveOneAndOtherFilesAreNot) {
  const std::string stale = SocketPath("stale.sock");
  close(BindSocket(stale, false));  // as a crashed process leaves it
  ASSERT_EQ(access(stale.c_str(), F_OK), 0);
  EXPECT_TRUE(ReplaceStaleSocket(stale).ok());
  EXPECT_NE(access(stale.c_str(), F_OK), 0) << "the stale socket is gone";
  EXPECT_TRUE(ReplaceStaleSocket(stale).ok()) << "nothing there is fine too";

  const std::string live = SocketPath("live.sock");
  int fd = BindSocket(live, true);
  absl::Status status = ReplaceStaleSocket(live);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(status.message(), HasSubstr("another process listens"));
  EXPECT_EQ(access(live.c_str(), F_OK), 0);
  close(fd);
  unlink(live.c_str());

  const std::string file = TempPath("regular");
  std::ofstream(file) << "data";
  status = ReplaceStaleSocket(file);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("is not a socket"));
  EXPECT_EQ(access(file.c_str(), F_OK), 0) << "never deleted";
}

TEST(ListenerTest, PlaintextWithoutCertificate) {
  EXPECT_TRUE(ListenerCredentials(Config::Ssl{}).ok());
}

TEST(ListenerTest, IncompleteSslSettingsNameWhatIsMissing) {
  const std::string cert = TempPath("cert.pem"), key = TempPath("key.pem");
  std::ofstream(cert) << "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
  std::ofstream(key) << "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n";
  auto message = [](const Config::Ssl& ssl) {
    absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> creds = ListenerCredentials(ssl);
    EXPECT_EQ(creds.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(creds.status().message());
  };
  Config::Ssl ssl;
  ssl.key = key;
  EXPECT_THAT(message(ssl), HasSubstr("need shipper.server.ssl.certificate"));
  ssl = Config::Ssl{};
  ssl.certificate = cert;
  EXPECT_THAT(message(ssl), HasSubstr("needs shipper.server.ssl.key"));
  ssl.key = TempPath("missing.pem");
  EXPECT_THAT(message(ssl), HasSubstr("'shipper.server.ssl.key': cannot read"));
  ssl.key = cert;
  EXPECT_THAT(message(ssl), HasSubstr("is not a PEM file with a PRIVATE KEY"));
  ssl.key = key;
  EXPECT_TRUE(ListenerCredentials(ssl).ok());
  ssl.client_authentication = ClientAuthentication::kRequired;
  EXPECT_THAT(message(ssl), HasSubstr("set it"));
  ssl.certificate_authorities = key;
  EXPECT_THAT(message(ssl), HasSubstr("'shipper.server.ssl.certificate_authorities'"));
  ssl.certificate_authorities = cert;
  EXPECT_TRUE(ListenerCredentials(ssl).ok());
}

}  // namespace
}  // namespace shipper
