// server/session.h — one training's augmentation session and the registry of open sessions.
//
// A Session holds everything OpenSession fixed (server/session_config.h builds it from the request): the
// engine pipeline, the mode (dataset: a BatchLoader over an nnU-Net preprocessed dataset; patch: the
// expected input layout), batch size, seed, output dtypes, prefetch depth and the device it runs on.
// Batches are a pure function of (config, seed, batch index): sample j of batch b is global sample
// b * batch_size + j, both for the sampler and for the augmentation random streams — so a session resumes
// from any batch index and replaying an index reproduces its bytes.
//
//   ASSIGN_OR_RETURN(std::shared_ptr<Session> s, BuildSession(request, context, registry.NewId()));
//   RETURN_IF_ERROR(registry.Add(s));                       // RESOURCE_EXHAUSTED at max_sessions
//   ASSIGN_OR_RETURN(ProducedBatch b, s->ProduceDatasetBatch(7));
//
// Delivery (server/delivery.h): a HOST_SHM / CUDA_IPC session owns a ring of prefetch_depth output slots
// (slots()); StreamBatches acquires a slot per batch and passes its lease to ProduceDatasetBatch / MakeBatchProto.
// CUDA sessions run the engine through their own CudaWorkers (one CudaAugmenter + stream each, created once and
// reused; server/cuda_ipc_slots.h). Close() unlinks the slots; their memory goes with the last reference.
//
// Thread-safety: a Session is immutable after construction except for its counters (atomics), its close state /
// close listeners (mutex) and its slot ring / worker pool (internally synchronised); Produce*/Augment* may run
// concurrently on executor threads.
// SessionRegistry is internally synchronised.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "augment/dataset/batch_loader.h"
#include "augment/device.h"
#include "augment/engine.h"
#include "augment/pipeline.h"
#include "augmentd/v1/batch.pb.h"
#include "augmentd/v1/server_info.pb.h"
#include "augmentd/v1/session.pb.h"
#include "server/cuda_ipc_slots.h"
#include "server/delivery.h"
#include "server/host_batch_pool.h"
#include "server/input_slots.h"
#include "server/slot_ring.h"

namespace augmentd {

// Everything OpenSession resolved, in engine types.
struct SessionSettings {
  std::string id;
  std::string name;                      // client label (SessionConfig.name)
  PipelineSpec pipeline;                 // preset expanded; input_patch_size set for dataset mode
  uint32_t batch_size = 1;
  uint64_t seed = 0;
  uint32_t prefetch_depth = 2;           // batches produced ahead of the client per stream
  uint64_t start_batch_index = 0;
  DType image_dtype = DType::kFloat32;
  std::optional<DType> label_dtype;      // nullopt: the engine's own (int16, bool for regions)
  DeviceInfo device;                     // where it runs: cpu, or cuda:N when the CUDA engine covers the pipeline
  std::string requested_device;          // what the client asked for ("" = server default)
  int threads_per_batch = 1;             // AugmentBatch RunOptions::num_threads
  // Dataset mode: the loader (sampler + dataset); null in patch mode.
  std::shared_ptr<const dataset::BatchLoader> loader;
  // Patch mode: the layout the client sends.
  std::vector<int64_t> input_patch_size;
  int64_t num_image_channels = 1;
  int64_t num_segmentation_channels = 1;
  DType input_image_dtype = DType::kFloat32;
  DType input_label_dtype = DType::kInt16;
  uint64_t max_batch_bytes = 0;          // estimated size of one inline batch message
  double weight = 1;                     // fair-share weight (SessionConfig.weight; 0 → 1): server/executor.h
  v1::DeliveryKind delivery = v1::DELIVERY_KIND_INLINE;  // INLINE, HOST_SHM or CUDA_IPC (never UNSPECIFIED)
};

// What a session owns beyond its settings (server/delivery.h): the output slot ring (HOST_SHM / CUDA_IPC
// delivery), the client input regions (patch mode) and, on a CUDA device, its CUDA workers.
struct SessionResources {
  std::shared_ptr<SlotRing> slots;          // null for inline delivery
  std::unique_ptr<InputRegions> inputs;     // null when none were registered
  std::unique_ptr<CudaWorkerPool> cuda;     // null on the CPU
  std::shared_ptr<InputSlots> input_slots;  // patch mode: server-owned input slots; null when none
};

// One produced batch, engine side; turned into a v1::Batch by MakeBatchProto.
struct ProducedBatch {
  uint64_t batch_index = 0;
  BatchResult result;
  std::vector<dataset::SamplePlan> plans;  // dataset mode: where each sample came from
  // CUDA_IPC: the kernels wrote into the slot; image / targets hold the slot references (`result` has only the
  // sample records).
  std::optional<v1::Batch> slot_tensors;
  uint64_t load_us = 0;
  uint64_t compute_us = 0;
};

class Session {
 public:
  explicit Session(SessionSettings settings, SessionResources resources = {});

  const std::string& id() const { return settings_.id; }
  const SessionSettings& settings() const { return settings_; }
  bool dataset_mode() const { return settings_.loader != nullptr; }
  // The output slot ring (HOST_SHM / CUDA_IPC delivery); null for inline delivery.
  const std::shared_ptr<SlotRing>& slots() const { return resources_.slots; }
  // Patch mode: the server-owned input slots (server/input_slots.h); null when the session has none.
  const std::shared_ptr<InputSlots>& input_slots() const { return resources_.input_slots; }
  // Patch mode: the client regions registered at OpenSession; null when none.
  const InputRegions* input_regions() const { return resources_.inputs.get(); }

