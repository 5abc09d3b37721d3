#include "shipper/input/otlp/otlp_http_server.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "glog/logging.h"
#include "httplib.h"
#include "openssl/ssl.h"
#include "proto/otlp/logs_service.pb.h"
#include "shipper/config/address.h"
#include "shipper/config/tls.h"
#include "shipper/input/otlp/otlp_json.h"

namespace shipper {
namespace {

constexpr char kLogsPath[] = "/v1/logs";
constexpr char kProtobuf[] = "application/x-protobuf";
constexpr char kJson[] = "application/json";
// The smallest step a body of unknown length is charged to the budget in.
constexpr size_t kMinChargeStep = 64 << 10;
// A JSON body is charged at this many times its size: the body, RapidJSON's document (a value
// per token, strings copied) and the protobuf it becomes (never longer than the JSON).
constexpr size_t kJsonCharge = 3;

// Bytes taken from a MemoryBudget, given back when it goes.
class Charge {
 public:
  explicit Charge(runtime::MemoryBudget* budget) : budget_(budget) {}
  ~Charge() { budget_->Release(bytes_); }
  Charge(const Charge&) = delete;
  Charge& operator=(const Charge&) = delete;

  // Holds at least `total` bytes afterwards, or false (holding what it held) when the budget
  // has no room for them now.
  bool Reserve(size_t total) {
    if (total <= bytes_) return true;
    if (!budget_->TryAcquire(total - bytes_)) return false;
    bytes_ = total;
    return true;
  }
  size_t bytes() const { return bytes_; }
  // Gives back all it holds.
  void ReleaseAll() {
    budget_->Release(bytes_);
    bytes_ = 0;
  }

