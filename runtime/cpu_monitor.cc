#include "runtime/cpu_monitor.h"

#include <chrono>
#include <utility>

#include "glog/logging.h"

namespace shipper::runtime {

CpuMonitor::CpuMonitor(CpuQuotaOptions options, absl::Duration interval)
    : interval_(interval),
      overridden_(options.override_cpus > 0),
      retuning_(!overridden_ && interval > absl::ZeroDuration()) {
  reader_ = CpuQuotaReader::Create(std::move(options));
  current_ = reader_->Read();
  last_reason_ = current_.reason;
  LOG(INFO) << "cpu quota: " << current_.ToString();
  if (!current_.reason.empty()) {
    if (overridden_) {
      LOG(INFO) << "cpu quota: " << current_.reason;
    } else {
      LOG(WARNING) << "cpu quota: " << current_.reason;
    }
  }
  if (overridden_) return;
  if (interval_ <= absl::ZeroDuration()) {
    LOG(INFO) << "cpu quota: re-tuning is off (interval 0)";
    return;
  }
  MutexLock lock(&join_mu_);
  thread_ = std::thread([this] { Run(); });
}

CpuMonitor::~CpuMonitor() { Stop(); }

void CpuMonitor::Stop() {
  MutexLock join_lock(&join_mu_);
  {
    MutexLock lock(&mu_);
    stop_ = true;
  }
  stop_cv_.SignalAll();
  if (thread_.joinable()) thread_.join();
}

CpuQuota CpuMonitor::current() const {
  MutexLock lock(&mu_);
  return current_;
}

int CpuMonitor::effective_cpus() const {
  MutexLock lock(&mu_);
  return current_.effective_cpus;
}

void CpuMonitor::AddListener(Listener listener) {
  MutexLock lock(&mu_);
  listeners_.push_back(std::move(listener));
}

bool CpuMonitor::Refresh() {
  if (overridden_) return false;
  MutexLock refresh_lock(&refresh_mu_);
  CpuQuota fresh = reader_->Read();
  if (fresh.reason != last_reason_) {
    if (!fresh.reason.empty()) LOG(WARNING) << "cpu quota: " << fresh.reason;
    last_reason_ = fresh.reason;
  }
  int old_cpus;
  std::vector<Listener> listeners;
  {
    MutexLock lock(&mu_);
    old_cpus = current_.effective_cpus;
    current_ = fresh;
    if (old_cpus == fresh.effective_cpus) return false;
    listeners = listeners_;
  }
  LOG(INFO) << "cpu quota changed: effective_cpus " << old_cpus << " → " << fresh.effective_cpus
            << " (" << fresh.ToString() << ")";
  for (const Listener& listener : listeners) listener(old_cpus, fresh.effective_cpus);
  return true;
}

void CpuMonitor::Run() {
  const auto interval = absl::ToChronoNanoseconds(interval_);
  for (;;) {
    {
      MutexLock lock(&mu_);
      const auto deadline = std::chrono::steady_clock::now() + interval;
      while (!stop_ && stop_cv_.WaitUntil(&mu_, deadline)) {
      }
      if (stop_) return;
    }
    Refresh();
  }
}

}  // namespace shipper::runtime