  // Dataset mode: samples, loads and augments batch `batch_index`. FAILED_PRECONDITION in patch mode. With a
  // `lease` of a CUDA_IPC session the kernels write straight into that slot (ProducedBatch::slot_tensors). On a
  // CUDA session whose dataset cache has a GPU tier the crops are cut on the device (no host→device copy for
  // resident cases).
  absl::StatusOr<ProducedBatch> ProduceDatasetBatch(uint64_t batch_index, const v1::SlotLease* lease = nullptr) const;
  // Patch mode: augments B ≤ batch_size client patches as batch `batch_index`. INVALID_ARGUMENT naming
  // `image` / `segmentation` for a layout that is not the session's.
  absl::StatusOr<ProducedBatch> AugmentPatches(uint64_t batch_index, const TensorView& image,
                                               const TensorView& seg) const;
  // Patch mode from request tensors: inline, or references into the session's registered input regions
  // (host shm; CUDA IPC on a CUDA session). INVALID_ARGUMENT naming the field for bad references.
  absl::StatusOr<ProducedBatch> AugmentRequestPatches(const v1::AugmentRequest& request) const;
  // StreamPatches (server/patch_session.cc): augments resolved inputs (inline / registered regions / input slots;
  // host or device) as batch `batch_index`; with an output `lease` the result goes to that slot as in
  // ProduceDatasetBatch (CUDA_IPC: the kernels write it; HOST_SHM: MakeBatchProto copies it once).
  absl::StatusOr<ProducedBatch> AugmentStreamPatches(uint64_t batch_index, const InputTensor& image,
                                                     const InputTensor& seg, const v1::SlotLease* lease) const;
  // The wire form of a produced batch (sample infos, timing, tensors): inline bytes without a lease; with a
  // lease, HOST_SHM: copied into the slot; CUDA_IPC: the slot references; Batch.lease set.
  absl::StatusOr<v1::Batch> MakeBatchProto(const ProducedBatch& batch, const v1::SlotLease* lease = nullptr) const;

  // Close: later calls see closed() and the close listeners run once (outside the session's lock).
  void Close();
  bool closed() const;
  // Runs `listener` on Close (immediately if already closed). Used by streams to end themselves.
  void AddCloseListener(std::function<void()> listener);

  // Counters (GetStats). Delivered = sent to a client.
  void RecordDelivered(uint64_t batch_index, uint64_t bytes, absl::Duration latency);
  // A produced batch's BatchTiming load / compute (SessionStats load_latency / compute_latency).
  void RecordProduced(absl::Duration load, absl::Duration compute);
  v1::SessionStats Stats() const;
  std::atomic<int> active_streams{0};
  std::atomic<uint32_t> queued_batches{0};
  std::atomic<uint32_t> credits{0};

 private:
  // Runs the engine on the session's device (CPU thread pool, or one of the session's CUDA workers).
  absl::Status RunEngine(const BatchInput& input, const RunOptions& options, const v1::SlotLease* lease,
                         ProducedBatch* out) const;
  // ProduceDatasetBatch through the GPU cache tier: crops on the worker's stream, kernels, slot or host out.
  absl::StatusOr<ProducedBatch> ProduceDatasetBatchOnDevice(uint64_t batch_index, const v1::SlotLease* lease) const;
  // Whether a batch produced under `lease` is written by the kernels straight into a CUDA IPC slot.
  bool WritesIntoCudaSlot(const v1::SlotLease* lease) const;
  RunOptions BatchOptions(uint64_t batch_index) const;
  // Patch mode: the session's input layout (dtype, (B ≤ batch_size, C, *input_patch_size)); no data access.
  absl::Status CheckPatches(const TensorView& image, const TensorView& seg) const;

  const SessionSettings settings_;
  const SessionResources resources_;
  // Dataset mode, host path: the loaded (B, C, *patch) batches, reused (null in patch mode).
  const std::unique_ptr<HostBatchPool> input_buffers_;
  const absl::Time opened_ = absl::Now();
  mutable std::mutex mu_;
  bool closed_ = false;                               // guarded by mu_
  std::vector<std::function<void()>> close_listeners_;  // guarded by mu_
  uint64_t batches_ = 0, bytes_ = 0;                  // guarded by mu_
  uint64_t next_batch_index_ = 0;                     // guarded by mu_
  std::deque<double> latencies_us_;                   // guarded by mu_; the last 1024
  std::deque<double> load_us_, compute_us_;           // guarded by mu_; the last 1024
};

// The open sessions. Ids are "s<counter>-<random hex>" (not guessable from another session's id).
class SessionRegistry {
 public:
  explicit SessionRegistry(uint32_t max_sessions) : max_sessions_(max_sessions) {}

  std::string NewId();
  // RESOURCE_EXHAUSTED naming max_sessions when full.
  absl::Status Add(std::shared_ptr<Session> session);
  // NOT_FOUND for an unknown id, FAILED_PRECONDITION for a closed one; INVALID_ARGUMENT for an empty id.
  absl::StatusOr<std::shared_ptr<Session>> Get(const std::string& id) const;
  // Removes and closes the session (same errors as Get).
  absl::StatusOr<std::shared_ptr<Session>> Close(const std::string& id);
  // Closes every session (drain).
  void CloseAll();
  std::vector<std::shared_ptr<Session>> List() const;
  uint64_t sessions_opened() const;

 private:
  const uint32_t max_sessions_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<Session>> sessions_;  // guarded by mu_
  std::set<std::string> closed_ids_;                           // guarded by mu_ (bounded)
  std::deque<std::string> closed_order_;                       // guarded by mu_
  uint64_t counter_ = 0;                                       // guarded by mu_
  uint64_t opened_ = 0;                                        // guarded by mu_
};

}  // namespace augmentd
