#include "shipper/server/listener.h"

#include <netdb.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
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
  EXPECT_TRUE(ListenerCredentials(TlsSettings{}, ServerTlsBlock()).ok());
}

TEST(ListenerTest, TlsFromCheckedSettings) {
  const std::string cert = TempPath("cert.pem"), key = TempPath("key.pem");
  std::ofstream(cert) << "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
  std::ofstream(key) << "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n";
  TlsSettings ssl;
  ssl.certificate = cert;
  ssl.key = key;
  EXPECT_TRUE(ListenerCredentials(ssl, ServerTlsBlock()).ok());
  ssl.client_authentication = ClientAuthentication::kRequired;
  ssl.certificate_authorities = {cert};
  EXPECT_TRUE(ListenerCredentials(ssl, ServerTlsBlock()).ok());
}

// Connects to host:port; true when the connection is established.
bool Connects(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) return false;
  const int fd = socket(found->ai_family, SOCK_STREAM, 0);
  const bool connected = connect(fd, found->ai_addr, found->ai_addrlen) == 0;
  close(fd);
  freeaddrinfo(found);
  return connected;
}

int PortOf(const std::string& address) { return std::stoi(address.substr(address.rfind(':') + 1)); }

absl::StatusOr<std::unique_ptr<Listener>> Open(const std::string& address) {
  ServerSettings server;
  server.address = address;
  return Listener::Open(server);
}

TEST(ListenerTest, BindsTheResolvedAddressesOnThePortItPicked) {
  absl::StatusOr<std::unique_ptr<Listener>> listener = Open("127.0.0.1:0");
  ASSERT_TRUE(listener.ok()) << listener.status();
  const int port = PortOf((*listener)->address());
  EXPECT_GT(port, 0);
  EXPECT_TRUE(Connects("127.0.0.1", port));

  absl::StatusOr<std::unique_ptr<Listener>> second = Open((*listener)->address());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(second.status().message(), HasSubstr("cannot listen on '127.0.0.1:"));
  EXPECT_THAT(second.status().message(), HasSubstr("change shipper.server.server"));
  (*listener)->Stop();
  EXPECT_FALSE(Connects("127.0.0.1", port));

  listener = Open("localhost:0");
  ASSERT_TRUE(listener.ok()) << listener.status();
  EXPECT_TRUE(Connects("127.0.0.1", PortOf((*listener)->address())));

  listener = Open("[::1]:0");
  if (!listener.ok()) {
    std::cout << "no IPv6 loopback here, [::1] not checked: " << listener.status() << "\n";
    return;
  }
  EXPECT_EQ((*listener)->address().substr(0, 6), "[::1]:");
  EXPECT_TRUE(Connects("::1", PortOf((*listener)->address())));
}

TEST(ListenerTest, AddressesItCannotListenOnNameTheKey) {
  for (const std::string address : {"no-port", "no.such.host.invalid:80", "127.0.0.1:http"}) {
    absl::StatusOr<std::unique_ptr<Listener>> listener = Open(address);
    EXPECT_FALSE(listener.ok()) << address;
    EXPECT_THAT(listener.status().message(), HasSubstr("change shipper.server.server"));
  }
}

TEST(ListenerTest, UnixSocketHasItsModeBeforeAnyoneConnectsAndGoesOnStop) {
  const std::string path = SocketPath("mode.sock");
  ServerSettings server;
  server.address = "unix://" + path;
  server.socket_mode = 0640;
  absl::StatusOr<std::unique_ptr<Listener>> listener = Listener::Open(server);
  ASSERT_TRUE(listener.ok()) << listener.status();
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  EXPECT_EQ((*listener)->address(), server.address);
  (*listener)->Stop();
  EXPECT_NE(access(path.c_str(), F_OK), 0) << "removed on Stop()";
}

TEST(ListenerTest, ASocketItDidNotBindIsNeverRemoved) {
  const std::string live = SocketPath("other.sock");
  const int fd = BindSocket(live, true);
  ServerSettings server;
  server.address = "unix://" + live;
  EXPECT_EQ(Listener::Open(server).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(access(live.c_str(), F_OK), 0) << "another process's socket is left alone";
  close(fd);
  unlink(live.c_str());
}

}  // namespace
}  // namespace shipper
