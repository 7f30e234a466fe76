#include "server/metrics_http.h"

#include <httplib.h>

#include <chrono>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace augmentd {

absl::StatusOr<HttpAddress> ParseHttpAddress(const std::string& text) {
  HttpAddress out;
  std::string port_text = text;
  out.host = "0.0.0.0";
  if (const size_t colon = text.rfind(':'); colon != std::string::npos) {
    std::string host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    if (host.empty()) return absl::InvalidArgumentError(absl::StrCat("--metrics_port: '", text, "' has no host"));
    out.host = host;
  }
  if (!absl::SimpleAtoi(port_text, &out.port) || out.port < 0 || out.port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("--metrics_port: '", text, "' is not PORT or HOST:PORT with a port in 0..65535"));
  }
  return out;
}

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(const std::string& address,
                                                                             std::function<std::string()> render,
                                                                             std::function<bool()> ready) {
  absl::StatusOr<HttpAddress> parsed = ParseHttpAddress(address);
  if (!parsed.ok()) return parsed.status();
  std::unique_ptr<MetricsHttpServer> self(new MetricsHttpServer());
  self->server_ = std::make_unique<httplib::Server>();
  httplib::Server& http = *self->server_;
  http.new_task_queue = [] { return new httplib::ThreadPool(2); };
  http.Get("/metrics", [render](const httplib::Request&, httplib::Response& res) {
    res.set_content(render(), "text/plain; version=0.0.4; charset=utf-8");
  });
  http.Get("/healthz", [](const httplib::Request&, httplib::Response& res) { res.set_content("ok\n", "text/plain"); });
  http.Get("/readyz", [ready](const httplib::Request&, httplib::Response& res) {
    const bool ok = ready();
    res.status = ok ? 200 : 503;
    res.set_content(ok ? "ready\n" : "draining\n", "text/plain");
  });
  int port = parsed->port;
  if (port == 0) {
    port = http.bind_to_any_port(parsed->host);
  } else if (!http.bind_to_port(parsed->host, port)) {
    port = -1;
  }
  if (port <= 0) {
    return absl::UnavailableError(absl::StrCat("--metrics_port: cannot listen on ", address,
                                               ": address already in use, not permitted, or not resolvable"));
  }
  const bool v6 = parsed->host.find(':') != std::string::npos;
  self->address_ = v6 ? absl::StrCat("[", parsed->host, "]:", port) : absl::StrCat(parsed->host, ":", port);
  self->thread_ = std::thread([&http] { http.listen_after_bind(); });
  return self;
}

MetricsHttpServer::~MetricsHttpServer() { Stop(); }

void MetricsHttpServer::Stop() {
  if (server_ != nullptr && thread_.joinable()) {
    // stop() only interrupts a running accept loop: give a just-started thread time to enter it.
    for (int i = 0; i < 200 && !server_->is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    server_->stop();
  }
  if (thread_.joinable()) thread_.join();
}

}  // namespace augmentd
