// null_server: the Producer API with no queue and no output, for benchmarks (see null_server.h).
//
//   null_server --listen=127.0.0.1:0
//
// Logs "Null server listening on HOST:PORT" to stderr once serving; stops on SIGINT or SIGTERM.
#include <signal.h>

#include <cstdio>
#include <iostream>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "tests/load/null_server.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:0", "HOST:PORT to serve on; port 0 picks a free one");
ABSL_FLAG(uint32_t, max_accept_per_call, 0,
          "accept at most this many events per call (0: all), to exercise partial acceptance");
ABSL_FLAG(bool, arena, true, "parse each request into an arena");
ABSL_FLAG(std::string, api, "async",
          "full decoding served by the async API (completion-queue threads, one per core) or "
          "the callback API");
ABSL_FLAG(int, async_threads, 0, "completion-queue threads for --api=async (0: one per core)");
ABSL_FLAG(std::string, decode, "scan",
          "scan: check every event on its wire bytes as Shipper does (the baseline); full: parse "
          "every event into protobuf messages; envelope: read the uuid and count events only");

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("A Producer server that accepts and persists everything at once.");
  absl::ParseCommandLine(argc, argv);

  // Block the stop signals before gRPC starts its threads, so only sigwait below sees them.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  shipper::load::NullServerOptions options;
  options.listen_address = absl::GetFlag(FLAGS_listen);
  options.max_accept_per_call = absl::GetFlag(FLAGS_max_accept_per_call);
  options.use_arena = absl::GetFlag(FLAGS_arena);
  const std::string api = absl::GetFlag(FLAGS_api);
  if (api == "callback") {
    options.api = shipper::load::NullServerOptions::Api::kCallback;
  } else if (api != "async") {
    std::cerr << "null_server: --api must be async or callback, not " << api << "\n";
    return 1;
  }
  options.async_threads = absl::GetFlag(FLAGS_async_threads);
  const std::string decode = absl::GetFlag(FLAGS_decode);
  if (decode == "envelope") {
    options.decode = shipper::load::NullServerOptions::Decode::kEnvelope;
  } else if (decode == "full") {
    options.decode = shipper::load::NullServerOptions::Decode::kFull;
  } else if (decode != "scan") {
    std::cerr << "null_server: --decode must be scan, full or envelope, not " << decode << "\n";
    return 1;
  }
  auto server = shipper::load::NullServer::Start(options);
  if (!server.ok()) {
    std::cerr << "null_server: " << server.status() << "\n";
    return 1;
  }
  std::cerr << "Null server listening on " << (*server)->address() << std::endl;

  int sig = 0;
  sigwait(&stop, &sig);
  (*server)->Shutdown();
  std::cerr << "null_server: " << (*server)->events() << " events in " << (*server)->calls()
            << " calls" << std::endl;
  return 0;
}
