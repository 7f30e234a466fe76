// server/metrics_http.h — the operations HTTP endpoint (HTTP/1.1) beside the gRPC listeners:
//   GET /metrics  Prometheus text exposition format 0.0.4 (server/metrics.h)
//   GET /healthz  200 "ok" while the process serves HTTP (liveness)
//   GET /readyz   200 "ready" while the gRPC health status is SERVING, 503 "draining" otherwise (readiness)
// Plain HTTP and unauthenticated (bind it to a private interface; it exposes counters, session ids and names,
// never batch data). Addresses: "PORT" (every interface, 0.0.0.0), "HOST:PORT", "[V6]:PORT"; port 0 picks a
// free port (address() reports it).
//
//   ASSIGN_OR_RETURN(auto http, MetricsHttpServer::Start("127.0.0.1:9102", render, ready));
//   ... http->Stop();   // also in the destructor
//
// Our own poll(2) loop on one thread (metrics_http.cc; it replaced cpp-httplib, whose thread-per-connection
// pool of 2 let two idle TCP connections block every probe, and which answered only the first of pipelined
// requests and nothing after a half-close): idle and slow-drip connections cost a poll slot, not a thread;
// pipelined requests are answered in order; a half-closed connection gets its answers before the close.
//
// Thread-safety: `render` and `ready` are called on the HTTP server's thread, concurrently with the
// gRPC server; Start/Stop from the controlling thread.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

namespace augmentd {

struct HttpAddress {
  std::string host;  // "0.0.0.0", "127.0.0.1", "::1"
  int port = 0;
};

// Parses "PORT", "HOST:PORT" or "[V6]:PORT". INVALID_ARGUMENT naming --metrics_port for anything else.
absl::StatusOr<HttpAddress> ParseHttpAddress(const std::string& text);

class MetricsHttpServer {
 public:
  static absl::StatusOr<std::unique_ptr<MetricsHttpServer>> Start(const std::string& address,
                                                                   std::function<std::string()> render,
                                                                   std::function<bool()> ready);
  ~MetricsHttpServer();

  // "host:port" with the port actually bound.
  const std::string& address() const { return address_; }
  void Stop();

 private:
  class Loop;
  MetricsHttpServer() = default;
  std::unique_ptr<Loop> loop_;
  std::thread thread_;
  std::string address_;
};

}  // namespace augmentd
