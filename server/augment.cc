// Augment: patch mode, one batch per call. Validates the session and the inline tensors on the gRPC thread
// (cheap), augments on the executor, and finishes the call from there.
#include "server/adapter.h"
#include "server/log.h"
#include "server/service.h"
#include "server/status.h"

namespace augmentd {

grpc::ServerUnaryReactor* AugmentServiceImpl::Augment(grpc::CallbackServerContext* context,
                                                      const v1::AugmentRequest* request,
                                                      v1::AugmentResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  auto fail = [this, reactor](const absl::Status& status) {
    CountRejected();
    reactor->Finish(ToGrpcStatus(status));
    return reactor;
  };
  absl::StatusOr<std::shared_ptr<Session>> session = registry_.Get(request->session_id());
  if (!session.ok()) return fail(session.status());
  if ((*session)->dataset_mode()) {
    return fail(absl::FailedPreconditionError(
        absl::StrCat("session ", request->session_id(), " is in dataset mode: use StreamBatches")));
  }
  absl::StatusOr<TensorView> image = TensorViewFromProto(request->image(), "image");
  if (!image.ok()) return fail(image.status());
  absl::StatusOr<TensorView> seg = TensorViewFromProto(request->segmentation(), "segmentation");
  if (!seg.ok()) return fail(seg.status());
  std::shared_ptr<Session> s = *session;
  executor_->Submit(s->id(), [this, reactor, request, response, s, image = *image, seg = *seg] {
    const absl::Time start = absl::Now();
    absl::StatusOr<ProducedBatch> batch = s->AugmentPatches(request->batch_index(), image, seg);
    absl::StatusOr<v1::Batch> proto = batch.ok() ? s->MakeBatchProto(*batch) : batch.status();
    if (!proto.ok()) {
      LogWarning("session=", s->id(), " batch=", request->batch_index(), " Augment failed: ", proto.status().ToString());
      CountRejected();
      reactor->Finish(ToGrpcStatus(proto.status()));
      return;
    }
    *response->mutable_batch() = *std::move(proto);
    s->RecordDelivered(request->batch_index(), response->ByteSizeLong(), absl::Now() - start);
    CountBatch();
    reactor->Finish(grpc::Status::OK);
  });
  return reactor;
}

}  // namespace augmentd
