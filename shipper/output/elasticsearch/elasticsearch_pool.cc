#include "shipper/output/elasticsearch/elasticsearch_pool.h"

#include <curl/curl.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "glog/logging.h"

namespace shipper {
namespace {

// How long a failing host is skipped while another is available: Beats' backoff defaults.
constexpr absl::Duration kHostBackoffInit = absl::Seconds(1);
constexpr absl::Duration kHostBackoffMax = absl::Seconds(60);

struct CurlDeleter {
  void operator()(CURL* curl) const { curl_easy_cleanup(curl); }
};

size_t AppendAnswer(char* data, size_t size, size_t n, void* answer) {
  static_cast<std::string*>(answer)->append(data, size * n);
  return size * n;
}

// libcurl calls it about once a second while a request waits, more often while data flows:
// a non-zero return aborts the request, which is how Cancel() reaches requests in flight.
int AbortWhenCancelled(void* cancelled, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<const std::atomic<bool>*>(cancelled)->load(std::memory_order_relaxed);
}

}  // namespace

HttpHeaders::HttpHeaders(const std::vector<std::string>& lines) {
  for (const std::string& line : lines) list_ = curl_slist_append(list_, line.c_str());
}

HttpHeaders::~HttpHeaders() { curl_slist_free_all(list_); }

// A keep-alive connection to one host: libcurl reuses the connection of a handle from request
// to request.
struct ConnectionPool::Connection {
  std::unique_ptr<CURL, CurlDeleter> curl;
  std::string answer;             // the body of the last answer
  char error[CURL_ERROR_SIZE]{};  // libcurl's detail of the last failure
};

absl::StatusOr<std::unique_ptr<ConnectionPool>> ConnectionPool::New(Options options) {
  // Once, before any thread makes a handle (curl_global_init is not thread-safe everywhere).
  static const CURLcode init = curl_global_init(CURL_GLOBAL_DEFAULT);
  if (init != CURLE_OK) {
    return absl::InternalError(absl::StrCat("elasticsearch: libcurl: ", curl_easy_strerror(init)));
  }
  return std::unique_ptr<ConnectionPool>(new ConnectionPool(std::move(options)));
}

ConnectionPool::ConnectionPool(Options options)
    : options_(std::move(options)), hosts_(options_.hosts.size()) {}

ConnectionPool::~ConnectionPool() = default;

void ConnectionPool::Cancel() {
  cancelled_.store(true);
  // Wakes the writers waiting for a connection: their condition reads cancelled_.
  runtime::MutexLock lock(&mu_);
  connection_free_.SignalAll();
}

bool ConnectionPool::ConnectionFree() const {
  if (cancelled_.load()) return true;
  for (const Host& host : hosts_) {
    if (host.in_flight < options_.per_host) return true;
  }
  return false;
}

absl::StatusOr<ConnectionPool::Lease> ConnectionPool::Acquire() {
  Lease lease;
  {
    runtime::MutexLock lock(&mu_);
    while (!ConnectionFree()) connection_free_.Wait(&mu_);
    if (cancelled_.load()) return absl::CancelledError("elasticsearch: shutting down");
    const absl::Time now = absl::Now();
    std::optional<size_t> pick;
    for (size_t k = 0; k < hosts_.size(); ++k) {
      const size_t h = (next_host_ + k) % hosts_.size();
      if (hosts_[h].in_flight >= options_.per_host) continue;
      if (hosts_[h].retry_at <= now) {
        pick = h;
        break;
      }
      if (!pick || hosts_[h].retry_at < hosts_[*pick].retry_at) pick = h;
    }
    Host& host = hosts_[*pick];
    next_host_ = *pick + 1;
    ++host.in_flight;
    lease.host_ = *pick;
    lease.url_ = &options_.hosts[*pick];
    lease.checked_ = host.checked;
    if (!host.idle.empty()) {
      lease.connection_ = std::move(host.idle.back());
      host.idle.pop_back();
    }
  }
  if (lease.connection_ == nullptr) lease.connection_ = Connect();
  return lease;
}

void ConnectionPool::Release(Lease lease, const absl::Status& status) {
  runtime::MutexLock lock(&mu_);
  Host& host = hosts_[lease.host_];
  --host.in_flight;
  connection_free_.Signal();
  if (lease.lost_) {
    host.checked = false;  // it may come back as another cluster, or another version
  } else {
    host.checked = host.checked || lease.checked_;
    host.idle.push_back(std::move(lease.connection_));
  }
  if (status.ok()) {
    host.backoff.reset();
    host.retry_at = absl::InfinitePast();
  } else {
    if (!host.backoff) host.backoff.emplace(kHostBackoffInit, kHostBackoffMax);
    host.retry_at = absl::Now() + host.backoff->Next();
  }
}

std::unique_ptr<ConnectionPool::Connection> ConnectionPool::Connect() {
  auto c = std::make_unique<Connection>();
  c->curl.reset(curl_easy_init());
  CHECK(c->curl != nullptr) << "curl_easy_init failed";
  CURL* curl = c->curl.get();
  // libcurl's timeouts use signals unless told not to, which threads must not.
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS,
                   static_cast<long>(absl::ToInt64Milliseconds(options_.timeout)));
  curl_easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, c->error);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, AppendAnswer);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &c->answer);
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, AbortWhenCancelled);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &cancelled_);
  if (!options_.username.empty()) {
    curl_easy_setopt(curl, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
    curl_easy_setopt(curl, CURLOPT_USERNAME, options_.username.c_str());
    curl_easy_setopt(curl, CURLOPT_PASSWORD, options_.password.c_str());
  }
  const TlsPem& tls = options_.tls;
  const auto blob = [&](CURLoption option, const std::string& pem) {
    if (pem.empty()) return;
    curl_blob b{const_cast<char*>(pem.data()), pem.size(), CURL_BLOB_COPY};
    curl_easy_setopt(curl, option, &b);
  };
  blob(CURLOPT_CAINFO_BLOB, tls.certificate_authorities);
  blob(CURLOPT_SSLCERT_BLOB, tls.certificate);
  blob(CURLOPT_SSLKEY_BLOB, tls.key);
  if (!tls.certificate.empty()) curl_easy_setopt(curl, CURLOPT_SSLCERTTYPE, "PEM");
  if (!tls.key.empty()) curl_easy_setopt(curl, CURLOPT_SSLKEYTYPE, "PEM");
  const VerificationMode mode = options_.verification_mode;
  curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, mode == VerificationMode::kNone ? 0L : 1L);
  curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, mode == VerificationMode::kFull ? 2L : 0L);
  return c;
}

