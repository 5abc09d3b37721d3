// shipper_load: drives a Producer server (Shipper or null_server) and reports what it sustains.
//
//   shipper_load --target=127.0.0.1:PORT --events=2000000
//   shipper_load --target=127.0.0.1:PORT --rate=200000 --duration=20s --shape=large
//
// While it runs, and stdout is a terminal, one line shows the rate, lag and latency of the last
// second. At the end it prints one JSON line (see LoadResultJson). Exit status: 0 when every
// accepted event was persisted, 1 on errors, 2 when the drain timed out.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/time/time.h"
#include "tests/load/load_generator.h"

ABSL_FLAG(std::string, target, "", "HOST:PORT of the Producer server");
ABSL_FLAG(int, channels, 4, "distinct channels (TCP connections)");
ABSL_FLAG(int, inflight, 4, "calls in flight per channel");
ABSL_FLAG(int, batch, 500, "events per PublishEvents call");
ABSL_FLAG(std::string, shape, "filebeat", "event shape: filebeat, tiny or large");
ABSL_FLAG(double, rate, 0, "events/s in total; 0: as fast as possible");
ABSL_FLAG(uint64_t, events, 0, "stop after this many accepted events");
ABSL_FLAG(absl::Duration, duration, absl::ZeroDuration(),
          "stop sending after this long (default 10s when --events is not set either)");
ABSL_FLAG(int, threads, 1, "completion-queue threads");
ABSL_FLAG(int, pool_events, 4096, "distinct events, serialized once and sent round-robin");
ABSL_FLAG(absl::Duration, poll_interval, absl::Milliseconds(1),
          "PersistedIndex polling_interval to ask for");
ABSL_FLAG(absl::Duration, call_timeout, absl::Seconds(10), "deadline of each call");
ABSL_FLAG(absl::Duration, connect_timeout, absl::Seconds(10),
          "how long to wait for the channels and the first PersistedIndex reply");
ABSL_FLAG(absl::Duration, drain_timeout, absl::Seconds(30),
          "how long to wait, after sending, for everything to be persisted");
ABSL_FLAG(bool, idle, false,
          "connect and follow PersistedIndex for --duration without publishing anything");
ABSL_FLAG(uint64_t, max_errors, 1000,
          "give up after this many failed calls (a flood against a server that refuses: more)");
ABSL_FLAG(bool, drop_at_end, false,
          "at the end of --duration, drop what is not accepted yet instead of resending it");
ABSL_FLAG(std::string, progress, "auto", "live progress line: auto (if stdout is a tty), on, off");

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Publishes events to a Producer server with N channels x M in-flight calls; prints JSON.");
  absl::ParseCommandLine(argc, argv);

  shipper::load::LoadOptions o;
  o.target = absl::GetFlag(FLAGS_target);
  o.channels = absl::GetFlag(FLAGS_channels);
  o.inflight = absl::GetFlag(FLAGS_inflight);
  o.batch = absl::GetFlag(FLAGS_batch);
  auto shape = shipper::load::ParseEventShape(absl::GetFlag(FLAGS_shape));
  if (!shape.ok()) {
    std::cerr << "shipper_load: " << shape.status().message() << "\n";
    return 1;
  }
  o.shape = *shape;
  o.rate = absl::GetFlag(FLAGS_rate);
  o.events = absl::GetFlag(FLAGS_events);
  o.idle = absl::GetFlag(FLAGS_idle);
  o.duration = absl::GetFlag(FLAGS_duration);
  if (o.events == 0 && o.duration <= absl::ZeroDuration()) o.duration = absl::Seconds(10);
  o.threads = absl::GetFlag(FLAGS_threads);
  o.pool_events = absl::GetFlag(FLAGS_pool_events);
  o.poll_interval = absl::GetFlag(FLAGS_poll_interval);
  o.call_timeout = absl::GetFlag(FLAGS_call_timeout);
  o.connect_timeout = absl::GetFlag(FLAGS_connect_timeout);
  o.drain_timeout = absl::GetFlag(FLAGS_drain_timeout);
  o.max_errors = absl::GetFlag(FLAGS_max_errors);
  o.drop_at_end = absl::GetFlag(FLAGS_drop_at_end);

  const std::string progress = absl::GetFlag(FLAGS_progress);
  const bool live = progress == "on" || (progress == "auto" && isatty(STDOUT_FILENO));
  if (live) {
    o.on_progress = [](const shipper::load::LoadProgress& p) {
      std::printf("\r%s\033[K", shipper::load::FormatProgress(p).c_str());
      std::fflush(stdout);
    };
  }

  auto result = shipper::load::RunLoad(o);
  if (live) std::printf("\r\033[K");
  if (!result.ok()) {
    std::fflush(stdout);
    std::cerr << "shipper_load: " << result.status() << "\n";
    return 1;
  }
  std::printf("%s\n", shipper::load::LoadResultJson(o, *result).c_str());
  std::fflush(stdout);
  return result->drained ? 0 : 2;
}
