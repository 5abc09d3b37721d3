// OTLP/HTTP: POST <the signal's URL> through libcurl's multi interface, protobuf or JSON, gzip by
// shipper/codec.
// A Send() borrows a session (a multi handle and its easy handles, which keep their connections
// alive from one Send() to the next) and drives up to max_in_flight transfers at once on the
// calling thread.
#include <curl/curl.h>

#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "runtime/mutex.h"
#include "shipper/codec/compression.h"
#include "shipper/output/otlp/otlp_request.h"
#include "shipper/output/otlp/otlp_transport.h"

namespace shipper {
namespace {

size_t AppendBody(char* data, size_t size, size_t n, void* body) {
  static_cast<std::string*>(body)->append(data, size * n);
  return size * n;
}

// One transfer's answer, as libcurl fills it in.
struct Transfer {
  CURL* curl = nullptr;
  const std::string* url = nullptr;  // the transport's, for the request's signal
  std::string body;                  // what was sent, compressed if asked
  std::string answer;
  std::string content_type, retry_after;
  char error[CURL_ERROR_SIZE]{};
};

size_t ReadHeader(char* data, size_t size, size_t n, void* transfer) {
  const absl::string_view line(data, size * n);
  const size_t colon = line.find(':');
  if (colon != absl::string_view::npos) {
    const absl::string_view name = line.substr(0, colon);
    const std::string value(absl::StripAsciiWhitespace(line.substr(colon + 1)));
    auto* t = static_cast<Transfer*>(transfer);
    if (absl::EqualsIgnoreCase(name, "content-type")) t->content_type = value;
    if (absl::EqualsIgnoreCase(name, "retry-after")) t->retry_after = value;
  }
  return size * n;
}

// libcurl calls it about once a second while a request waits: a non-zero return aborts it.
int AbortWhenCancelled(void* cancelled, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<const std::atomic<bool>*>(cancelled)->load(std::memory_order_relaxed);
}

// A multi handle and its easy handles; libcurl keeps the connections in the multi handle's cache.
struct Session {
  CURLM* multi = nullptr;
  std::vector<CURL*> idle;
  ~Session() {
    for (CURL* curl : idle) curl_easy_cleanup(curl);
    curl_multi_cleanup(multi);
  }
};

class HttpTransport final : public OtlpTransport {
 public:
  explicit HttpTransport(const OtlpOutputSettings& settings, TlsPem tls)
      : settings_(settings),
        urls_{settings.Url(OtlpSignal::kLogs), settings.Url(OtlpSignal::kTraces),
              settings.Url(OtlpSignal::kMetrics)},
        tls_(std::move(tls)) {
    std::vector<std::string> lines = {"Expect:",  // no 100-continue round trip for big bodies
                                      settings.protocol == OtlpProtocol::kHttpJson
                                          ? "Content-Type: application/json"
                                          : "Content-Type: application/x-protobuf"};
    if (settings.compression == OtlpCompression::kGzip) lines.push_back("Content-Encoding: gzip");
    if (settings.compression == OtlpCompression::kZstd) lines.push_back("Content-Encoding: zstd");
    lines.insert(lines.end(), settings.headers.begin(), settings.headers.end());
    for (const std::string& line : lines) headers_ = curl_slist_append(headers_, line.c_str());
  }
  ~HttpTransport() override { curl_slist_free_all(headers_); }

  std::vector<ExportAnswer> Send(std::vector<ExportRequest> requests) override {
    std::vector<ExportAnswer> answers(requests.size());
    std::unique_ptr<Session> session = Borrow();
    std::vector<Transfer> transfers(requests.size());
    size_t next = 0, running = 0;
    while (next < requests.size() || running > 0) {
      while (next < requests.size() && running < settings_.max_in_flight) {
        if (cancelled_.load()) {
          answers[next] = HttpAnswer(0, "cancelled at shutdown", "", "", "");
          ++next;
          continue;
        }
        const std::string& url = Url(requests[next].signal);
        if (url.empty()) {
          answers[next].verdict = ExportAnswer::kRefused;
          answers[next].status = "none";
          answers[next].message =
              absl::StrCat("no URL for ", SignalRecords(requests[next].signal), ": ",
                           OtlpOutputKey("logs_endpoint"),
                           " does not end in /v1/logs and no endpoint is set to derive it from");
          ++next;
          continue;
        }
        absl::StatusOr<std::string> body = Body(std::move(requests[next]));
        if (!body.ok()) {
          answers[next] = HttpAnswer(0, body.status().message(), "", "", "");
          ++next;
          continue;
        }
        Transfer& t = transfers[next];
        t.body = *std::move(body);
        t.curl = Handle(*session);
        t.url = &url;
        Prepare(t, next);
        curl_multi_add_handle(session->multi, t.curl);
        ++next;
        ++running;
      }
      if (running == 0) break;
      int still = 0;
      curl_multi_perform(session->multi, &still);
      CURLMsg* msg;
      int left = 0;
      while ((msg = curl_multi_info_read(session->multi, &left)) != nullptr) {
        if (msg->msg != CURLMSG_DONE) continue;
        CURL* curl = msg->easy_handle;
        const CURLcode rc = msg->data.result;
        void* which = nullptr;
        curl_easy_getinfo(curl, CURLINFO_PRIVATE, &which);
        const size_t i = reinterpret_cast<size_t>(which);
        Transfer& t = transfers[i];
        if (rc != CURLE_OK) {
          answers[i] =
              HttpAnswer(0,
                         rc == CURLE_ABORTED_BY_CALLBACK ? "cancelled at shutdown"
                         : t.error[0] != '\0'            ? absl::StrCat(*t.url, ": ", t.error)
                                              : absl::StrCat(*t.url, ": ", curl_easy_strerror(rc)),
                         "", "", "");
        } else {
          long status = 0;
          curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
          answers[i] = HttpAnswer(status, "", t.content_type, t.retry_after, t.answer);
        }
        curl_multi_remove_handle(session->multi, curl);
        session->idle.push_back(curl);
        t = Transfer();
        --running;
      }
      if (running > 0) curl_multi_poll(session->multi, nullptr, 0, 100, nullptr);
    }
    GiveBack(std::move(session));
    return answers;
  }

