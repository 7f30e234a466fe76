// OpenSession: validates the request and builds the session on the executor (opening a dataset reads its
// plans and dataset.json), then registers it. Statuses: server/session_config.h.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/log.h"
#include "server/request_limits.h"
#include "server/service.h"
#include "server/session_config.h"
#include "server/status.h"

namespace augmentd {

grpc::ServerUnaryReactor* AugmentServiceImpl::OpenSession(grpc::CallbackServerContext* context,
                                                          const v1::OpenSessionRequest* request,
                                                          v1::OpenSessionResponse* response) {
  if (absl::Status auth = Authorize(*context); !auth.ok()) return Reject(context, auth);
  if (absl::Status s = CheckRequestStrings(*request); !s.ok()) return Reject(context, s);
  if (!serving()) {
    return Reject(context, absl::UnavailableError("the server is draining (shutting down): it opens no new sessions; "
                                                  "open the session on another server or after the restart"));
  }
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  // request/response stay valid until Finish; the task finishes the call.
  executor_->Submit("open", [this, reactor, request, response] {
    const std::string id = registry_.NewId();
    absl::StatusOr<std::shared_ptr<Session>> session =
        BuildSession(*request, context_.options, context_.default_device, id, context_.threads_per_batch,
                     memory_budget_);
    absl::Status status = session.status();
    if (status.ok()) status = registry_.Add(*session);
    if (!status.ok()) {
      session = status;  // a session built but not added gives its memory back before the refusal is answered
      CountRejected();
      LogWarning("OpenSession rejected: ", status.ToString());
      reactor->Finish(ToGrpcStatus(status));
      return;
    }
    *response = MakeOpenSessionResponse(**session);
    response->set_session_token(leases_.Issue(id));
    const SessionSettings& s = (*session)->settings();
    LogInfo("session=", id, " opened: name='", s.name, "' mode=", (*session)->dataset_mode() ? "dataset" : "patch",
            " pipeline=", s.pipeline.name, " transforms=", s.pipeline.transforms.size(), " batch_size=", s.batch_size,
            " input_patch=[", absl::StrJoin(s.input_patch_size, ","), "] seed=", s.seed,
            " start_batch=", s.start_batch_index, " prefetch=", s.prefetch_depth, " device=", s.device.name,
            " delivery=", v1::DeliveryKind_Name(s.delivery),
            (*session)->slots() != nullptr ? absl::StrCat(" slots=", (*session)->slots()->size(), "x",
                                                          (*session)->slots()->total_bytes() / (*session)->slots()->size(),
                                                          "B") : "",
            s.requested_device.empty() ? "" : " (requested " + s.requested_device + ")");
    reactor->Finish(grpc::Status::OK);
  });
  return reactor;
}

}  // namespace augmentd
