#include "runtime/worker_pool.h"

#include <pthread.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

namespace shipper::runtime {

WorkerPool::WorkerPool(std::string name, int size, std::function<void(const Worker&)> loop)
    : name_(std::move(name)), loop_(std::move(loop)) {
  CHECK_GE(size, 0);
  CHECK(loop_ != nullptr);
  Resize(size);
}

WorkerPool::~WorkerPool() { Stop(); }

void WorkerPool::Resize(int size) {
  CHECK_GE(size, 0);
  MutexLock lock(&mu_);
  if (stopped_) return;
  JoinFinishedLocked();
  int old_size = static_cast<int>(running_.size());
  while (static_cast<int>(running_.size()) > size) {
    std::unique_ptr<Worker> worker = std::move(running_.back());
    running_.pop_back();
    worker->stopping_.store(true, std::memory_order_release);
    retiring_.push_back(std::move(worker));
  }
  while (static_cast<int>(running_.size()) < size) StartWorkerLocked(FreeIdLocked());
  if (old_size != size) {
    LOG(INFO) << "worker pool " << name_ << ": " << old_size << " → " << size << " workers";
  }
}

int WorkerPool::size() const {
  MutexLock lock(&mu_);
  return static_cast<int>(running_.size());
}

int WorkerPool::live_threads() const {
  MutexLock lock(&mu_);
  int live = static_cast<int>(running_.size());
  for (const auto& worker : retiring_) {
    if (!worker->finished_.load(std::memory_order_acquire)) ++live;
  }
  return live;
}

void WorkerPool::Stop() {
  MutexLock stop_lock(&stop_mu_);
  std::vector<std::unique_ptr<Worker>> all;
  {
    MutexLock lock(&mu_);
    stopped_ = true;
    for (auto& worker : running_) all.push_back(std::move(worker));
    for (auto& worker : retiring_) all.push_back(std::move(worker));
    running_.clear();
    retiring_.clear();
  }
  for (auto& worker : all) worker->stopping_.store(true, std::memory_order_release);
  // Joined outside mu_ so size() and live_threads() stay callable while workers finish.
  for (auto& worker : all) worker->thread_.join();
}

void WorkerPool::StartWorkerLocked(int id) {
  auto worker = std::unique_ptr<Worker>(new Worker(id));
  Worker* self = worker.get();
  std::string thread_name = absl::StrCat(name_, "-", id).substr(0, 15);
  self->thread_ = std::thread([this, self, thread_name] {
    pthread_setname_np(pthread_self(), thread_name.c_str());
    while (!self->stopping()) loop_(*self);
    self->finished_.store(true, std::memory_order_release);
  });
  running_.push_back(std::move(worker));
}

void WorkerPool::JoinFinishedLocked() {
  auto finished = std::stable_partition(retiring_.begin(), retiring_.end(), [](const auto& w) {
    return !w->finished_.load(std::memory_order_acquire);
  });
  for (auto it = finished; it != retiring_.end(); ++it) (*it)->thread_.join();
  retiring_.erase(finished, retiring_.end());
}

int WorkerPool::FreeIdLocked() const {
  // Smallest id not used by a running or still-retiring worker, so ids stay small and unique.
  for (int id = 0;; ++id) {
    auto uses = [id](const auto& w) { return w->id() == id; };
    if (std::none_of(running_.begin(), running_.end(), uses) &&
        std::none_of(retiring_.begin(), retiring_.end(), uses)) {
      return id;
    }
  }
}

}  // namespace shipper::runtime
