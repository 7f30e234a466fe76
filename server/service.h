// server/service.h — augmentd.v1.AugmentService on the gRPC callback API.
//
// Handlers validate, enqueue and return; they never block a gRPC thread (STYLE.md). One handler per file:
//   get_server_info.cc   GetServerInfo
// Not implemented yet (issue 5), answered UNIMPLEMENTED by the generated defaults:
//   OpenSession, CloseSession, Augment, StreamBatches, GetStats.
// Thread-safety: the service object is shared by all gRPC threads; its state is immutable after
// construction (sessions will bring their own synchronisation).
#pragma once

#include <string>

#include "absl/time/time.h"
#include "augment/device.h"
#include "augmentd/v1/service.grpc.pb.h"
#include "server/options.h"

namespace augmentd {

// What the handlers need to know about the server they run in.
struct ServiceContext {
  ServerOptions options;
  DeviceInfo default_device;     // resolved --device
  absl::Time start_time = absl::Now();
  bool cuda_built = false;       // the engine was built with CUDA
};

class AugmentServiceImpl final : public ::augmentd::v1::AugmentService::CallbackService {
 public:
  explicit AugmentServiceImpl(ServiceContext context);

  grpc::ServerUnaryReactor* GetServerInfo(grpc::CallbackServerContext* context,
                                          const ::augmentd::v1::GetServerInfoRequest* request,
                                          ::augmentd::v1::GetServerInfoResponse* response) override;

 private:
  const ServiceContext context_;
};

// The augmentd version ("0.1.0") and a one-line build description.
const char* AugmentdVersion();
std::string BuildDescription(bool cuda_built);

}  // namespace augmentd
