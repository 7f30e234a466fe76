// server/service.h — augmentd.v1.AugmentService on the gRPC callback API.
//
// Handlers validate, enqueue and return; they never block a gRPC thread (STYLE.md). One handler per file:
//   get_server_info.cc   GetServerInfo
//   open_session.cc      OpenSession (dataset opening runs on the executor)
//   close_session.cc     CloseSession
//   augment.cc           Augment (patch mode, unary; augmentation runs on the executor)
//   stream_batches.cc    StreamBatches (bidi with credits; the reactor is server/batch_stream.h)
//   get_stats.cc         GetStats
//   stream_patches.cc    StreamPatches (patch mode, bidi with credits; the reactor is server/patch_stream.h)
// Thread-safety: the service object is shared by all gRPC threads; the context is immutable after
// construction, the registry and the executor synchronise themselves.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "absl/time/time.h"
#include "augment/device.h"
#include "augmentd/v1/service.grpc.pb.h"
#include "server/auth.h"
#include "server/executor.h"
#include "server/metrics.h"
#include "server/options.h"
#include "server/session.h"
#include "server/session_lease.h"
#include "server/slot_ring.h"

namespace augmentd {

// What the handlers need to know about the server they run in.
struct ServiceContext {
  ServerOptions options;
  DeviceInfo default_device;     // resolved --device
  absl::Time start_time = absl::Now();
  bool cuda_built = false;       // the engine was built with CUDA
  int threads_per_batch = 1;     // AugmentBatch threads per batch (hardware threads / batch workers)
  ExecutorOptions executor;      // device pools and per-session limits (server/executor.h)
  std::shared_ptr<const TokenAuthenticator> auth;  // null: no token check (server/auth.h)
};

class AugmentServiceImpl final : public ::augmentd::v1::AugmentService::CallbackService {
 public:
  explicit AugmentServiceImpl(ServiceContext context);
  // Stops the lease reaper before the executor (declared after it) goes.
  ~AugmentServiceImpl() override;

  grpc::ServerUnaryReactor* GetServerInfo(grpc::CallbackServerContext* context,
                                          const ::augmentd::v1::GetServerInfoRequest* request,
                                          ::augmentd::v1::GetServerInfoResponse* response) override;
  grpc::ServerUnaryReactor* OpenSession(grpc::CallbackServerContext* context,
                                        const ::augmentd::v1::OpenSessionRequest* request,
                                        ::augmentd::v1::OpenSessionResponse* response) override;
  grpc::ServerUnaryReactor* CloseSession(grpc::CallbackServerContext* context,
                                         const ::augmentd::v1::CloseSessionRequest* request,
                                         ::augmentd::v1::CloseSessionResponse* response) override;
  grpc::ServerUnaryReactor* Augment(grpc::CallbackServerContext* context,
                                    const ::augmentd::v1::AugmentRequest* request,
                                    ::augmentd::v1::AugmentResponse* response) override;
  grpc::ServerBidiReactor<::augmentd::v1::StreamBatchesRequest, ::augmentd::v1::StreamBatchesResponse>*
  StreamBatches(grpc::CallbackServerContext* context) override;
  grpc::ServerUnaryReactor* GetStats(grpc::CallbackServerContext* context,
                                     const ::augmentd::v1::GetStatsRequest* request,
                                     ::augmentd::v1::GetStatsResponse* response) override;
  grpc::ServerBidiReactor<::augmentd::v1::StreamBatchesRequest, ::augmentd::v1::StreamBatchesResponse>*
  StreamPatches(grpc::CallbackServerContext* context) override;

  // Drain: serving() turns false, every session closes (their streams end). The executor stops with the
  // service object, after the gRPC server (server/executor.h: queued tasks still run, so calls finish).
  void Shutdown();
  // serving() false from now on (/readyz 503, augmentd_up 0); the first step of a drain.
  void StopServing() { serving_.store(false); }
  bool serving() const { return serving_.load(); }

  // Bearer-token check of an AugmentService call (server/auth.h); OK when no token file is configured.
  // Every handler calls it first and answers UNAUTHENTICATED on error.
  absl::Status Authorize(const grpc::CallbackServerContext& call) const;
  // Counts and finishes a unary call with `status` (an error), e.g.
  //   if (absl::Status a = Authorize(*context); !a.ok()) return Reject(context, a);
  grpc::ServerUnaryReactor* Reject(grpc::CallbackServerContext* context, const absl::Status& status);
  // The executor spec of one batch of `session`: flow = session id, pool = its device, weight =
  // SessionConfig.weight, cost = its estimated batch bytes (plus `extra_bytes`, e.g. inline inputs).
  TaskSpec BatchTask(const Session& session, uint64_t extra_bytes = 0) const;
  ServerMetrics& metrics() { return metrics_; }

  SessionRegistry& registry() { return registry_; }
  // The session `id` if `token` is its credential (server/session_lease.h); renews its lease. The registry's
  // errors for unknown / closed ids; NOT_FOUND worded like an unknown id for a wrong or missing token.
  absl::StatusOr<std::shared_ptr<Session>> OwnedSession(const std::string& id, const std::string& token);
  SessionLeases& leases() { return leases_; }
  // Server-wide slot / staging memory budget (--device_memory_budget_bytes; server/slot_ring.h).
  const std::shared_ptr<MemoryBudget>& memory_budget() const { return memory_budget_; }
  BatchExecutor& executor() { return *executor_; }
  const ServiceContext& context() const { return context_; }
  // Counts a request answered with an error (GetStats.server.requests_rejected).
  void CountRejected() { rejected_.fetch_add(1); }
  void CountBatch() { batches_.fetch_add(1); }
  uint64_t requests_rejected() const { return rejected_.load(); }
  uint64_t batches_produced() const { return batches_.load(); }

 private:
  const ServiceContext context_;
  // Declared before the registry: sessions (and their slot rings) return memory to it when they go.
  const std::shared_ptr<MemoryBudget> memory_budget_ =
      std::make_shared<MemoryBudget>(context_.options.limits.device_memory_budget_bytes);
  SessionRegistry registry_;
  // After the registry (its reaper closes sessions there), before the executor: stops before either goes.
  SessionLeases leases_;
  std::unique_ptr<BatchExecutor> executor_;
  std::atomic<uint64_t> rejected_{0};
  std::atomic<uint64_t> batches_{0};
  std::atomic<bool> serving_{true};
  ServerMetrics metrics_;
};

// The augmentd version ("0.1.0") and a one-line build description.
const char* AugmentdVersion();
std::string BuildDescription(bool cuda_built);

}  // namespace augmentd
