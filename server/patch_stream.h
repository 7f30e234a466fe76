// server/patch_stream.h — the StreamPatches reactor: patch mode on one bidirectional stream, with dataset mode's
// delivery (output slots with leases, or inline) and credits.
//
// Protocol (augmentd/v1/batch.proto; StreamPatches reuses StreamBatches' messages):
//   client → start {session_id, initial_credits} (a patch-mode session), then any mix of
//     patches {batch_index, image, segmentation[, input_slot]}: inline tensors, references into registered client
//       regions, or — with input_slot, a lease of this stream — references into that server input slot;
//     credit {n, releases} / release {leases}: as in StreamBatches.
//   server → input_slots {leases} first when the session has input slots (every free one is leased to the stream),
//     then one batch per patches message, in request order, each written only while the client holds a credit;
//     a batch names its output slot lease (HOST_SHM / CUDA_IPC delivery) and hands the request's input slot back
//     (Batch.input_lease, a new generation). Finally end {reason}.
// The server augments up to the session's prefetch_depth requests at once on the executor (never on a gRPC thread),
// each into a free output slot, so the next batch is augmented while the client still uses the last one.
// Errors end the stream with a precise status: INVALID_ARGUMENT (a bad first message, tensors that do not fit their
// slot or the session's layout), FAILED_PRECONDITION naming input_slot (not leased to this stream, released twice,
// stale or another session's lease) or release.leases (an output lease not held: released twice / another stream's
// or session's), NOT_FOUND / FAILED_PRECONDITION for an unknown / closed session, RESOURCE_EXHAUSTED naming
// max_inflight_batches_per_session when the client sends more requests than may wait.
// Concurrency: as server/batch_stream.h (one state under a mutex; StartWrite / Finish outside it).
#pragma once

#include <grpcpp/support/server_callback.h>

#include "augmentd/v1/batch.pb.h"

namespace augmentd {

class AugmentServiceImpl;

// Creates the reactor for one StreamPatches call; it deletes itself in OnDone.
grpc::ServerBidiReactor<v1::StreamBatchesRequest, v1::StreamBatchesResponse>* NewPatchStream(
    AugmentServiceImpl* service);

}  // namespace augmentd
