// client/client.h — a small C++ client of augmentd (used by tests, benchmarks and load tools).
//
//   absl::StatusOr<std::unique_ptr<augmentd::Client>> c =
//       augmentd::Client::Connect("unix:///run/augmentd/aug.sock", absl::Seconds(5));
//   absl::StatusOr<augmentd::v1::ServerInfo> info = (*c)->GetServerInfo();
//   absl::StatusOr<augmentd::HealthStatus> health = (*c)->CheckHealth();
//
// Targets are gRPC targets: "host:port" (TCP) or "unix:///abs/path". Thread-safety: a Client may be used
// from several threads at once (gRPC channels and stubs are thread-safe).
#pragma once

#include <grpcpp/channel.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "augmentd/v1/service.grpc.pb.h"

namespace augmentd {

// grpc.health.v1.HealthCheckResponse.ServingStatus.
enum class HealthStatus { kUnknown = 0, kServing = 1, kNotServing = 2, kServiceUnknown = 3 };

class Client {
 public:
  // Opens a channel to `target` and waits until it is connected or `timeout` passes (UNAVAILABLE).
  static absl::StatusOr<std::unique_ptr<Client>> Connect(const std::string& target,
                                                         absl::Duration timeout = absl::Seconds(10));

  // AugmentService.GetServerInfo with a per-call deadline. gRPC errors become absl::Status.
  absl::StatusOr<::augmentd::v1::ServerInfo> GetServerInfo(absl::Duration deadline = absl::Seconds(10));

  // grpc.health.v1.Health/Check for `service` ("" = the whole server).
  absl::StatusOr<HealthStatus> CheckHealth(const std::string& service = "",
                                           absl::Duration deadline = absl::Seconds(10));

  // The generated stub, for the RPCs this class does not wrap yet.
  ::augmentd::v1::AugmentService::Stub& stub() { return *stub_; }
  const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }
  const std::string& target() const { return target_; }

 private:
  Client(std::string target, std::shared_ptr<grpc::Channel> channel);

  std::string target_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<::augmentd::v1::AugmentService::Stub> stub_;
};

}  // namespace augmentd
