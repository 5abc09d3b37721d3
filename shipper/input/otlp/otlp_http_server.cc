#include "shipper/input/otlp/otlp_http_server.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
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
#include "shipper/input/otlp/otlp_gzip.h"
#include "shipper/input/otlp/otlp_json.h"
#include "shipper/input/otlp/otlp_request_body.h"

namespace shipper {
namespace {

constexpr char kLogsPath[] = "/v1/logs";
constexpr char kProtobuf[] = "application/x-protobuf";
constexpr char kJson[] = "application/json";
// Where the request's Content-Encoding header goes before httplib reads the body (see there).
constexpr char kContentEncoding[] = "X-Shipper-Content-Encoding";

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
  // Gives back what it holds beyond `total`.
  void ShrinkTo(size_t total) {
    if (total >= bytes_) return;
    budget_->Release(bytes_ - total);
    bytes_ = total;
  }
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

// A refusal of a request whose body is not read (wrong path, method or content type): a
// google.rpc.Status, as every OTLP/HTTP error, in JSON when the request came as JSON, else in
// protobuf (the specification's default).
void RefuseUnread(const httplib::Request& request, httplib::Response& response, int code,
                  const absl::Status& status) {
  const bool json = MediaType(request) == kJson;
  response.status = code;
  ReplyAndClose(response, otlp::StatusBody(status, json), json ? kJson : kProtobuf);
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
    // Logs() counts the body, as sent and decompressed, against max_message_size itself.
    server_->set_payload_max_length(std::numeric_limits<size_t>::max());
    // Logs() decompresses: httplib would inflate any gzip or deflate without a limit, take br,
    // and pass any other coding through as if it were none. It decompresses what the request's
    // Content-Encoding header names when the body is read, which is after this: the header
    // moves to one of ours, that no sender sets (one that does has it dropped).
    server_->set_pre_routing_handler([](const httplib::Request& request, httplib::Response&) {
      auto& headers = const_cast<httplib::Headers&>(request.headers);  // httplib's own, not const
      headers.erase(kContentEncoding);
      auto [first, last] = headers.equal_range("Content-Encoding");
      std::string encoding;
      for (auto it = first; it != last; ++it) {
        absl::StrAppend(&encoding, encoding.empty() ? "" : ",", it->second);
      }
      headers.erase(first, last);
      if (!encoding.empty()) headers.emplace(kContentEncoding, encoding);
      return httplib::Server::HandlerResponse::Unhandled;
    });
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
      RefuseUnread(
          request, response, 404,
          absl::NotFoundError(absl::StrCat(
              request.path, ": ", other_signal ? "Shipper takes logs only: " : "not found; ",
              "OTLP logs are POST /v1/logs")));
    };
    const auto not_allowed = [](const httplib::Request& request, httplib::Response& response) {
      response.set_header("Allow", "POST");
      RefuseUnread(
          request, response, 405,
          absl::UnimplementedError(absl::StrCat(request.method, " ", kLogsPath, ": only POST")));
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
      RefuseUnread(request, response, 415, outcome.status);
      return;
    }
    const std::string encoding = request.get_header_value(kContentEncoding);
    const std::optional<ContentCoding> coding = ParseContentEncoding(encoding);
    if (!coding) {
      const ExportOutcome outcome = exports_->Refused(
          OtlpTransport::kHttp,
          absl::InvalidArgumentError(absl::StrCat("Content-Encoding '", encoding,
                                                  "': OTLP/HTTP takes gzip, deflate or none")),
          arrival);
      RefuseUnread(request, response, 415, outcome.status);
      return;
    }
    RequestBody body(exports_->budget());
    const ExportOutcome refused = ReadBody(request, reader, *coding, &body, arrival);
    if (!refused.status.ok()) {
      Reply(refused, json, /*close=*/true, response);  // what is left of the body is unread
      return;
    }
    if (!body.Flatten()) {
      // Its copy is the transport's doing, not the request's size: told to retry, never 413.
      Reply(NoRoom(body.size(), arrival), json, /*close=*/false, response);
      return;
    }
    absl::string_view protobuf = body.bytes();
    std::string decoded;
    Charge decoding(exports_->budget());
    if (json) {
      // Counted first, built only once charged: what the decoding holds is not the JSON's size
      // (`{}` is 3 bytes and about 300 once decoded).
      absl::StatusOr<otlp::JsonCost> cost =
          otlp::JsonDecodingCost(body.bytes(), OtlpExports::kMaxRecords);
      if (!cost.ok()) {
        Reply(exports_->Refused(OtlpTransport::kHttp, cost.status(), arrival), json,
              /*close=*/false, response);
        return;
      }
      const size_t unbudgeted_limit =
          OtlpExports::kUnbudgetedMultiple * exports_->max_message_size();
      if (exports_->budget()->capacity() == 0 && cost->bytes > unbudgeted_limit) {
        Reply(exports_->Refused(
                  OtlpTransport::kHttp,
                  absl::ResourceExhaustedError(absl::StrCat(
                      "decoding the OTLP/JSON request takes up to ", cost->bytes,
                      " bytes, more than ", OtlpExports::kUnbudgetedMultiple,
                      " x shipper.otlp.max_message_size (", unbudgeted_limit,
                      " bytes; shipper.queue.mem.bytes is 0): send fewer values per export")),
                  arrival),
              json, /*close=*/false, response);
        return;
      }
      if (!decoding.Reserve(cost->bytes)) {
        Reply(NoRoom(cost->bytes + body.size(), arrival), json, /*close=*/false, response);
        return;
      }
      absl::Status status = otlp::JsonToProtobufRequest(body.bytes(), &decoded);
      if (!status.ok()) {
        Reply(exports_->Refused(OtlpTransport::kHttp, status, arrival), json, /*close=*/false,
              response);
        return;
      }
      // Only the protobuf is held while Export() converts it, as when it came as protobuf.
      body.Clear();
      decoding.ShrinkTo(decoded.capacity());
      protobuf = decoded;
    }
    absl::Notification answered;
    ExportOutcome outcome;
    exports_->Export(
        OtlpTransport::kHttp, protobuf, arrival,
        [&](const ExportOutcome& o) {
          outcome = o;
          answered.Notify();
        },
        json ? decoding.bytes() : body.charged());
    // Export() no longer needs them: the budget gets them back before the wait for the ack.
    body.Clear();
    std::string().swap(decoded);
    decoding.ReleaseAll();
    answered.WaitForNotification();
    Reply(outcome, json, /*close=*/false, response);
  }

