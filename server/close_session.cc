// CloseSession: removes the session (later calls: FAILED_PRECONDITION), ends its streams, returns its stats.
#include "server/log.h"
#include "server/service.h"
#include "server/status.h"

namespace augmentd {

grpc::ServerUnaryReactor* AugmentServiceImpl::CloseSession(grpc::CallbackServerContext* context,
                                                           const v1::CloseSessionRequest* request,
                                                           v1::CloseSessionResponse* response) {
  if (absl::Status auth = Authorize(*context); !auth.ok()) return Reject(context, auth);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  absl::StatusOr<std::shared_ptr<Session>> session = registry_.Close(request->session_id());
  if (!session.ok()) {
    CountRejected();
    reactor->Finish(ToGrpcStatus(session.status()));
    return reactor;
  }
  *response->mutable_final_stats() = (*session)->Stats();
  LogInfo("session=", request->session_id(), " closed after ", response->final_stats().batches_produced(),
          " batches");
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace augmentd
