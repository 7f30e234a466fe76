// Session::AugmentStreamPatches: patch mode under StreamPatches, where the output goes to the session's slot
// delivery (CUDA IPC / host shm / inline) exactly as in dataset mode, and the input may sit in a server input slot.
#include "absl/strings/str_cat.h"
#include "server/session.h"

namespace augmentd {
namespace {

uint64_t MicrosSince(absl::Time start) { return static_cast<uint64_t>(absl::ToInt64Microseconds(absl::Now() - start)); }

}  // namespace

absl::StatusOr<ProducedBatch> Session::AugmentStreamPatches(uint64_t batch_index, const InputTensor& image,
                                                            const InputTensor& seg, const v1::SlotLease* lease) const {
  if (absl::Status s = CheckPatches(image.view, seg.view); !s.ok()) return s;
  ProducedBatch out;
  out.batch_index = batch_index;
  const absl::Time start = absl::Now();
  if (!image.on_device && !seg.on_device) {
    // Host inputs (inline bytes viewed in the request, a host shm input slot or a registered region): the CPU engine
    // reads them in place; a CUDA worker stages them once, on several threads (into the slot with CUDA_IPC delivery).
    const BatchInput input{image.view, seg.view};
    if (resources_.cuda != nullptr && lease != nullptr && resources_.slots != nullptr &&
        resources_.slots->kind() == v1::DELIVERY_KIND_HOST_SHM) {
      // A pinned host-shm output slot (a CUDA session's slots are page-locked at OpenSession): the device writes
      // the batch straight into it, its inputs come straight from a pinned input slot.
      absl::StatusOr<CudaWorkerPool::Lease> worker = resources_.cuda->Acquire();
      if (!worker.ok()) return worker.status();
      v1::Batch tensors;
      absl::StatusOr<bool> done =
          (*worker)->RunHostIntoHostSlot(input, BatchOptions(batch_index), settings_.label_dtype,
                                         resources_.slots->buffer(lease->slot()), SlotRegionName(lease->slot()),
                                         &tensors, &out.result.samples);
      if (!done.ok()) return done.status();
      if (*done) {
        out.slot_tensors = std::move(tensors);
        out.compute_us = MicrosSince(start);
        return out;
      }
    }
    if (resources_.cuda != nullptr && !WritesIntoCudaSlot(lease)) {
      absl::StatusOr<CudaWorkerPool::Lease> worker = resources_.cuda->Acquire();
      if (!worker.ok()) return worker.status();
      absl::StatusOr<BatchResult> result = (*worker)->RunHostStaged(input, BatchOptions(batch_index));
      if (!result.ok()) return result.status();
      out.result = *std::move(result);
    } else if (absl::Status s = RunEngine(input, BatchOptions(batch_index), lease, &out); !s.ok()) {
      return s;
    }
    out.compute_us = MicrosSince(start);
    return out;
  }
  if (!image.on_device || !seg.on_device || resources_.cuda == nullptr) {
    return absl::InvalidArgumentError(
        "segmentation: image and segmentation must both be on the session's CUDA device (input slot or region)");
  }
  if (image.view.dtype != DType::kFloat32 || seg.view.dtype != DType::kInt16) {
    return absl::InvalidArgumentError("image.dtype: device inputs are float32 images and int16 segmentations");
  }
  absl::StatusOr<CudaWorkerPool::Lease> worker = resources_.cuda->Acquire();
  if (!worker.ok()) return worker.status();
  // A client's copies into a CUDA input slot may still run on its stream: it recorded the slot's event after them.
  for (SlotBuffer* slot : {image.slot, seg.slot}) {
    if (slot == nullptr) continue;
    if (absl::Status s = (*worker)->WaitForSlotWrites(*slot); !s.ok()) return s;
    if (image.slot == seg.slot) break;
  }
  CudaBatchInput din;
  din.image = static_cast<const float*>(image.view.data);
  din.seg = static_cast<const int16_t*>(seg.view.data);
  din.image_shape = image.view.shape;
  din.seg_channels = seg.view.shape.size() > 1 ? seg.view.shape[1] : 1;
  const RunOptions options = BatchOptions(batch_index);
  if (WritesIntoCudaSlot(lease)) {
    out.slot_tensors.emplace();
    absl::Status s = (*worker)->RunDeviceIntoSlot(din, options, resources_.slots->buffer(lease->slot()),
                                                  SlotRegionName(lease->slot()), &*out.slot_tensors,
                                                  &out.result.samples);
    if (!s.ok()) return s;
  } else {
    absl::StatusOr<BatchResult> result = (*worker)->RunDeviceInput(din, options);
    if (!result.ok()) return result.status();
    out.result = *std::move(result);
  }
  out.compute_us = MicrosSince(start);
  return out;
}

}  // namespace augmentd