  // Reads the body, decompressed, into `body`, which charges the budget for it before it
  // arrives. The outcome to answer when it cannot (status not OK), else OK.
  // REQUIRES: `coding` is the request's Content-Encoding.
  ExportOutcome ReadBody(const httplib::Request& request, const httplib::ContentReader& reader,
                         ContentCoding coding, RequestBody* body, absl::Time arrival) {
    const size_t limit = exports_->max_message_size();
    size_t length = 0;
    const bool known_length = absl::SimpleAtoi(request.get_header_value("Content-Length"), &length);
    if (known_length && length > limit) {
      // Larger than the limit as sent, compressed or not. Read past it unkept, so that the
      // sender, still sending, gets to read the 413.
      reader([](const char*, size_t) { return true; });
      return exports_->TooLarge(OtlpTransport::kHttp, length, arrival);
    }
    const bool identity = coding == ContentCoding::kIdentity;
    if (identity && known_length && !body->Expect(length)) return NoRoom(length, arrival);
    std::optional<Inflater> inflater;
    if (!identity) inflater.emplace(coding, limit, "shipper.otlp.max_message_size");
    enum class Stop { kNo, kTooLarge, kNoRoom, kUndecodable } stop = Stop::kNo;
    absl::Status undecodable;
    size_t sent = 0;   // what arrived, as sent
    size_t total = 0;  // what arrived, decompressed
    const auto keep = [&](const char* data, size_t size) {
      total = body->size() + size;
      if (total > limit) {
        stop = Stop::kTooLarge;
        return false;
      }
      if (!body->Append(data, size)) {
        stop = Stop::kNoRoom;
        return false;
      }
      return true;
    };
    const bool read = reader([&](const char* data, size_t size) {
      sent += size;
      if (sent > limit) {
        total = sent;
        stop = Stop::kTooLarge;
        return false;
      }
      if (identity) return keep(data, size);
      const absl::Status status = inflater->Feed(absl::string_view(data, size), keep);
      if (absl::IsResourceExhausted(status)) {
        total = inflater->inflated();
        stop = Stop::kTooLarge;
      } else if (!status.ok() && stop == Stop::kNo) {
        undecodable = status;
        stop = Stop::kUndecodable;
      }
      return status.ok();
    });
    if (read && stop == Stop::kNo && inflater) {
      undecodable = inflater->Finish();
      if (!undecodable.ok()) stop = Stop::kUndecodable;
    }
    switch (stop) {
      case Stop::kTooLarge:
        return exports_->TooLarge(OtlpTransport::kHttp, total, arrival);
      case Stop::kNoRoom:
        return NoRoom(total, arrival);
      case Stop::kUndecodable:
        return exports_->Refused(OtlpTransport::kHttp, undecodable, arrival);
      case Stop::kNo:
        break;
    }
    if (!read) {
      return exports_->Refused(OtlpTransport::kHttp,
                               absl::InvalidArgumentError("the request's body ended early"),
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