ConnectionPool::Lease::Lease() = default;
ConnectionPool::Lease::Lease(Lease&&) = default;
ConnectionPool::Lease& ConnectionPool::Lease::operator=(Lease&&) = default;
ConnectionPool::Lease::~Lease() = default;

const std::string& ConnectionPool::Lease::body() const { return connection_->answer; }

HttpAnswer ConnectionPool::Lease::Get(absl::string_view path, const HttpHeaders& headers) {
  return Perform(path, std::nullopt, headers);
}

HttpAnswer ConnectionPool::Lease::Post(absl::string_view path, absl::string_view body,
                                       const HttpHeaders& headers) {
  return Perform(path, body, headers);
}

HttpAnswer ConnectionPool::Lease::Perform(absl::string_view path,
                                          std::optional<absl::string_view> body,
                                          const HttpHeaders& headers) {
  Connection& c = *connection_;
  CURL* curl = c.curl.get();
  c.answer.clear();
  c.error[0] = '\0';
  const std::string url = absl::StrCat(*url_, path);
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers.list());
  if (body) {
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body->data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body->size()));
  } else {
    curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
  }
  const CURLcode rc = curl_easy_perform(curl);
  if (rc != CURLE_OK) {
    lost_ = true;
    if (rc == CURLE_ABORTED_BY_CALLBACK) return {0, "cancelled at shutdown"};
    return {0, c.error[0] != '\0' ? std::string(c.error) : curl_easy_strerror(rc)};
  }
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  return {status, ""};
}

}  // namespace shipper
