// server/batch_stream.h — the StreamBatches reactor: one bidirectional stream delivering a dataset-mode
// session's batches under credit-based flow control.
//
// Protocol (augmentd/v1/batch.proto):
//   client → start {session_id, start_batch_index, initial_credits, max_batches}, then credit {n, releases} /
//     release (credits accumulate; beyond 2^32 outstanding they are capped — no client can use that many;
//     a credit's releases are handled exactly like a Release message, so one message per batch suffices)
//   server → batch (in batch-index order, one per credit; timing.sent_unix_ns stamped when its write starts),
//     finally end {next_batch_index, reason}
// start_batch_index 0 means "where the session stands" (OpenSession.start_batch_index, advanced by the
// batches delivered so far); any other value resumes there.
// The server produces up to the session's prefetch_depth batches ahead on the executor (never on a gRPC
// thread) and writes one only when the client holds a credit, so batches in flight to the client never
// exceed its credits. When the client half-closes, the credited batches are still delivered, then `end`.
// The stream ends with `end` and OK when max_batches were sent, the client half-closed with no credit left,
// or the session was closed; with an error status for a bad first message (INVALID_ARGUMENT), an unknown /
// closed session (NOT_FOUND / FAILED_PRECONDITION), too many streams on the session (RESOURCE_EXHAUSTED
// naming max_streams_per_session), patch mode (UNIMPLEMENTED: use Augment) or a failed batch.
//
// Concurrency: gRPC reactions and executor completions share one StreamState under its mutex. StartWrite and
// Finish are called outside the lock; the `writing` / `finished` flags guarantee one write at a time and
// that Finish (after which the reactor may be deleted) is never followed by another call on the reactor.
#pragma once

#include <grpcpp/support/server_callback.h>

#include "augmentd/v1/batch.pb.h"

namespace augmentd {

class AugmentServiceImpl;

// Creates the reactor for one StreamBatches call; it deletes itself in OnDone.
grpc::ServerBidiReactor<v1::StreamBatchesRequest, v1::StreamBatchesResponse>* NewBatchStream(
    AugmentServiceImpl* service);

}  // namespace augmentd
