#include "shipper/output/kafka/kafka_reports.h"

#include <chrono>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace shipper {

KafkaReports::KafkaReports(size_t events)
    : slots_(events), results_(events, RD_KAFKA_RESP_ERR_NO_ERROR) {
  for (size_t i = 0; i < events; ++i) slots_[i] = {this, i};
}

void* KafkaReports::Expect(size_t i) {
  runtime::MutexLock lock(&mu_);
  ++holders_;
  return &slots_[i];
}

void KafkaReports::Refused(size_t i, rd_kafka_resp_err_t err) {
  runtime::MutexLock lock(&mu_);
  --holders_;
  results_[i] = err;
}

void KafkaReports::Report(void* opaque, rd_kafka_resp_err_t err) {
  auto* slot = static_cast<Slot*>(opaque);
  KafkaReports* reports = slot->reports;
  bool last;
  {
    runtime::MutexLock lock(&reports->mu_);
    reports->results_[slot->event] = err;
    last = reports->Release();
    // Under the lock: once it is released, Await() may free the KafkaReports.
    if (reports->AllReported()) reports->all_reported_.Signal();
  }
  if (last) delete reports;
}

absl::StatusOr<std::vector<rd_kafka_resp_err_t>> KafkaReports::Await(
    const std::atomic<bool>& cancelled) {
  constexpr std::chrono::milliseconds kCancelCheck(100);
  mu_.Lock();
  auto deadline = std::chrono::steady_clock::now() + kCancelCheck;
  while (!AllReported()) {
    if (all_reported_.WaitUntil(&mu_, deadline) || AllReported()) continue;
    deadline = std::chrono::steady_clock::now() + kCancelCheck;
    if (!cancelled) continue;
    const int waiting = holders_ - 1;
    const bool last = Release();
    mu_.Unlock();
    if (last) delete this;
    return absl::UnavailableError(
        absl::StrCat("kafka: cancelled at shutdown; ", waiting, " messages unconfirmed, purged"));
  }
  std::vector<rd_kafka_resp_err_t> results = std::move(results_);
  mu_.Unlock();
  delete this;
  return results;
}

bool KafkaErrorIsPermanent(rd_kafka_resp_err_t err) {
  switch (err) {
    case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
    case RD_KAFKA_RESP_ERR_INVALID_MSG_SIZE:
    case RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE:
    case RD_KAFKA_RESP_ERR_INVALID_MSG:
    case RD_KAFKA_RESP_ERR_INVALID_RECORD:
    case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION:
    case RD_KAFKA_RESP_ERR__INVALID_ARG:
      return true;
    default:
      return false;
  }
}

std::string KafkaErrorText(rd_kafka_resp_err_t err) {
  return absl::StrCat("kafka: ", rd_kafka_err2name(err), ": ", rd_kafka_err2str(err));
}

absl::Status SettleKafkaWrite(const std::vector<rd_kafka_resp_err_t>& results,
                              const std::vector<std::string>& refusals, size_t unproduced,
                              bool cancelled, Outcome* outcome) {
  const size_t events = refusals.size();
  bool purged = false;
  for (size_t i = 0; i < events; ++i) {
    if (i >= unproduced) {
      outcome->Fail(i, "kafka: cancelled at shutdown");
    } else if (!refusals[i].empty()) {
      outcome->rejected.push_back({i, refusals[i]});
    } else if (results[i] != RD_KAFKA_RESP_ERR_NO_ERROR) {
      const rd_kafka_resp_err_t err = results[i];
      purged |= err == RD_KAFKA_RESP_ERR__PURGE_QUEUE || err == RD_KAFKA_RESP_ERR__PURGE_INFLIGHT;
      if (KafkaErrorIsPermanent(err)) {
        outcome->rejected.push_back({i, KafkaErrorText(err)});
      } else {
        outcome->Fail(i, KafkaErrorText(err));
      }
    }
  }
  if (unproduced < events || (purged && cancelled)) {
    return absl::UnavailableError("kafka: cancelled at shutdown; unconfirmed messages purged");
  }
  return absl::OkStatus();
}

}  // namespace shipper
