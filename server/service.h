// server/service.h — augmentd.v1.AugmentService on the gRPC callback API.
//
// Handlers validate, enqueue and return; they never block a gRPC thread (STYLE.md). One handler per file:
//   get_server_info.cc   GetServerInfo
//   open_session.cc      OpenSession (dataset opening runs on the executor)
//   close_session.cc     CloseSession
//   augment.cc           Augment (patch mode, unary; augmentation runs on the executor)
//   stream_batches.cc    StreamBatches (bidi with credits; the reactor is server/batch_stream.h)
//   get_stats.cc         GetStats
// Thread-safety: the service object is shared by all gRPC threads; the context is immutable after
// construction, the registry and the executor synchronise themselves.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "absl/time/time.h"
#include "augment/device.h"
#include "augmentd/v1/service.grpc.pb.h"
#include "server/executor.h"
#include "server/options.h"
#include "server/session.h"

namespace augmentd {

// What the handlers need to know about the server they run in.
struct ServiceContext {
  ServerOptions options;
  DeviceInfo default_device;     // resolved --device
  absl::Time start_time = absl::Now();
  bool cuda_built = false;       // the engine was built with CUDA
  int threads_per_batch = 1;     // AugmentBatch threads per batch (hardware threads / batch workers)
};

class AugmentServiceImpl final : public ::augmentd::v1::AugmentService::CallbackService {
 public:
  explicit AugmentServiceImpl(ServiceContext context);

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

  // Drain: closes every session (their streams end). The executor stops with the service object.
  void Shutdown();

  SessionRegistry& registry() { return registry_; }
  BatchExecutor& executor() { return *executor_; }
  const ServiceContext& context() const { return context_; }
  // Counts a request answered with an error (GetStats.server.requests_rejected).
  void CountRejected() { rejected_.fetch_add(1); }
  void CountBatch() { batches_.fetch_add(1); }

 private:
  const ServiceContext context_;
  SessionRegistry registry_;
  std::unique_ptr<BatchExecutor> executor_;
  std::atomic<uint64_t> rejected_{0};
  std::atomic<uint64_t> batches_{0};
};

// The augmentd version ("0.1.0") and a one-line build description.
const char* AugmentdVersion();
std::string BuildDescription(bool cuda_built);

}  // namespace augmentd
