// Keep-alive HTTP connections (libcurl) to the Elasticsearch output's hosts.
//
// A writer Acquire()s a Lease, one connection to one host, sends its requests on it, and
// Release()s it saying how the host did. Leases go to the hosts round-robin, at most `per_host`
// at a time per host (the others wait for a free connection); a host whose request failed is
// skipped, backing off as Beats does (1 s, doubling to 60 s), while another is available. A
// connection that got no answer is dropped; the others stay with their host for the next lease,
// so that libcurl reuses them. Each host remembers whether it passed the output's `GET /` since
// it last failed to answer (Lease::checked), so that the check runs once per connection to it.
//
// Cancel() aborts the requests in flight within about a second (libcurl's progress callback)
// and makes Acquire() fail, waking the writers that wait.
//
// Thread safety: Acquire(), Release(), Cancel() and cancelled() from any thread; a Lease from
// one thread at a time.
#ifndef SHIPPER_SHIPPER_OUTPUT_ELASTICSEARCH_ELASTICSEARCH_POOL_H_
#define SHIPPER_SHIPPER_OUTPUT_ELASTICSEARCH_ELASTICSEARCH_POOL_H_

#include <atomic>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "runtime/mutex.h"
#include "shipper/output/backoff.h"
#include "shipper/output/elasticsearch/elasticsearch_settings.h"

struct curl_slist;

namespace shipper {

// Request headers, each "Name: value", as libcurl takes them.
class HttpHeaders {
 public:
  explicit HttpHeaders(const std::vector<std::string>& lines);
  ~HttpHeaders();
  HttpHeaders(const HttpHeaders&) = delete;
  HttpHeaders& operator=(const HttpHeaders&) = delete;

  curl_slist* list() const { return list_; }

 private:
  curl_slist* list_ = nullptr;
};

// What a request got: an HTTP status, or 0 and why there was no answer.
struct HttpAnswer {
  long status = 0;
  std::string error;
};

class ConnectionPool {
 public:
  struct Options {
    std::vector<std::string> hosts;  // base URLs (ElasticsearchSettings::HostUrls)
    size_t per_host = 1;             // requests in flight per host
    absl::Duration timeout;          // of each request
    std::string username;            // basic authentication; empty: none
    std::string password;
    TlsPem tls;  // for https:// hosts
    VerificationMode verification_mode = VerificationMode::kFull;
  };

  // INTERNAL when libcurl cannot start.
  static absl::StatusOr<std::unique_ptr<ConnectionPool>> New(Options options);
  ~ConnectionPool();

  class Lease;
  // A connection to the next host round-robin that has one free, preferring hosts that are not
  // backing off; waits while every host has `per_host` requests in flight. CANCELLED after
  // Cancel().
  absl::StatusOr<Lease> Acquire() ABSL_LOCKS_EXCLUDED(mu_);
  // Gives back the lease's connection; a `status` not OK makes its host back off.
  void Release(Lease lease, const absl::Status& status) ABSL_LOCKS_EXCLUDED(mu_);

  void Cancel() ABSL_LOCKS_EXCLUDED(mu_);
  bool cancelled() const { return cancelled_.load(); }

 private:
  struct Connection;
  // A host's connections and health.
  struct Host {
    size_t in_flight = 0;
    std::vector<std::unique_ptr<Connection>> idle;
    bool checked = false;  // passed GET / since the host last failed to answer
    absl::Time retry_at = absl::InfinitePast();
    std::optional<Backoff> backoff;  // set while the host fails
  };

  explicit ConnectionPool(Options options);
  std::unique_ptr<Connection> Connect();
  bool ConnectionFree() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  std::atomic<bool> cancelled_{false};  // libcurl's progress callback reads it too

  runtime::Mutex mu_;
  runtime::CondVar connection_free_;              // ConnectionFree() may have become true
  std::vector<Host> hosts_ ABSL_GUARDED_BY(mu_);  // as options_.hosts
  size_t next_host_ ABSL_GUARDED_BY(mu_) = 0;     // where round-robin starts
};

// One connection to one host, lent to one writer.
class ConnectionPool::Lease {
 public:
  Lease(Lease&&);
  Lease& operator=(Lease&&);
  ~Lease();

  const std::string& url() const { return *url_; }  // the host's base URL
  // Whether the host passed GET / since it last failed to answer; set_checked() says it did.
  bool checked() const { return checked_; }
  void set_checked() { checked_ = true; }

  // A request to url() + `path`; the answer's body is body() until the next request.
  HttpAnswer Get(absl::string_view path, const HttpHeaders& headers);
  HttpAnswer Post(absl::string_view path, absl::string_view body, const HttpHeaders& headers);
  const std::string& body() const;

 private:
  friend class ConnectionPool;
  Lease();
  HttpAnswer Perform(absl::string_view path, std::optional<absl::string_view> body,
                     const HttpHeaders& headers);

  size_t host_ = 0;
  const std::string* url_ = nullptr;
  std::unique_ptr<Connection> connection_;
  bool checked_ = false;
  bool lost_ = false;  // a request got no answer: the connection is dropped
};

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_OUTPUT_ELASTICSEARCH_ELASTICSEARCH_POOL_H_
