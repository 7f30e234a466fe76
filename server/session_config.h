// server/session_config.h — OpenSession's validation and the construction of a Session from a request.
//
//   ASSIGN_OR_RETURN(std::shared_ptr<Session> s,
//                    BuildSession(request, options, default_device, registry.NewId(), threads_per_batch));
//
// Every field is checked with a precise status: INVALID_ARGUMENT naming the field ("config.batch_size:
// ..."), RESOURCE_EXHAUSTED naming the server limit (max_batch_size, max_prefetch_depth,
// max_response_bytes), FAILED_PRECONDITION when dataset mode is off (no --dataset_root), PERMISSION_DENIED /
// INVALID_ARGUMENT / NOT_FOUND from the dataset layer for a path outside the roots or a missing dataset,
// UNIMPLEMENTED for parts of the contract not served yet (shared-memory / CUDA IPC delivery and inputs,
// echo_factor > 1, explicit transform lists, the DA5 preset).
//
// Dataset mode: `dataset_path` is either the dataset folder (holding dataset.json; plans nnUNetPlans,
// configuration 3d_fullres) or a configuration data folder (<dataset>/<plans>_<configuration>, e.g.
// .../Dataset001_X/nnUNetPlans_3d_fullres). With a preset and an empty trainer.patch_size, the trainer
// configuration is taken from the dataset like nnUNetTrainer does: plans patch size, deep-supervision
// scales from the strides, input channels, use_mask_for_norm, regions and ignore label from dataset.json.
//
// Device: the session runs on the CPU engine. A CUDA device (asked for, or the server default) is
// accepted and logged, and the response names the CPU: the CUDA engine is not wired into sessions yet.
// Blocking (reads the plans / dataset.json): call on an executor thread, not a gRPC thread.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "augment/device.h"
#include "augmentd/v1/session.pb.h"
#include "server/options.h"
#include "server/session.h"

namespace augmentd {

absl::StatusOr<std::shared_ptr<Session>> BuildSession(const v1::OpenSessionRequest& request,
                                                      const ServerOptions& options, const DeviceInfo& default_device,
                                                      const std::string& id, int threads_per_batch);

// The OpenSessionResponse for a built session.
v1::OpenSessionResponse MakeOpenSessionResponse(const Session& session);

}  // namespace augmentd
