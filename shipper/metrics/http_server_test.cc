#include "shipper/metrics/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "shipper/metrics/metric.h"

namespace shipper::metrics {
namespace {

using ::testing::HasSubstr;

TEST(HttpServerTest, ServesMetricsAndHealthOnAFreePort) {
  std::atomic<bool> healthy{true};
  std::atomic<int> scrapes{0};
  absl::StatusOr<std::unique_ptr<HttpServer>> server = HttpServer::Start(
      "127.0.0.1", 0, [&] { return "x_total " + std::to_string(++scrapes) + "\n"; },
      [&] { return healthy.load(); });
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_GT((*server)->port(), 0);

  httplib::Client client("127.0.0.1", (*server)->port());
  for (int i = 1; i <= 2; ++i) {
    httplib::Result metrics = client.Get("/metrics");
    ASSERT_TRUE(metrics) << httplib::to_string(metrics.error());
    EXPECT_EQ(metrics->status, 200);
    EXPECT_EQ(metrics->body, "x_total " + std::to_string(i) + "\n");
    EXPECT_EQ(metrics->get_header_value("Content-Type"), kTextContentType);
  }

  httplib::Result health = client.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(health->body, "ok\n");
  healthy = false;
  health = client.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 503);

  httplib::Result other = client.Get("/other");
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status, 404);
}

TEST(HttpServerTest, PortInUseSaysWhichKeysToChange) {
  auto metrics = [] { return std::string(); };
  auto healthy = [] { return true; };
  absl::StatusOr<std::unique_ptr<HttpServer>> first =
      HttpServer::Start("127.0.0.1", 0, metrics, healthy);
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<std::unique_ptr<HttpServer>> second =
      HttpServer::Start("127.0.0.1", (*first)->port(), metrics, healthy);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(second.status().message(), HasSubstr("http.port"));
}

TEST(HttpServerTest, AnswersOneRequestPerConnection) {
  absl::StatusOr<std::unique_ptr<HttpServer>> server = HttpServer::Start(
      "127.0.0.1", 0, [] { return std::string("a 1\n"); }, [] { return true; });
  ASSERT_TRUE(server.ok()) << server.status();
  httplib::Client client("127.0.0.1", (*server)->port());
  client.set_keep_alive(true);
  httplib::Result result = client.Get("/metrics");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->get_header_value("Connection"), "close");
}

TEST(HttpServerTest, StopsPromptlyWhileAClientHoldsAnIdleConnection) {
  absl::StatusOr<std::unique_ptr<HttpServer>> server = HttpServer::Start(
      "127.0.0.1", 0, [] { return std::string(); }, [] { return true; });
  ASSERT_TRUE(server.ok()) << server.status();
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons((*server)->port());
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  absl::SleepFor(absl::Milliseconds(50));  // a server thread now waits for the request
  const absl::Time start = absl::Now();
  server->reset();
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
  close(fd);
}

}  // namespace
}  // namespace shipper::metrics
