// Augment: patch mode, one batch per call. Validates the session on the gRPC thread (cheap); the tensors (inline,
// or references into the session's registered host shm / CUDA IPC input regions) are checked and augmented on
// the executor, which finishes the call. The batch is always answered inline (slot delivery is StreamBatches').
#include "server/adapter.h"
#include "server/log.h"
#include "server/request_limits.h"
#include "server/service.h"
#include "server/status.h"

namespace augmentd {

grpc::ServerUnaryReactor* AugmentServiceImpl::Augment(grpc::CallbackServerContext* context,
                                                      const v1::AugmentRequest* request,
                                                      v1::AugmentResponse* response) {
  if (absl::Status auth = Authorize(*context); !auth.ok()) return Reject(context, auth);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  auto fail = [this, reactor](const absl::Status& status) {
    CountRejected();
    reactor->Finish(ToGrpcStatus(status));
    return reactor;
  };
  if (absl::Status s = CheckRequestStrings(*request); !s.ok()) return fail(s);
  absl::StatusOr<std::shared_ptr<Session>> session = OwnedSession(request->session_id(), request->session_token());
  if (!session.ok()) return fail(session.status());
  if ((*session)->dataset_mode()) {
    return fail(absl::FailedPreconditionError(
        absl::StrCat("session ", request->session_id(), " is in dataset mode: use StreamBatches")));
  }
  if (request->has_input_slot()) {
    return fail(absl::FailedPreconditionError(
        "input_slot: server input slots are leased on StreamPatches; Augment takes inline tensors or registered regions"));
  }
  std::shared_ptr<Session> s = *session;
  // Tensor checks and the resolution of shared-memory / CUDA IPC references happen with the augmentation on the
  // executor (Session::AugmentRequestPatches); the answer is always inline.
  // Weighted fair queuing on the session's device pool; RESOURCE_EXHAUSTED naming max_inflight_*_per_session
  // when the session already has too much queued (server/executor.h).
  auto task = [this, reactor, request, response, s](const WorkerInfo& w) {
    const absl::Time start = absl::Now();
    absl::StatusOr<ProducedBatch> batch = s->AugmentRequestPatches(*request);
    if (batch.ok()) {
      metrics_.ObserveBatch(s->id(), w.queued, absl::Microseconds(batch->load_us),
                            absl::Microseconds(batch->compute_us));
      s->RecordProduced(absl::Microseconds(batch->load_us), absl::Microseconds(batch->compute_us));
    }
    absl::StatusOr<v1::Batch> proto = batch.ok() ? s->MakeBatchProto(*batch) : batch.status();
    if (proto.ok()) proto->mutable_timing()->set_queue_us(absl::ToInt64Microseconds(w.queued));
    if (!proto.ok()) {
      LogWarning("session=", s->id(), " batch=", request->batch_index(), " Augment failed: ", proto.status().ToString());
      CountRejected();
      w.release_admission();
      reactor->Finish(ToGrpcStatus(proto.status()));
      return;
    }
    *response->mutable_batch() = *std::move(proto);
    s->RecordDelivered(request->batch_index(), response->ByteSizeLong(), absl::Now() - start);
    CountBatch();
    w.release_admission();  // before Finish: the client's next call may arrive before this task returns
    reactor->Finish(grpc::Status::OK);
  };
  absl::Status admitted = executor_->TrySubmit(BatchTask(*s, request->ByteSizeLong()), std::move(task));
  if (!admitted.ok()) return fail(admitted);
  return reactor;
}

}  // namespace augmentd
