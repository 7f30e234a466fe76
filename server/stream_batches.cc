// StreamBatches: the bidirectional batch stream (the reactor is in server/batch_stream.cc). An unauthorized
// call (server/auth.h) is finished at once with UNAUTHENTICATED by a reactor that reads nothing.
#include "server/batch_stream.h"
#include "server/service.h"
#include "server/status.h"

namespace augmentd {
namespace {

class RejectedStream final : public grpc::ServerBidiReactor<v1::StreamBatchesRequest, v1::StreamBatchesResponse> {
 public:
  explicit RejectedStream(const absl::Status& status) { Finish(ToGrpcStatus(status)); }
  void OnDone() override { delete this; }
};

}  // namespace

grpc::ServerBidiReactor<v1::StreamBatchesRequest, v1::StreamBatchesResponse>* AugmentServiceImpl::StreamBatches(
    grpc::CallbackServerContext* context) {
  if (absl::Status auth = Authorize(*context); !auth.ok()) {
    CountRejected();
    return new RejectedStream(auth);
  }
  return NewBatchStream(this);
}

}  // namespace augmentd
