// augmentd — the GPU augmentation server. The only file that knows about flags: it turns them into a
// ServerOptions, starts the server, and drains it on SIGTERM / SIGINT.
//
// Exit codes: 0 after a clean drain (or --help / --version), 1 when the server cannot start (busy port,
// missing device at runtime), 2 for a bad command line (unknown flag, bad value).
#include <malloc.h>
#include <signal.h>

#include <pthread.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "augment/device.h"
#include "server/listen_address.h"
#include "server/log.h"
#include "server/metrics_http.h"
#include "server/options.h"
#include "server/server.h"
#include "server/service.h"

namespace augmentd {
namespace {

constexpr int kExitStartFailure = 1;
constexpr int kExitUsage = 2;

// One command-line flag: its name, value placeholder, help text and a setter that validates the value.
struct Flag {
  std::string name;
  std::string value_name;  // empty for a boolean switch
  std::string help;
  std::function<absl::Status(const std::string&)> set;
};

absl::Status ParseBytes(const std::string& text, uint64_t* out) {
  // Plain bytes or a binary suffix: 4096, 64KiB, 256MiB, 2GiB (K/M/G accepted as the same).
  std::string s = absl::AsciiStrToLower(absl::StripAsciiWhitespace(text));
  uint64_t multiplier = 1;
  for (const auto& [suffix, factor] : std::vector<std::pair<std::string, uint64_t>>{
           {"kib", 1ull << 10}, {"mib", 1ull << 20}, {"gib", 1ull << 30}, {"k", 1ull << 10}, {"m", 1ull << 20},
           {"g", 1ull << 30}, {"b", 1}}) {
    if (absl::EndsWith(s, suffix)) {
      s.resize(s.size() - suffix.size());
      multiplier = factor;
      break;
    }
  }
  uint64_t value = 0;
  if (s.empty() || !absl::SimpleAtoi(s, &value) || value > UINT64_MAX / multiplier) {
    return absl::InvalidArgumentError(absl::StrCat("'", text, "' is not a byte size (e.g. 268435456, 256MiB)"));
  }
  *out = value * multiplier;
  return absl::OkStatus();
}

// A byte size of at least `min` (a message limit below that would reject the service's own small calls).
absl::Status ParseBytesAtLeast(const std::string& text, uint64_t min, uint64_t* out) {
  uint64_t value = 0;
  if (absl::Status s = ParseBytes(text, &value); !s.ok()) return s;
  if (value < min) return absl::InvalidArgumentError(absl::StrCat("'", text, "' is below the minimum of ", min));
  *out = value;
  return absl::OkStatus();
}

absl::Status ParseUint32(const std::string& text, uint32_t min, uint32_t* out) {
  uint32_t value = 0;
  if (!absl::SimpleAtoi(text, &value) || value < min) {
    return absl::InvalidArgumentError(absl::StrCat("'", text, "' is not an integer >= ", min));
  }
  *out = value;
  return absl::OkStatus();
}

// A thread / worker count in [min, max].
absl::Status ParseCount(const std::string& text, uint32_t min, uint32_t max, int* out) {
  uint32_t n = 0;
  if (absl::Status s = ParseUint32(text, min, &n); !s.ok()) return s;
  if (n > max) return absl::InvalidArgumentError(absl::StrCat("at most ", max));
  *out = static_cast<int>(n);
  return absl::OkStatus();
}

absl::Status ParseBool(const std::string& text, bool* out) {
  if (!absl::SimpleAtob(text, out)) {
    return absl::InvalidArgumentError(absl::StrCat("'", text, "' is not a boolean (true/false)"));
  }
  return absl::OkStatus();
}

std::vector<Flag> MakeFlags(ServerOptions& o, bool& listen_given) {
  const ServerOptions d;  // defaults, for the help text
  std::vector<Flag> flags;
  flags.push_back({"listen", "ADDR[,ADDR...]",
                   absl::StrCat("Address to serve on; repeat the flag or separate with commas. host:port for TCP "
                                "(0.0.0.0:PORT = every interface, [::]:PORT for IPv6, port 0 = any free port) or "
                                "unix:///absolute/path for a unix socket. Default: ",
                                absl::StrJoin(d.listen, ",")),
                   [&o, &listen_given](const std::string& v) -> absl::Status {
                     if (!listen_given) o.listen.clear();
                     listen_given = true;
                     for (absl::string_view part : absl::StrSplit(v, ',')) {
                       const std::string address(absl::StripAsciiWhitespace(part));
                       if (absl::StatusOr<ListenAddress> parsed = ParseListenAddress(address); !parsed.ok()) {
                         return parsed.status();
                       }
                       o.listen.push_back(address);
                     }
                     return absl::OkStatus();
                   }});
  flags.push_back({"device", "SPEC",
                   absl::StrCat("Default device of sessions: cpu, cuda:N, auto (the first GPU, else the CPU) or a "
                                "GPU UUID (GPU-...). Default: ",
                                d.device),
                   [&o](const std::string& v) -> absl::Status {
                     // Checked against the machine at startup (ResolveDevice), after the command line.
                     o.device = v;
                     return absl::OkStatus();
                   }});
  flags.push_back({"max_sessions", "N",
                   absl::StrCat("Maximum number of open sessions. Default: ", d.limits.max_sessions),
                   [&o](const std::string& v) { return ParseUint32(v, 1, &o.limits.max_sessions); }});
  flags.push_back({"max_request_bytes", "BYTES",
                   absl::StrCat("Largest request message accepted (inline patches); larger ones get "
                                "RESOURCE_EXHAUSTED. Suffixes KiB/MiB/GiB; at least 64KiB. Default: ",
                                d.limits.max_request_bytes),
                   [&o](const std::string& v) {
                     return ParseBytesAtLeast(v, 64 << 10, &o.limits.max_request_bytes);
                   }});
  flags.push_back({"max_response_bytes", "BYTES",
                   absl::StrCat("Largest response message sent (inline batches); at least 64KiB. Default: ",
                                d.limits.max_response_bytes),
                   [&o](const std::string& v) {
                     return ParseBytesAtLeast(v, 64 << 10, &o.limits.max_response_bytes);
                   }});
  flags.push_back({"unix_socket_buffer", "BYTES",
                   absl::StrCat("Kernel send / receive buffer asked for on unix-socket connections when a patch "
                                "stream starts (fewer rounds per inline batch; capped by net.core.wmem_max); 0 = "
                                "the kernel's default. Suffixes KiB/MiB/GiB. Default: ",
                                d.unix_socket_buffer_bytes),
                   [&o](const std::string& v) { return ParseBytes(v, &o.unix_socket_buffer_bytes); }});
  flags.push_back({"max_batch_size", "N",
                   absl::StrCat("Maximum samples per batch a session may ask for. Default: ",
                                d.limits.max_batch_size),
                   [&o](const std::string& v) { return ParseUint32(v, 1, &o.limits.max_batch_size); }});
  flags.push_back({"max_prefetch_depth", "N",
                   absl::StrCat("Maximum output slots (batches in flight) per session. Default: ",
                                d.limits.max_prefetch_depth),
                   [&o](const std::string& v) { return ParseUint32(v, 1, &o.limits.max_prefetch_depth); }});
  flags.push_back({"max_session_memory_bytes", "BYTES",
                   "Device memory one session may hold (slots and staging); 0 = no limit. Default: 0",
                   [&o](const std::string& v) { return ParseBytes(v, &o.limits.max_session_memory_bytes); }});
  flags.push_back({"max_streams_per_session", "N",
                   absl::StrCat("Concurrent StreamBatches / StreamPatches calls per session; a stream stops counting "
                                "as soon as the server ends it (before the client sees its status). Default: ",
                                d.limits.max_streams_per_session),
                   [&o](const std::string& v) { return ParseUint32(v, 1, &o.limits.max_streams_per_session); }});
  flags.push_back({"allow_client_shm", "BOOL",
                   "Security: allow clients to register their own host shared-memory / CUDA IPC input regions "
                   "with a session (OpenSessionRequest.host_shm_regions / cuda_ipc_regions; co-located trainers "
                   "only). false = such registration is refused with PERMISSION_DENIED; server-owned output "
                   "slots are not affected. Default: false",
                   [&o](const std::string& v) { return ParseBool(v, &o.limits.allow_client_shared_memory); }});
  flags.push_back({"device_memory_budget_bytes", "BYTES",
                   "Server-wide budget for the output slots (CUDA IPC / host shm) and CUDA staging of all sessions; "
                   "OpenSession beyond it gets RESOURCE_EXHAUSTED; 0 = no limit. Default: 0",
                   [&o](const std::string& v) { return ParseBytes(v, &o.limits.device_memory_budget_bytes); }});
  flags.push_back({"metrics_port", "PORT|HOST:PORT",
                   "Plain-HTTP operations endpoint: GET /metrics (Prometheus text format 0.0.4: per-session "
                   "batches, bytes, latency histograms, queue depth, credits, slots, memory), /healthz "
                   "(liveness) and /readyz (200 while SERVING, 503 while draining). PORT alone listens on every "
                   "interface; HOST:PORT (e.g. 127.0.0.1:9102, [::1]:9102) on one; port 0 in the HOST:PORT "
                   "form picks a free port, logged as 'metrics on http://HOST:PORT/metrics'. 0 = off. "
                   "Unauthenticated: keep it on a private interface. Default: 0",
                   [&o](const std::string& v) -> absl::Status {
                     if (v == "0") {
                       o.metrics_address.clear();
                       return absl::OkStatus();
                     }
                     if (absl::StatusOr<HttpAddress> a = ParseHttpAddress(v); !a.ok()) return a.status();
                     o.metrics_address = v;
                     return absl::OkStatus();
                   }});
  flags.push_back({"drain_timeout", "DURATION",
                   "On SIGTERM/SIGINT: how long in-flight calls may finish before they are cancelled, e.g. "
                   "30s, 500ms, 2m (a plain number means seconds). Default: 30s",
                   [&o](const std::string& v) -> absl::Status {
                     absl::Duration t;
                     double seconds = 0;
                     if (absl::SimpleAtod(v, &seconds)) {
                       t = absl::Seconds(seconds);
                     } else if (!absl::ParseDuration(v, &t)) {
                       return absl::InvalidArgumentError(absl::StrCat("'", v, "' is not a duration (e.g. 30s)"));
                     }
                     if (t < absl::ZeroDuration()) return absl::InvalidArgumentError("must not be negative");
                     o.drain_timeout = t;
                     return absl::OkStatus();
                   }});
  flags.push_back({"session_idle_timeout", "DURATION",
                   "Close a session that has no open stream and received no call for this long (its client died "
                   "or forgot it), freeing its slots and memory, e.g. 300s, 10m; 0: never. Default: 300s",
                   [&o](const std::string& v) -> absl::Status {
                     absl::Duration t;
                     double seconds = 0;
                     if (absl::SimpleAtod(v, &seconds)) {
                       t = absl::Seconds(seconds);
                     } else if (!absl::ParseDuration(v, &t)) {
                       return absl::InvalidArgumentError(absl::StrCat("'", v, "' is not a duration (e.g. 300s)"));
                     }
                     if (t < absl::ZeroDuration()) return absl::InvalidArgumentError("must not be negative");
                     o.limits.session_idle_timeout = t;
                     return absl::OkStatus();
                   }});
  flags.push_back({"dataset_root", "DIR[,DIR...]",
                   "Directory that dataset-mode sessions may read (nnU-Net preprocessed data); repeat the flag or "
                   "separate with commas. Dataset paths outside every root are refused. Default: none (dataset "
                   "mode off)",
                   [&o](const std::string& v) -> absl::Status {
                     for (absl::string_view part : absl::StrSplit(v, ',')) {
                       const std::string dir(absl::StripAsciiWhitespace(part));
                       if (dir.empty()) continue;
                       if (dir[0] != '/') return absl::InvalidArgumentError(absl::StrCat("'", dir, "' is not absolute"));
                       o.dataset_roots.push_back(dir);
                     }
                     return absl::OkStatus();
                   }});
  flags.push_back({"dataset_host_cache", "BYTES",
                   "Dataset mode: host memory (pinned when a GPU is present) for whole decoded cases, per dataset "
                   "folder, shared by its sessions, LRU; upcoming cases are prefetched. 0 = off. Default: 0",
                   [&o](const std::string& v) { return ParseBytes(v, &o.dataset_host_cache_bytes); }});
  flags.push_back({"dataset_gpu_cache", "BYTES",
                   "Dataset mode: GPU memory for whole cases resident on the device of CUDA sessions, per dataset "
                   "folder and device, LRU (crops run on the GPU). 0 = off. Default: 0",
                   [&o](const std::string& v) { return ParseBytes(v, &o.dataset_gpu_cache_bytes); }});
  flags.push_back({"dataset_prefetch_threads", "N",
                   "Dataset mode: CPU threads prefetching the cases of upcoming batches into the caches. Default: 2",
                   [&o](const std::string& v) { return ParseCount(v, 0, 64, &o.dataset_prefetch_threads); }});
  flags.push_back({"dataset_load_threads", "N",
                   "Dataset mode: threads cropping the samples of one batch read through the host (no GPU cache "
                   "tier), at most the batch size; the bytes do not depend on it. Default: 4",
                   [&o](const std::string& v) { return ParseCount(v, 1, 64, &o.dataset_load_threads); }});
  flags.push_back({"batch_workers", "N",
                   "CPU executor threads that produce batches (shared by the CPU sessions by weighted fair "
                   "queuing on SessionConfig.weight); 0 = min(hardware threads, 8). Default: 0",
                   [&o](const std::string& v) { return ParseCount(v, 0, 256, &o.batch_workers); }});
  flags.push_back({"gpu_workers", "N",
                   "Executor workers per visible GPU (each may drive its own CUDA stream); sessions on a GPU are "
                   "scheduled on that GPU's workers by weighted fair queuing. Default: 2",
                   [&o](const std::string& v) { return ParseCount(v, 1, 64, &o.gpu_workers); }});
  flags.push_back({"max_inflight_batches_per_session", "N",
                   absl::StrCat("Batches one session may have queued or running on the executor; a patch-mode "
                                "Augment call beyond it gets RESOURCE_EXHAUSTED naming this limit (streams stay "
                                "within their prefetch depth). 0 = no limit. Default: ",
                                d.limits.max_inflight_batches_per_session),
                   [&o](const std::string& v) {
                     return ParseUint32(v, 0, &o.limits.max_inflight_batches_per_session);
                   }});
  flags.push_back({"max_inflight_bytes_per_session", "BYTES",
                   absl::StrCat("Estimated bytes (inputs + outputs) of one session's queued or running batches; an "
                                "Augment call beyond it gets RESOURCE_EXHAUSTED naming this limit. 0 = no limit. "
                                "Default: ",
                                d.limits.max_inflight_bytes_per_session),
                   [&o](const std::string& v) { return ParseBytes(v, &o.limits.max_inflight_bytes_per_session); }});
  flags.push_back({"tls_cert", "FILE",
                   "Security: PEM certificate chain of the server; with --tls_key, TCP listeners speak TLS "
                   "(unix sockets stay plaintext, protected by file permissions). Default: none (plaintext)",
                   [&o](const std::string& v) {
                     o.tls_cert_file = v;
                     return absl::OkStatus();
                   }});
  flags.push_back({"tls_key", "FILE", "Security: PEM private key for --tls_cert. Default: none",
                   [&o](const std::string& v) {
                     o.tls_key_file = v;
                     return absl::OkStatus();
                   }});
  flags.push_back({"tls_client_ca", "FILE",
                   "Security: PEM CA bundle; when set (with --tls_cert/--tls_key), TCP clients must present a "
                   "certificate signed by it (mTLS) or the handshake fails. Default: none (no client certificates)",
                   [&o](const std::string& v) {
                     o.tls_client_ca_file = v;
                     return absl::OkStatus();
                   }});
  flags.push_back({"auth_token_file", "FILE",
                   "Security: file with one bearer token per line ('#' comments and blank lines ignored). Every "
                   "AugmentService call must then carry metadata 'authorization: Bearer <token>' or gets "
                   "UNAUTHENTICATED; grpc.health.v1 and server reflection stay open for probes. Use with TLS on "
                   "TCP. Default: none (no token check)",
                   [&o](const std::string& v) {
                     o.auth_token_file = v;
                     return absl::OkStatus();
                   }});
  flags.push_back({"reflection", "BOOL", "Serve gRPC server reflection (for grpcurl / grpc_cli). Default: true",
                   [&o](const std::string& v) { return ParseBool(v, &o.enable_reflection); }});
  return flags;
}

void PrintUsage(const std::vector<Flag>& flags) {
  std::string text = absl::StrCat(
      "augmentd ", AugmentdVersion(),
      " - GPU augmentation service for nnU-Net training (gRPC API augmentd.v1).\n\n"
      "Usage: augmentd [--flag=value | --flag value]...\n\n"
      "Serves augmentd.v1.AugmentService, grpc.health.v1.Health and server reflection on every --listen\n"
      "address, logs one line 'serving on ADDR[, ADDR...]' once ready, and drains on SIGTERM/SIGINT.\n\n"
      "Flags:\n");
  for (const Flag& f : flags) {
    absl::StrAppend(&text, "  --", f.name, "=", f.value_name, "\n");
    // Wrap the help text at ~96 columns, indented.
    std::string line = "      ";
    for (absl::string_view word : absl::StrSplit(f.help, ' ')) {
      if (line.size() + word.size() > 96) {
        absl::StrAppend(&text, absl::StripTrailingAsciiWhitespace(line), "\n");
        line = "      ";
      }
      absl::StrAppend(&line, word, " ");
    }
    absl::StrAppend(&text, absl::StripTrailingAsciiWhitespace(line), "\n");
  }
  absl::StrAppend(&text,
                  "  --help, -h\n      Print this text and exit.\n"
                  "  --version\n      Print the version and exit.\n\n"
                  "Exit status: 0 after a clean shutdown, 1 if the server cannot start (e.g. the port is busy),\n"
                  "2 for a bad command line.\n\n"
                  "Example:\n  augmentd --listen=0.0.0.0:50051,unix:///run/augmentd/aug.sock --device=cuda:0\n");
  std::fputs(text.c_str(), stdout);
}

// One line on stderr for a bad command line; the caller exits with kExitUsage.
int UsageError(const std::string& message) {
  std::fprintf(stderr, "augmentd: %s (see augmentd --help)\n", message.c_str());
  return kExitUsage;
}

// Parses argv into `options`. Returns an exit status when the process should stop now (0 after --help /
// --version, kExitUsage after printing the error), nullopt to go on serving.
std::optional<int> ParseCommandLine(int argc, char** argv, ServerOptions& options) {
  bool listen_given = false;
  std::vector<Flag> flags = MakeFlags(options, listen_given);
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h" || arg == "-help" || arg == "--helpfull") {
      PrintUsage(flags);
      return 0;
    }
    if (arg == "--version") {
      std::printf("%s\n", BuildDescription(AUGMENTD_CUDA_BUILT != 0).c_str());
      return 0;
    }
    absl::string_view body = arg;
    if (!absl::ConsumePrefix(&body, "--") && !absl::ConsumePrefix(&body, "-")) {
      return UsageError(absl::StrCat("unexpected argument '", arg, "': flags look like --name=value"));
    }
    std::string name(body), value;
    bool has_value = false;
    if (const size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
      has_value = true;
    }
    auto flag = std::find_if(flags.begin(), flags.end(), [&](const Flag& f) { return f.name == name; });
    if (flag == flags.end()) return UsageError(absl::StrCat("unknown flag '--", name, "'"));
    if (!has_value) {
      if (i + 1 >= argc) {
        return UsageError(absl::StrCat("flag '--", name, "' needs a value (", flag->value_name, ")"));
      }
      value = argv[++i];
    }
    if (absl::Status s = flag->set(value); !s.ok()) {
      return UsageError(absl::StrCat("bad value for --", name, ": ", s.message()));
    }
  }
  // The device is a value error too, but it can only be checked against this machine.
  if (absl::StatusOr<DeviceInfo> device = ResolveDevice(options.device); !device.ok()) {
    return UsageError(absl::StrCat("bad value for --device: ", device.status().message()));
  }
  return std::nullopt;
}