 private:
  runtime::MemoryBudget* const budget_;
  size_t bytes_ = 0;
};

// The media type of a Content-Type header, lowercase, without its parameters.
std::string MediaType(const httplib::Request& request) {
  const std::string header = request.get_header_value("Content-Type");
  const absl::string_view type = absl::string_view(header).substr(0, header.find(';'));
  return absl::AsciiStrToLower(absl::StripAsciiWhitespace(type));
}

int HttpCode(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
      return 200;
    case absl::StatusCode::kInvalidArgument:
      return 400;
    case absl::StatusCode::kResourceExhausted:
      return 413;
    case absl::StatusCode::kUnavailable:
      return 503;
    default:
      return 500;
  }
}

// Sends `body` as the reply and then closes the connection: the request's body, or what is left
// of it, was not read, and would otherwise be taken for the next request. (httplib closes a
// connection once a content provider returns false; the one here has written everything by then.)
void ReplyAndClose(httplib::Response& response, std::string body, const std::string& type) {
  response.set_header("Connection", "close");
  const size_t length = body.size();
  response.set_content_provider(
      length, type, [body = std::move(body)](size_t offset, size_t, httplib::DataSink& sink) {
        sink.write(body.data() + offset, body.size() - offset);
        return false;
      });
}

// A refusal of a request whose body is not read (wrong path, method or content type), in text.
void RefuseUnread(httplib::Response& response, int code, const std::string& text) {
  response.status = code;
  ReplyAndClose(response, text + "\n", "text/plain");
}

// An HTTPS server with shipper.otlp.ssl's certificate and key (TLS 1.2 and later), asking
// clients for certificates verified against its certificate_authorities as
// client_authentication says. Preflight checked the files; what OpenSSL still refuses (a key
// that does not match the certificate) is UNAVAILABLE naming the keys.
absl::StatusOr<std::unique_ptr<httplib::Server>> TlsServer(const TlsSettings& tls) {
  auto server = std::make_unique<httplib::SSLServer>([&tls](SSL_CTX& ctx) {
    SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
    if (SSL_CTX_use_certificate_chain_file(&ctx, tls.certificate.c_str()) != 1 ||
        SSL_CTX_use_PrivateKey_file(&ctx, tls.key.c_str(), SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(&ctx) != 1) {
      return false;
    }
    for (const std::string& ca : tls.certificate_authorities) {
      if (SSL_CTX_load_verify_locations(&ctx, ca.c_str(), nullptr) != 1) return false;
    }
    int mode = SSL_VERIFY_NONE;
    if (tls.client_authentication == ClientAuthentication::kOptional) mode = SSL_VERIFY_PEER;
    if (tls.client_authentication == ClientAuthentication::kRequired) {
      mode = SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
    }
    SSL_CTX_set_verify(&ctx, mode, nullptr);
    return true;
  });
  if (!server->is_valid()) {
    return absl::UnavailableError(absl::StrCat(
        "shipper.otlp.ssl: OpenSSL refused the certificate, key or certificate_authorities for "
        "OTLP/HTTP (",
        OtlpTlsBlock().KeyName("certificate"), ", ", OtlpTlsBlock().KeyName("key"), ")"));
  }
  return server;
}

class OtlpHttpServerImpl final : public OtlpHttpServer {
 public:
  OtlpHttpServerImpl(std::unique_ptr<httplib::Server> server, OtlpExports* exports)
      : exports_(exports), server_(std::move(server)) {
    server_->new_task_queue = [] { return new httplib::ThreadPool(kThreads); };
    // A connection is served on one thread until it closes: requests on it may follow each
    // other without limit, and one idle for 5 s is closed (httplib polls an idle kept-alive
    // connection every 10 ms meanwhile).
    server_->set_keep_alive_max_count(std::numeric_limits<int>::max());
    server_->set_keep_alive_timeout(5);
    server_->set_read_timeout(30);
    server_->set_write_timeout(30);
    // The body as sent, before decompression; after it, Logs() counts.
    server_->set_payload_max_length(exports_->max_message_size());
    // As the metrics server: no SO_REUSEPORT, or a second Shipper would bind the same port.
    server_->set_socket_options([](int socket) {
      int yes = 1;
      setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
      setsockopt(socket, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof(yes));
    });
    server_->Post(kLogsPath, [this](const httplib::Request& request, httplib::Response& response,
                                    const httplib::ContentReader& reader) {
      Logs(request, response, reader);
    });
    const auto not_found = [](const httplib::Request& request, httplib::Response& response,
                              const httplib::ContentReader&) {
      const bool other_signal = request.path == "/v1/traces" || request.path == "/v1/metrics";
      RefuseUnread(response, 404,
                   absl::StrCat(request.path, ": ",
                                other_signal ? "Shipper takes logs only: " : "not found; ",
                                "OTLP logs are POST /v1/logs"));
    };
    const auto not_allowed = [](const httplib::Request& request, httplib::Response& response) {
      response.set_header("Allow", "POST");
      RefuseUnread(response, 405, absl::StrCat(request.method, " ", kLogsPath, ": only POST"));
    };
    const auto not_allowed_with_body =
        [not_allowed](const httplib::Request& request, httplib::Response& response,
                      const httplib::ContentReader&) { not_allowed(request, response); };
    server_->Post(".*", not_found);
    server_->Get(kLogsPath, not_allowed);
    server_->Options(kLogsPath, not_allowed);
    server_->Put(kLogsPath, not_allowed_with_body);
    server_->Patch(kLogsPath, not_allowed_with_body);
    server_->Delete(kLogsPath, not_allowed_with_body);
    const auto not_found_without_body = [not_found](const httplib::Request& request,
                                                    httplib::Response& response) {
      not_found(request, response, httplib::ContentReader(nullptr, nullptr));
    };
    server_->Get(".*", not_found_without_body);
    server_->Options(".*", not_found_without_body);
    server_->Put(".*", not_found);
    server_->Patch(".*", not_found);
    server_->Delete(".*", not_found);
  }

  ~OtlpHttpServerImpl() override {
    server_->stop();
    if (thread_.joinable()) thread_.join();
  }

  absl::Status Listen(const std::string& address_text) {
    absl::StatusOr<Address> address = ParseAddress(address_text, kListenHostPort);
    if (address.ok()) {
      const std::string host = address->host.empty() ? "0.0.0.0" : address->host;
      if (address->port == 0) {
        port_ = server_->bind_to_any_port(host);
      } else if (server_->bind_to_port(host, address->port)) {
        port_ = address->port;
      }
    }
    if (port_ <= 0) {
      return absl::UnavailableError(
          absl::StrCat("shipper.otlp.http.server: cannot listen on ", address_text,
                       " (address in use or not a local address): change it, or set "
                       "shipper.otlp.http.enabled: false"));
    }
    thread_ = std::thread([this] {
      if (!server_->listen_after_bind()) LOG(ERROR) << "OTLP/HTTP server stopped unexpectedly";
    });
    // stop() does nothing until the accept loop runs: wait for it, so destruction cannot hang.
    while (!server_->is_running()) absl::SleepFor(absl::Milliseconds(1));
    Address bound = *address;
    bound.port = port_;
    LOG(INFO) << "OTLP/HTTP serving on " << bound.ToString() << " (POST /v1/logs)";
    return absl::OkStatus();
  }

  int port() const override { return port_; }

 private:
  static constexpr AddressRules kListenHostPort = {/*unix_socket=*/false, /*listen=*/true};

  void Logs(const httplib::Request& request, httplib::Response& response,
            const httplib::ContentReader& reader) {
    const absl::Time arrival = absl::Now();
    const std::string type = MediaType(request);
    const bool json = type == kJson;
    if (!json && type != kProtobuf) {
      const ExportOutcome outcome =
          exports_->Refused(OtlpTransport::kHttp,
                            absl::InvalidArgumentError(absl::StrCat(
                                "Content-Type '", request.get_header_value("Content-Type"),
                                "': OTLP/HTTP takes ", kProtobuf, " or ", kJson)),
                            arrival);
      RefuseUnread(response, 415, std::string(outcome.status.message()));
      return;
    }
    std::string body;
    Charge charge(exports_->budget());
    const ExportOutcome refused = ReadBody(request, reader, json, &body, &charge, arrival);
    if (!refused.status.ok()) {
      Reply(refused, json, /*close=*/true, response);  // what is left of the body is unread
      return;
    }
    std::string decoded;
    if (json) {
      absl::Status status = otlp::JsonToProtobufRequest(body, &decoded);
      if (!status.ok()) {
        Reply(exports_->Refused(OtlpTransport::kHttp, status, arrival), json, /*close=*/false,
              response);
        return;
      }
    }
    absl::Notification answered;
    ExportOutcome outcome;
    exports_->Export(
        OtlpTransport::kHttp, json ? decoded : body, arrival,
        [&](const ExportOutcome& o) {
          outcome = o;
          answered.Notify();
        },
        charge.bytes());
    // Export() no longer needs them: the budget gets them back before the wait for the ack.
    std::string().swap(body);
    std::string().swap(decoded);
    charge.ReleaseAll();
    answered.WaitForNotification();
    Reply(outcome, json, /*close=*/false, response);
  }

  // Reads the body, decompressed, into `body`, charging `charge` for it before it arrives. The
  // outcome to answer when it cannot (status not OK), else OK.
  ExportOutcome ReadBody(const httplib::Request& request, const httplib::ContentReader& reader,
                         bool json, std::string* body, Charge* charge, absl::Time arrival) {
    const size_t limit = exports_->max_message_size();
    const size_t factor = json ? kJsonCharge : 1;
    size_t length = 0;
    const bool identity = !request.has_header("Content-Encoding") ||
                          request.get_header_value("Content-Encoding") == "identity";
    const bool known_length =
        identity && absl::SimpleAtoi(request.get_header_value("Content-Length"), &length);
    if (known_length && length > limit) {
      // Read past it unkept, so that the sender, still sending, gets to read the 413.
      reader([](const char*, size_t) { return true; });
      return exports_->TooLarge(OtlpTransport::kHttp, length, arrival);
    }
    if (known_length) {
      if (!charge->Reserve(length * factor)) return NoRoom(length * factor, arrival);
      body->reserve(length);
    }
    enum class Stop { kNo, kTooLarge, kNoRoom } stop = Stop::kNo;
    size_t total = 0;  // what arrived, decompressed
    const bool read = reader([&](const char* data, size_t size) {
      total = body->size() + size;
      if (total > limit) {
        stop = Stop::kTooLarge;
        return false;
      }
      if (total * factor > charge->bytes()) {
        const size_t want = std::min(std::max(2 * total, kMinChargeStep), limit) * factor;
        if (!charge->Reserve(want) && !charge->Reserve(total * factor)) {
          stop = Stop::kNoRoom;
          return false;
        }
      }
      body->append(data, size);
      return true;
    });
    switch (stop) {
      case Stop::kTooLarge:
        return exports_->TooLarge(OtlpTransport::kHttp, total, arrival);
      case Stop::kNoRoom:
        return NoRoom(total * factor, arrival);
      case Stop::kNo:
        break;
    }
    if (!read) {
      return exports_->Refused(
          OtlpTransport::kHttp,
          absl::InvalidArgumentError(
              "the request's body ended early, or its Content-Encoding does not decode"),
          arrival);
    }
    return ExportOutcome{absl::OkStatus()};
  }

  // No room in the budget for `bytes` now: 503, or 413 when they are more than all of it.
  ExportOutcome NoRoom(size_t bytes, absl::Time arrival) {
    const size_t capacity = exports_->budget()->capacity();
    if (bytes > capacity) {
      return exports_->Refused(
          OtlpTransport::kHttp,
          absl::ResourceExhaustedError(absl::StrCat("the request needs ", bytes,
                                                    " bytes, more than the whole memory budget (",
                                                    capacity, " bytes, shipper.queue.mem.bytes)")),
          arrival);
    }
    return exports_->Unavailable(
        OtlpTransport::kHttp, "no room in the memory budget for the request's body now", arrival);
  }

  // Answers `outcome` in the request's encoding; closes the connection after it when `close`.
  static void Reply(const ExportOutcome& outcome, bool json, bool close,
                    httplib::Response& response) {
    response.status = HttpCode(outcome.status.code());
    std::string body;
    if (!outcome.status.ok()) {
      if (outcome.status.code() == absl::StatusCode::kUnavailable) {
        const double seconds = std::ceil(absl::ToDoubleSeconds(outcome.retry_delay));
        response.set_header("Retry-After", absl::StrCat(static_cast<int64_t>(seconds)));
      }
      body = otlp::StatusBody(outcome.status, json);
    } else {
      opentelemetry::proto::collector::logs::v1::ExportLogsServiceResponse reply;
      if (outcome.rejected_log_records > 0) {
        reply.mutable_partial_success()->set_rejected_log_records(outcome.rejected_log_records);
        reply.mutable_partial_success()->set_error_message(outcome.error_message);
      }
      body = json ? otlp::ResponseToJson(reply) : reply.SerializeAsString();
    }
    const char* type = json ? kJson : kProtobuf;
    if (close) {
      ReplyAndClose(response, std::move(body), type);
    } else {
      response.set_content(body, type);
    }
  }

  OtlpExports* const exports_;
  const std::unique_ptr<httplib::Server> server_;
  int port_ = 0;
  std::thread thread_;  // runs the accept loop; the pool's threads serve connections
};

}  // namespace

absl::StatusOr<std::unique_ptr<OtlpHttpServer>> OtlpHttpServer::Start(const OtlpSettings& settings,
                                                                      OtlpExports* exports) {
  std::unique_ptr<httplib::Server> http;
  if (OtlpTlsBlock().On(settings.ssl)) {
    absl::StatusOr<std::unique_ptr<httplib::Server>> tls = TlsServer(settings.ssl);
    if (!tls.ok()) return tls.status();
    http = *std::move(tls);
  } else {
    http = std::make_unique<httplib::Server>();
  }
  auto server = std::make_unique<OtlpHttpServerImpl>(std::move(http), exports);
  absl::Status status = server->Listen(settings.http_address);
  if (!status.ok()) return status;
  return server;
}

}  // namespace shipper
