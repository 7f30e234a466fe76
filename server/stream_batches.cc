// StreamBatches: the bidirectional batch stream (the reactor is in server/batch_stream.cc).
#include "server/batch_stream.h"
#include "server/service.h"

namespace augmentd {

grpc::ServerBidiReactor<v1::StreamBatchesRequest, v1::StreamBatchesResponse>* AugmentServiceImpl::StreamBatches(
    grpc::CallbackServerContext* /*context*/) {
  return NewBatchStream(this);
}

}  // namespace augmentd