// Keeps the buffers of large messages warm. Every inline request of tens of MB is parsed into a fresh std::string
// and every inline answer serialized into a fresh slice; glibc serves those (> 32 MB; > 64 MB on a gRPC thread's own
// arena: always) with an mmap that is unmapped on free, so each message page-faults through all of its pages — most
// of the inline transport's time on the development VM (bench/results/2026-12-01-patch-inline-cpu.md). One arena and
// 256 MiB thresholds reuse the freed heap instead (small allocations stay on the per-thread tcache). Must run before
// any other thread allocates (CUDA's included: ResolveDevice starts them). AUGMENTD_MALLOC_TUNING=0 turns it off;
// an explicit MALLOC_ARENA_MAX in the environment wins over the arena count.
void TuneMallocForLargeMessages() {
  const char* off = std::getenv("AUGMENTD_MALLOC_TUNING");
  if (off != nullptr && std::string(off) == "0") return;
  constexpr int kLarge = 256 << 20;
  mallopt(M_MMAP_THRESHOLD, kLarge);
  mallopt(M_TRIM_THRESHOLD, kLarge);
  if (std::getenv("MALLOC_ARENA_MAX") == nullptr) mallopt(M_ARENA_MAX, 1);
}

int Run(int argc, char** argv) {
  TuneMallocForLargeMessages();
  ServerOptions options;
  if (std::optional<int> exit_status = ParseCommandLine(argc, argv, options); exit_status.has_value()) {
    return *exit_status;
  }
  RouteGrpcLogsToLog();

  // Block the shutdown signals before any gRPC thread exists, so that only sigwait() below sees them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  absl::StatusOr<std::unique_ptr<AugmentdServer>> server = AugmentdServer::Start(options);
  if (!server.ok()) {
    std::fprintf(stderr, "augmentd: %s\n", std::string(server.status().message()).c_str());
    return kExitStartFailure;
  }
  if (!(*server)->metrics_address().empty()) {
    LogInfo("metrics on http://", (*server)->metrics_address(), "/metrics (also /healthz, /readyz)");
  }
  LogInfo("serving on ", absl::StrJoin((*server)->addresses(), ", "), " (device ", (*server)->device_name(),
          ", augmentd ", AugmentdVersion(), ")");

  int signal_number = 0;
  while (sigwait(&signals, &signal_number) != 0) {
  }
  LogInfo("received ", signal_number == SIGTERM ? "SIGTERM" : "SIGINT", ": draining (timeout ",
          absl::FormatDuration(options.drain_timeout), ")");
  (*server)->Drain(options.drain_timeout);
  LogInfo("stopped");
  return 0;
}

}  // namespace
}  // namespace augmentd

int main(int argc, char** argv) { return augmentd::Run(argc, argv); }
