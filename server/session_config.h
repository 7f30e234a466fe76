// server/session_config.h — OpenSession's validation and the construction of a Session from a request.
//
//   ASSIGN_OR_RETURN(std::shared_ptr<Session> s,
//                    BuildSession(request, options, default_device, registry.NewId(), threads_per_batch));
//
// Every field is checked with a precise status: INVALID_ARGUMENT naming the field ("config.batch_size:
// ..."), RESOURCE_EXHAUSTED naming the server limit (max_batch_size, max_prefetch_depth,
// max_response_bytes), FAILED_PRECONDITION when dataset mode is off (no --dataset_root), PERMISSION_DENIED /
// INVALID_ARGUMENT / NOT_FOUND from the dataset layer for a path outside the roots or a missing dataset,
// UNIMPLEMENTED for parts of the contract not served yet (explicit transform lists, the DA5 preset).
// Dataset mode echoes (config.dataset.echo_factor, ≤ 1024; batch_loader.h) and reads through the case cache
// shared by the sessions of one dataset folder when --dataset_host_cache / --dataset_gpu_cache are set.
//
// Delivery (server/delivery.h): UNSPECIFIED and INLINE → inline bytes. HOST_SHM (any device) and CUDA_IPC (CUDA
// sessions only; otherwise INVALID_ARGUMENT naming config.delivery — no silent fallback) apply to dataset mode
// (StreamBatches); patch mode answers inline (INVALID_ARGUMENT naming config.delivery). The session gets
// prefetch_depth output slots sized for one batch; their memory is checked against max_session_memory_bytes and
// the server-wide `budget` (RESOURCE_EXHAUSTED naming the limit). Client input regions (patch mode) need
// --allow_client_shm (PERMISSION_DENIED naming it otherwise) and are opened and size-checked here.
//
// Dataset mode: `dataset_path` is either the dataset folder (holding dataset.json; plans nnUNetPlans,
// configuration 3d_fullres) or a configuration data folder (<dataset>/<plans>_<configuration>, e.g.
// .../Dataset001_X/nnUNetPlans_3d_fullres). With a preset and an empty trainer.patch_size, the trainer
// configuration is taken from the dataset like nnUNetTrainer does: plans patch size, deep-supervision
// scales from the strides, input channels, use_mask_for_norm, regions and ignore label from dataset.json.
//
// Device: a CUDA device (asked for, or the server default) runs the session on the CUDA engine through per-session
// CudaWorkers (server/cuda_ipc_slots.h) when the fused kernels cover the pipeline; otherwise the CPU engine runs
// it, the log says why and the response names the CPU.
// Blocking (reads the plans / dataset.json): call on an executor thread, not a gRPC thread.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "augment/device.h"
#include "augmentd/v1/session.pb.h"
#include "server/options.h"
#include "server/session.h"
#include "server/slot_ring.h"

namespace augmentd {

absl::StatusOr<std::shared_ptr<Session>> BuildSession(const v1::OpenSessionRequest& request,
                                                      const ServerOptions& options, const DeviceInfo& default_device,
                                                      const std::string& id, int threads_per_batch,
                                                      std::shared_ptr<MemoryBudget> budget = nullptr);

// Dataset mode: the case cache's counters (server_info.proto DatasetCacheStats) into `out->dataset_cache`;
// nothing without a cache. For Session::Stats / the metrics endpoint.
void FillDatasetCacheStats(const SessionSettings& settings, v1::SessionStats* out);

// The OpenSessionResponse for a built session.
v1::OpenSessionResponse MakeOpenSessionResponse(const Session& session);

}  // namespace augmentd
