// server/server.h — a running augmentd gRPC server: listeners (TLS / mTLS on TCP when configured,
// server/tls.h), AugmentService (bearer tokens, server/auth.h), grpc.health.v1, server reflection and the
// optional HTTP endpoint /metrics, /healthz, /readyz (server/metrics_http.h).
//
//   absl::StatusOr<std::unique_ptr<AugmentdServer>> server = AugmentdServer::Start(options);
//   if (!server.ok()) { ...print server.status(), exit non-zero... }
//   LogInfo("serving on ", absl::StrJoin((*server)->addresses(), ", "));
//   ... on SIGTERM: (*server)->Drain(options.drain_timeout);
//
// Thread-safety: Start/Drain/Wait from one controlling thread (main).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/options.h"

namespace grpc {
class Server;
}

namespace augmentd {

class AugmentServiceImpl;
class MetricsHttpServer;

class AugmentdServer {
 public:
  // Resolves the device, validates and binds every listen address, starts serving. Errors:
  // INVALID_ARGUMENT / NOT_FOUND for a bad option value (also unreadable TLS / token files, naming the flag),
  // UNAVAILABLE for an address that cannot be bound (busy port, busy socket, missing directory, busy metrics
  // port). Nothing keeps running after an error.
  static absl::StatusOr<std::unique_ptr<AugmentdServer>> Start(const ServerOptions& options);

  ~AugmentdServer();

  // The bound addresses, TCP ports resolved (a requested port 0 shows the port actually chosen).
  const std::vector<std::string>& addresses() const { return addresses_; }
  // The name of the resolved default device ("cpu", "cuda:0").
  const std::string& device_name() const { return device_name_; }
  // "host:port" of the metrics HTTP endpoint (port resolved), or "" when it is off.
  const std::string& metrics_address() const { return metrics_address_; }

  // Graceful drain: health → NOT_SERVING (and /readyz 503), sessions close (their streams finish the batch
  // being written, then send `end`), stop accepting calls, let in-flight calls finish until `timeout`, then
  // cancel what is left. The metrics endpoint stops last. Returns when the server has stopped.
  void Drain(absl::Duration timeout);

 private:
  AugmentdServer() = default;

  std::unique_ptr<AugmentServiceImpl> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<MetricsHttpServer> metrics_;  // stopped in Drain, before the service goes
  std::string metrics_address_;
  std::vector<std::string> addresses_;
  std::string device_name_;
  bool stopped_ = false;
};

}  // namespace augmentd
