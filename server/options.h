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
  uint32_t max_streams_per_session = 4;             // concurrent StreamBatches / StreamPatches calls per session
  bool allow_client_shared_memory = false;          // sessions may register client shm / CUDA IPC regions
  uint64_t device_memory_budget_bytes = 0;          // output slots + staging of all sessions; 0 = no limit
  // Per-session executor admission (server/executor.h): patch-mode Augment calls beyond these get
  // RESOURCE_EXHAUSTED naming the limit; stream prefetch counts towards them but is bounded by its depth.
  uint32_t max_inflight_batches_per_session = 32;   // batches queued or running; 0 = no limit
  uint64_t max_inflight_bytes_per_session = 1ull << 30;  // their estimated bytes; 0 = no limit
  // A session with no open stream and no call for this long is closed (server/session_lease.h); 0 = never.
  absl::Duration session_idle_timeout = absl::Seconds(300);
};

struct ServerOptions {
  std::vector<std::string> listen = {"127.0.0.1:50051"};  // "host:port" (port 0: any free port) or "unix:///path"
  std::string device = "auto";                     // default device of sessions: cpu, cuda:N, auto, GPU UUID
  ServerLimitsOptions limits;
  std::string metrics_address;                     // /metrics, /healthz, /readyz over HTTP: "PORT" or "HOST:PORT"; "" = off
  // SO_SNDBUF / SO_RCVBUF asked for on unix-socket connections when a StreamPatches stream starts
  // (server/socket_buffers.h; capped by net.core.wmem_max / rmem_max); 0 = the kernel's defaults.
  uint64_t unix_socket_buffer_bytes = 8ull << 20;
  absl::Duration drain_timeout = absl::Seconds(30);  // SIGTERM: how long in-flight calls may finish
  bool enable_reflection = true;                   // grpc.reflection.v1alpha.ServerReflection
  std::vector<std::string> dataset_roots;          // dataset-mode paths must lie inside one; empty: dataset mode off
  // Dataset-mode case cache (augment/dataset/case_cache.h), shared by the sessions of one dataset folder:
  uint64_t dataset_host_cache_bytes = 0;           // decoded cases in (pinned) host memory; 0 = off
  uint64_t dataset_gpu_cache_bytes = 0;            // cases resident on the session's GPU (CUDA sessions); 0 = off
  int dataset_prefetch_threads = 2;                // CPU threads loading upcoming cases into the cache
  int dataset_load_threads = 4;                    // threads cropping the samples of one batch (host path)
  int batch_workers = 0;                           // executor threads producing batches; 0: min(hardware threads, 8)
  int gpu_workers = 2;                             // executor workers per GPU (each may own a CUDA stream)
  // Security (server/tls.h, server/auth.h): TLS on TCP listeners, mTLS with a client CA, bearer tokens.
  std::string tls_cert_file, tls_key_file, tls_client_ca_file;
  std::string auth_token_file;                     // one token per line; "" = no token check
};

}  // namespace augmentd
