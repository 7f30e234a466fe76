// server/status.h — the single conversion from the engine's and server's error currency (absl::Status) to
// gRPC's. The canonical codes of both are google.rpc.Code, so the numeric values line up one to one.
#pragma once

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace augmentd {

// Maps code and message unchanged (OK → grpc::Status::OK). Unknown codes become UNKNOWN.
grpc::Status ToGrpcStatus(const absl::Status& status);

// The inverse, for clients and tests.
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace augmentd
