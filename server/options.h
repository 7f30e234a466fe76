// server/options.h — the typed configuration of an augmentd server. Filled from flags in main.cc (the only
// place that knows about flags) and passed down explicitly.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace augmentd {

// Limits enforced per request / session; reported by GetServerInfo.
struct ServerLimitsOptions {
  uint32_t max_sessions = 64;                       // concurrently open sessions
  uint64_t max_request_bytes = 256ull << 20;        // gRPC receive limit per message
  uint64_t max_response_bytes = 256ull << 20;       // gRPC send limit per message (inline batches)
  uint32_t max_batch_size = 64;                     // samples per batch
  uint32_t max_prefetch_depth = 16;                 // output slots / batches in flight per session
  uint64_t max_session_memory_bytes = 0;            // device memory per session; 0 = no limit
  uint32_t max_streams_per_session = 4;             // concurrent StreamBatches calls per session
  bool allow_client_shared_memory = false;          // sessions may register client shm / CUDA IPC regions
};

struct ServerOptions {
  std::vector<std::string> listen = {"127.0.0.1:50051"};  // "host:port" (port 0: any free port) or "unix:///path"
  std::string device = "auto";                     // default device of sessions: cpu, cuda:N, auto, GPU UUID
  ServerLimitsOptions limits;
  int metrics_port = 0;                            // Prometheus /metrics over HTTP; 0 = off
  absl::Duration drain_timeout = absl::Seconds(30);  // SIGTERM: how long in-flight calls may finish
  bool enable_reflection = true;                   // grpc.reflection.v1alpha.ServerReflection
  std::vector<std::string> dataset_roots;          // dataset-mode paths must lie inside one; empty: dataset mode off
  int batch_workers = 0;                           // executor threads producing batches; 0: min(hardware threads, 8)
};

}  // namespace augmentd
