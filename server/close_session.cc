// CloseSession: removes the session (later calls: FAILED_PRECONDITION), ends its streams, returns its stats.
#include "server/log.h"
#include "server/request_limits.h"
#include "server/service.h"
#include "server/status.h"

namespace augmentd {

grpc::ServerUnaryReactor* AugmentServiceImpl::CloseSession(grpc::CallbackServerContext* context,
                                                           const v1::CloseSessionRequest* request,
                                                           v1::CloseSessionResponse* response) {
  if (absl::Status auth = Authorize(*context); !auth.ok()) return Reject(context, auth);
  if (absl::Status s = CheckRequestStrings(*request); !s.ok()) return Reject(context, s);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  absl::StatusOr<std::shared_ptr<Session>> session = OwnedSession(request->session_id(), request->session_token());
  if (session.ok()) session = registry_.Close(request->session_id());
  if (session.ok()) leases_.Forget(request->session_id());
  if (!session.ok()) {
    CountRejected();
    reactor->Finish(ToGrpcStatus(session.status()));
    return reactor;
  }
  *response->mutable_final_stats() = (*session)->Stats();
  LogInfo("session=", request->session_id(), " closed after ", response->final_stats().batches_produced(),
          " batches");
  // Drop this call's reference before answering: when it is the last one (no task or stream still holds the
  // session), its memory is back in the server's budget by the time the client can open the next session.
  session = absl::CancelledError("closed");
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace augmentd
