// StreamPatches: patch mode on a bidirectional stream (the reactor is in server/patch_stream.cc). An unauthorized
// call (server/auth.h) is finished at once with UNAUTHENTICATED by a reactor that reads nothing.
#include "server/patch_stream.h"
#include "server/service.h"
#include "server/status.h"

namespace augmentd {
namespace {

class RejectedPatchStream final
    : public grpc::ServerBidiReactor<v1::StreamBatchesRequest, v1::StreamBatchesResponse> {
 public:
  explicit RejectedPatchStream(const absl::Status& status) { Finish(ToGrpcStatus(status)); }
  void OnDone() override { delete this; }
};

}  // namespace

grpc::ServerBidiReactor<v1::StreamBatchesRequest, v1::StreamBatchesResponse>* AugmentServiceImpl::StreamPatches(
    grpc::CallbackServerContext* context) {
  if (absl::Status auth = Authorize(*context); !auth.ok()) {
    CountRejected();
    return new RejectedPatchStream(auth);
  }
  return NewPatchStream(this);
}

}  // namespace augmentd