  void Cancel() override { cancelled_.store(true); }

 private:
  const std::string& Url(OtlpSignal signal) const { return urls_[static_cast<size_t>(signal)]; }

  // What goes on the wire for `export_request`: its body as it is (moved), as JSON, compressed.
  absl::StatusOr<std::string> Body(ExportRequest export_request) const {
    std::string plain = std::move(export_request.body);
    if (settings_.protocol == OtlpProtocol::kHttpJson) {
      absl::StatusOr<std::string> json = RequestJson(export_request.signal, plain);
      if (!json.ok()) return json.status();
      plain = *std::move(json);
    }
    // Level 1 of either: the fastest, as the Collector's exporters compress by default.
    switch (settings_.compression) {
      case OtlpCompression::kGzip:
        return Encode(ContentCoding::kGzip, plain, 1);
      case OtlpCompression::kZstd:
        return Encode(ContentCoding::kZstd, plain, 1);
      case OtlpCompression::kNone:
        break;
    }
    return plain;
  }

  std::unique_ptr<Session> Borrow() {
    {
      runtime::MutexLock lock(&mu_);
      if (!sessions_.empty()) {
        std::unique_ptr<Session> session = std::move(sessions_.back());
        sessions_.pop_back();
        return session;
      }
    }
    auto session = std::make_unique<Session>();
    session->multi = curl_multi_init();
    CHECK(session->multi != nullptr) << "curl_multi_init failed";
    return session;
  }
  void GiveBack(std::unique_ptr<Session> session) {
    runtime::MutexLock lock(&mu_);
    sessions_.push_back(std::move(session));
  }

  // An easy handle of the session, set up for this transport.
  CURL* Handle(Session& session) {
    if (!session.idle.empty()) {
      CURL* curl = session.idle.back();
      session.idle.pop_back();
      return curl;
    }
    CURL* curl = curl_easy_init();
    CHECK(curl != nullptr) << "curl_easy_init failed";
    // libcurl's timeouts use signals unless told not to, which threads must not.
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers_);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS,
                     static_cast<long>(absl::ToInt64Milliseconds(settings_.timeout)));
    curl_easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, AppendBody);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, ReadHeader);
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, AbortWhenCancelled);
    curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &cancelled_);
    const auto blob = [&](CURLoption option, const std::string& pem) {
      if (pem.empty()) return;
      curl_blob b{const_cast<char*>(pem.data()), pem.size(), CURL_BLOB_COPY};
      curl_easy_setopt(curl, option, &b);
    };
    blob(CURLOPT_CAINFO_BLOB, tls_.certificate_authorities);
    blob(CURLOPT_SSLCERT_BLOB, tls_.certificate);
    blob(CURLOPT_SSLKEY_BLOB, tls_.key);
    if (!tls_.certificate.empty()) curl_easy_setopt(curl, CURLOPT_SSLCERTTYPE, "PEM");
    if (!tls_.key.empty()) curl_easy_setopt(curl, CURLOPT_SSLKEYTYPE, "PEM");
    const VerificationMode mode = settings_.ssl.verification_mode;
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, mode == VerificationMode::kNone ? 0L : 1L);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, mode == VerificationMode::kFull ? 2L : 0L);
    return curl;
  }

  // Points the handle at transfer `i` of a Send().
  static void Prepare(Transfer& t, size_t i) {
    CURL* curl = t.curl;
    curl_easy_setopt(curl, CURLOPT_PRIVATE, reinterpret_cast<void*>(i));
    curl_easy_setopt(curl, CURLOPT_URL, t.url->c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, t.body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(t.body.size()));
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &t.answer);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &t);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, t.error);
  }

  // Constant after construction.
  const OtlpOutputSettings settings_;
  const std::string urls_[3];  // by OtlpSignal
  const TlsPem tls_;
  curl_slist* headers_ = nullptr;

  std::atomic<bool> cancelled_{false};  // libcurl's progress callback reads it too
  runtime::Mutex mu_;
  std::vector<std::unique_ptr<Session>> sessions_ ABSL_GUARDED_BY(mu_);  // idle
};

}  // namespace

absl::StatusOr<std::unique_ptr<OtlpTransport>> NewHttpTransport(
    const OtlpOutputSettings& settings) {
  // Once, before any thread makes a handle (curl_global_init is not thread-safe everywhere).
  static const CURLcode init = curl_global_init(CURL_GLOBAL_DEFAULT);
  if (init != CURLE_OK) {
    return absl::InternalError(absl::StrCat("otlp: libcurl: ", curl_easy_strerror(init)));
  }
  TlsPem tls;
  if (settings.AnyHttps()) {
    absl::StatusOr<TlsPem> pem = OtlpOutputTls().Read(settings.ssl);
    if (!pem.ok()) return pem.status();
    tls = *std::move(pem);
  }
  return std::make_unique<HttpTransport>(settings, std::move(tls));
}

}  // namespace shipper
