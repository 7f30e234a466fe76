#include "server/server.h"

#include <google/protobuf/descriptor.h>
#include <grpc/grpc.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <string>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "augment/device.h"
#include "augmentd/v1/service.pb.h"
#include "server/auth.h"
#include "server/listen_address.h"
#include "server/metrics_http.h"
#include "server/service.h"
#include "server/tls.h"

namespace augmentd {
namespace {

constexpr char kServiceName[] = "augmentd.v1.AugmentService";
// Drain: how long NOT_SERVING is announced with the listeners still open (at most half the drain timeout).
constexpr absl::Duration kDrainAnnounce = absl::Milliseconds(500);

int ClampToInt(uint64_t bytes) { return static_cast<int>(std::min<uint64_t>(bytes, INT_MAX)); }

// Server reflection answers from the generated descriptor pool. service.proto declares no message the server
// touches, so without this reference the linker drops service.pb.o from the static proto library and
// reflection cannot find augmentd.v1.AugmentService ("Symbol not found").
absl::Status CheckServiceDescriptorLinked() {
  static const void* volatile keep_linked = &descriptor_table_augmentd_2fv1_2fservice_2eproto;
  (void)keep_linked;
  if (google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(kServiceName) == nullptr) {
    return absl::InternalError(absl::StrCat(kServiceName, " is missing from the generated descriptor pool"));
  }
  return absl::OkStatus();
}

// Device pools: the CPU (--batch_workers) and every visible GPU (--gpu_workers each).
ExecutorOptions MakeExecutorOptions(const ServerOptions& options) {
  ExecutorOptions out;
  const int hw = std::max(1u, std::thread::hardware_concurrency());
  out.pools = {DevicePool{"cpu", -1, options.batch_workers > 0 ? options.batch_workers : std::min(hw, 8)}};
  for (const DeviceInfo& d : ListDevices()) {
    if (d.kind == DeviceKind::kCuda) out.pools.push_back(DevicePool{d.name, d.index, std::max(1, options.gpu_workers)});
  }
  out.max_inflight_batches_per_session = options.limits.max_inflight_batches_per_session;
  out.max_inflight_bytes_per_session = options.limits.max_inflight_bytes_per_session;
  return out;
}

}  // namespace

AugmentdServer::~AugmentdServer() {
  if (!stopped_) Drain(absl::ZeroDuration());
}

absl::StatusOr<std::unique_ptr<AugmentdServer>> AugmentdServer::Start(const ServerOptions& options) {
  if (options.listen.empty()) return absl::InvalidArgumentError("no listen address given");
  std::vector<ListenAddress> addresses;
  for (const std::string& text : options.listen) {
    absl::StatusOr<ListenAddress> address = ParseListenAddress(text);
    if (!address.ok()) return address.status();
    if (absl::Status free = CheckUnixSocketFree(*address); !free.ok()) return free;
    addresses.push_back(*std::move(address));
  }
  absl::StatusOr<DeviceInfo> device = ResolveDevice(options.device);
  if (!device.ok()) return device.status();

  ServiceContext context;
  context.options = options;
  context.default_device = *device;
  context.cuda_built = AUGMENTD_CUDA_BUILT != 0;  // 0 or 1, set by server/CMakeLists.txt
  context.executor = MakeExecutorOptions(options);
  // CPU batches split the machine's threads between the CPU workers.
  const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  context.threads_per_batch = std::max(1, hw / context.executor.pools[0].workers);
  if (!options.auth_token_file.empty()) {
    absl::StatusOr<TokenAuthenticator> auth = TokenAuthenticator::FromFile(options.auth_token_file);
    if (!auth.ok()) return auth.status();
    context.auth = std::make_shared<const TokenAuthenticator>(*std::move(auth));
  }
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> tcp_credentials =
      MakeTcpCredentials(TlsOptions{options.tls_cert_file, options.tls_key_file, options.tls_client_ca_file});
  if (!tcp_credentials.ok()) return tcp_credentials.status();

  std::unique_ptr<AugmentdServer> self(new AugmentdServer());
  self->device_name_ = device->name;
  self->service_ = std::make_unique<AugmentServiceImpl>(std::move(context));

  if (absl::Status linked = CheckServiceDescriptorLinked(); !linked.ok()) return linked;
  grpc::EnableDefaultHealthCheckService(true);
  if (options.enable_reflection) grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  // Without this, Linux's SO_REUSEPORT lets a second server silently share a busy port.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(ClampToInt(options.limits.max_request_bytes));
  builder.SetMaxSendMessageSize(ClampToInt(options.limits.max_response_bytes));
  // Experiments: AUGMENTD_GRPC_SERVER_ARGS="name=int,name=int" adds integer channel arguments (gRPC core names).
  if (const char* extra = std::getenv("AUGMENTD_GRPC_SERVER_ARGS"); extra != nullptr && *extra != '\0') {
    for (absl::string_view item : absl::StrSplit(extra, ',', absl::SkipEmpty())) {
      std::pair<std::string, std::string> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
      int value = 0;
      if (absl::SimpleAtoi(kv.second, &value)) builder.AddChannelArgument(kv.first, value);
    }
  }
  std::vector<int> selected_ports(addresses.size(), 0);
  for (size_t i = 0; i < addresses.size(); ++i) {
    builder.AddListeningPort(addresses[i].uri,
                             addresses[i].is_unix ? grpc::InsecureServerCredentials() : *tcp_credentials,
                             &selected_ports[i]);
  }
  builder.RegisterService(self->service_.get());
  self->server_ = builder.BuildAndStart();
  if (self->server_ == nullptr) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", absl::StrJoin(options.listen, ", "),
                                               ": address already in use, not permitted, or not resolvable"));
  }
  for (size_t i = 0; i < addresses.size(); ++i) {
    if (selected_ports[i] == 0) {
      self->server_->Shutdown();
      self->server_->Wait();
      self->stopped_ = true;
      return absl::UnavailableError(absl::StrCat("cannot listen on ", addresses[i].uri,
                                                 ": address already in use, not permitted, or not resolvable"));
    }
    self->addresses_.push_back(addresses[i].is_unix ? addresses[i].uri
                                                    : absl::StrCat(addresses[i].host, ":", selected_ports[i]));
  }
  grpc::HealthCheckServiceInterface* health = self->server_->GetHealthCheckService();
  if (health != nullptr) {
    health->SetServingStatus(true);
    health->SetServingStatus(kServiceName, true);
  }
  if (!options.metrics_address.empty()) {
    AugmentServiceImpl* service = self->service_.get();
    absl::StatusOr<std::unique_ptr<MetricsHttpServer>> metrics = MetricsHttpServer::Start(
        options.metrics_address, [service] { return RenderMetrics(*service, service->serving()); },
        [service] { return service->serving(); });
    if (!metrics.ok()) {
      self->Drain(absl::ZeroDuration());
      return metrics.status();
    }
    self->metrics_ = *std::move(metrics);
    self->metrics_address_ = self->metrics_->address();
  }
  return self;
}

void AugmentdServer::Drain(absl::Duration timeout) {
  if (stopped_ || server_ == nullptr) return;
  stopped_ = true;
  service_->StopServing();  // before the health change: /readyz never says ready after NOT_SERVING
  if (grpc::HealthCheckServiceInterface* health = server_->GetHealthCheckService(); health != nullptr) {
    health->SetServingStatus(false);
  }
  // Listeners stay open for a moment so that clients (load balancers, grpc.health watchers) see NOT_SERVING
  // and new OpenSession calls get UNAVAILABLE naming the drain, instead of "connection refused"; in-flight
  // calls and streams keep running meanwhile. Then sessions close (streams end with StreamEnd) and the
  // listeners go, with what is left of the timeout for calls to finish.
  const absl::Time deadline = absl::Now() + std::max(timeout, absl::ZeroDuration());
  absl::SleepFor(std::min(kDrainAnnounce, std::max(timeout, absl::ZeroDuration()) / 2));
  service_->Shutdown();  // sessions close: their streams send StreamEnd and finish
  server_->Shutdown(absl::ToChronoTime(deadline));
  server_->Wait();
  if (metrics_ != nullptr) metrics_->Stop();
}

}  // namespace augmentd
