// Keeps the effective CPU count current: detects once at construction, then (when an interval is
// set and there is no override) re-reads the limit on its own thread, keeping the cgroup files
// open, and tells listeners when the effective count changes.
//
// Logging: at construction one INFO line "cpu quota: <CpuQuota::ToString()>", plus the reason when
// there is one (WARNING for unreadable limits, INFO for an override). On each change one INFO line
// "cpu quota changed: effective_cpus <old> → <new> (<ToString()>)". A reason that changes without
// the count changing is logged once, not on every read.
//
// Thread safety: every method may be called from any thread. Listeners run on the monitor thread
// (or on the thread calling Refresh), one at a time, in the order of changes, never while a lock
// of the monitor is held. A listener must not call Refresh() or destroy the monitor.
#ifndef SHIPPER_RUNTIME_CPU_MONITOR_H_
#define SHIPPER_RUNTIME_CPU_MONITOR_H_

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "runtime/cpu_quota.h"
#include "runtime/mutex.h"

namespace shipper::runtime {

class CpuMonitor {
 public:
  using Listener = std::function<void(int old_cpus, int new_cpus)>;

  // interval <= 0 or options.override_cpus > 0: detect once, no thread (the log says which).
  CpuMonitor(CpuQuotaOptions options, absl::Duration interval);
  CpuMonitor(const CpuMonitor&) = delete;
  CpuMonitor& operator=(const CpuMonitor&) = delete;
  // Stop().
  ~CpuMonitor();

  // Stops the periodic re-reads and joins the thread: once it returns, the monitor calls no
  // listener on its own (Refresh() still does). Call it before destroying what listeners touch,
  // or declare the monitor after them. Idempotent. REQUIRES: not called from a listener.
  void Stop();

  CpuQuota current() const;
  int effective_cpus() const;
  // True when the monitor re-reads periodically (an interval was set and there is no override).
  bool retuning() const { return retuning_; }

  // Listeners added after a change only see later changes: read effective_cpus() after adding.
  void AddListener(Listener listener);

  // Re-reads now (also used by tests and, if wanted, on SIGHUP). Returns true when the effective
  // count changed; listeners have then been called. Does nothing with an override.
  bool Refresh();

 private:
  void Run();

  // Constant after construction.
  const absl::Duration interval_;
  const bool overridden_;
  const bool retuning_;

  // Serializes reads and listener calls, so listeners see changes in order.
  Mutex refresh_mu_;
  std::unique_ptr<CpuQuotaReader> reader_ ABSL_GUARDED_BY(refresh_mu_);
  std::string last_reason_ ABSL_GUARDED_BY(refresh_mu_);

  // runtime::Mutex rather than absl::Mutex: Debian's Abseil is not built with TSan, which then
  // cannot see absl::Mutex's synchronization and reports false races (see runtime/mutex.h).
  mutable Mutex mu_;
  CpuQuota current_ ABSL_GUARDED_BY(mu_);
  std::vector<Listener> listeners_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  CondVar stop_cv_;  // signaled when stop_ is set

  Mutex join_mu_;                                 // serializes Stop()
  std::thread thread_ ABSL_GUARDED_BY(join_mu_);  // started last
};

}  // namespace shipper::runtime

#endif  // SHIPPER_RUNTIME_CPU_MONITOR_H_
