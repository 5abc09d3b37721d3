// Every problem a configuration has, collected so that one run reports them all: an operator
// validating a ConfigMap with --check_config fixes everything at once, not one error per run.
//
// Each problem is one line that names the key to fix.
//
// Thread safety: a plain value; one thread at a time.
#ifndef SHIPPER_SHIPPER_CONFIG_PROBLEMS_H_
#define SHIPPER_SHIPPER_CONFIG_PROBLEMS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace shipper {

class Problems {
 public:
  // Adds the message of `status` (which names its key); OK adds nothing.
  void Add(const absl::Status& status);
  // Adds `problem`, a message that names its key.
  void Add(std::string problem);

  bool empty() const { return problems_.empty(); }
  const std::vector<std::string>& all() const { return problems_; }

  // OK when there is none; else INVALID_ARGUMENT with every problem, one per line.
  absl::Status ToStatus() const;

 private:
  std::vector<std::string> problems_;
};

}  // namespace shipper

#endif  // SHIPPER_SHIPPER_CONFIG_PROBLEMS_H_
