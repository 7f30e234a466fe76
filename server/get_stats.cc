// GetStats: server counters and per-session counters (one session, or all when session_id is empty).
#include "augment/device.h"
#include "server/adapter.h"
#include "server/service.h"
#include "server/status.h"

namespace augmentd {

grpc::ServerUnaryReactor* AugmentServiceImpl::GetStats(grpc::CallbackServerContext* context,
                                                       const v1::GetStatsRequest* request,
                                                       v1::GetStatsResponse* response) {
  if (absl::Status auth = Authorize(*context); !auth.ok()) return Reject(context, auth);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  std::vector<std::shared_ptr<Session>> sessions = registry_.List();
  if (!request->session_id().empty()) {
    absl::StatusOr<std::shared_ptr<Session>> s = registry_.Get(request->session_id());
    if (!s.ok()) {
      CountRejected();
      reactor->Finish(ToGrpcStatus(s.status()));
      return reactor;
    }
    sessions = {*s};
  }
  v1::ServerStats* server = response->mutable_server();
  server->set_uptime_seconds(static_cast<uint64_t>(absl::ToInt64Seconds(absl::Now() - context_.start_time)));
  server->set_active_sessions(static_cast<uint32_t>(registry_.List().size()));
  server->set_sessions_opened(registry_.sessions_opened());
  server->set_batches_produced(batches_.load());
  server->set_requests_rejected(rejected_.load());
  for (const DeviceInfo& device : ListDevices()) *server->add_devices() = ToProto(device);
  for (const std::shared_ptr<Session>& s : sessions) *response->add_sessions() = s->Stats();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace augmentd
