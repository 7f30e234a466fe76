#include "server/delivery.h"

#include <new>
#include <utility>

#include "absl/strings/str_cat.h"
#include "augment/transforms/downsample_seg_for_ds/downsample_seg_for_ds.h"
#include "server/adapter.h"
#include "server/log.h"

namespace augmentd {
namespace {

uint64_t Align256(uint64_t n) { return (n + 255) & ~uint64_t{255}; }

uint64_t Product(const std::vector<int64_t>& v) {
  uint64_t p = 1;
  for (int64_t x : v) p *= static_cast<uint64_t>(x);
  return p;
}

template <typename Ref>
absl::Status CheckRef(const Ref& ref, uint64_t expected, uint64_t region_bytes, const std::string& field) {
  if (ref.byte_size() != expected) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".byte_size: ", ref.byte_size(),
                                                   " bytes, but the shape and dtype need ", expected));
  }
  if (ref.offset() > region_bytes || ref.byte_size() > region_bytes - ref.offset()) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".offset: [", ref.offset(), ", ", ref.offset(), " + ",
                                                   ref.byte_size(), ") lies outside region '", ref.region(), "' of ",
                                                   region_bytes, " bytes"));
  }
  return absl::OkStatus();
}

template <typename Map>
absl::StatusOr<const typename Map::mapped_type::element_type*> FindRegion(const Map* regions, const std::string& name,
                                                                         const std::string& field) {
  if (regions != nullptr) {
    if (auto it = regions->find(name); it != regions->end()) return it->second.get();
  }
  return absl::InvalidArgumentError(absl::StrCat(field, ".region: '", name,
                                                 "' is not a region registered with this session"));
}

}  // namespace

std::string SlotRegionName(uint32_t slot) { return absl::StrCat("slot", slot); }

uint64_t BatchSlotBytes(const PipelineSpec& pipeline, const std::vector<int64_t>& input_patch, int64_t batch,
                        int64_t image_channels, int64_t label_channels, DType image_dtype, size_t label_bytes) {
  const std::vector<int64_t> out = pipeline.OutputShape(input_patch);
  const uint64_t b = static_cast<uint64_t>(batch);
  uint64_t total = Align256(b * static_cast<uint64_t>(image_channels) * Product(out) * DTypeSize(image_dtype));
  const DownsampleSegForDsTransform* ds = nullptr;
  for (const TransformSpec& t : pipeline.transforms) {
    if (auto* d = dynamic_cast<const DownsampleSegForDsTransform*>(t.transform.get())) ds = d;
  }
  const size_t levels = ds == nullptr ? 1 : ds->config().ds_scales.size();
  for (size_t l = 0; l < levels; ++l) {
    const std::vector<int64_t> shape = ds == nullptr ? out : ds->LevelShape(out, l);
    total += Align256(b * static_cast<uint64_t>(label_channels) * Product(shape) * label_bytes);
  }
  return total;
}

absl::StatusOr<std::shared_ptr<SlotRing>> CreateSlotRing(const SlotRingRequest& request,
                                                         const ServerLimitsOptions& limits,
                                                         std::shared_ptr<MemoryBudget> budget) {
  const bool cuda = request.kind == v1::DELIVERY_KIND_CUDA_IPC;
  const uint64_t slot_bytes =
      cuda ? (request.slot_bytes + kCudaSlotAlignment - 1) / kCudaSlotAlignment * kCudaSlotAlignment
           : request.slot_bytes;
  const uint64_t total = slot_bytes * request.count + request.staging_bytes;
  if (limits.max_session_memory_bytes != 0 && total > limits.max_session_memory_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "max_session_memory_bytes: ", request.count, " output slots of ", slot_bytes, " bytes", 
        request.staging_bytes > 0 ? absl::StrCat(" + ", request.staging_bytes, " bytes of staging") : "",
        " = ", total, " bytes exceed the server's limit of ", limits.max_session_memory_bytes,
        " (lower config.prefetch_depth or config.batch_size)"));
  }
  if (budget != nullptr) {
    if (absl::Status s = budget->Reserve(total); !s.ok()) return s;
  }
  std::vector<std::unique_ptr<SlotBuffer>> buffers;
  for (uint32_t i = 0; i < request.count; ++i) {
    absl::StatusOr<std::unique_ptr<SlotBuffer>> slot =
        cuda ? CreateCudaIpcSlot(request.device.index, request.device.uuid, slot_bytes)
             : absl::StatusOr<std::unique_ptr<SlotBuffer>>(ShmSlot::Create(ShmSlotName(request.session_id, i), slot_bytes));
    if (!slot.ok()) {
      buffers.clear();
      if (budget != nullptr) budget->Release(total);
      return absl::Status(slot.status().code(), absl::StrCat("output slot ", i, ": ", slot.status().message()));
    }
    // A CUDA session's host slots are page-locked once, so the device writes batches straight into them.
    if (!cuda && request.device.kind == DeviceKind::kCuda) {
      if (absl::Status s = PinHostSlot(**slot, request.device.index); !s.ok()) {
        LogWarning("output slot ", i, ": not page-locked (batches go through a host copy): ", s.ToString());
      }
    }
    buffers.push_back(*std::move(slot));
  }
  return std::make_shared<SlotRing>(request.kind, std::move(buffers), std::move(budget), total);
}

absl::Status WriteHostSlot(const BatchResult& result, std::optional<DType> label_dtype, SlotBuffer& slot,
                           const std::string& region, v1::Batch* batch) {
  uint64_t offset = 0;
  auto put = [&](const HostTensor& t, const std::string& name, DType dtype, v1::Tensor* out) -> absl::Status {
    const uint64_t bytes = static_cast<uint64_t>(t.numel()) * DTypeSize(dtype);
    if (offset + bytes > slot.byte_size()) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": the batch does not fit its output slot of ",
                                                     slot.byte_size(), " bytes"));
    }
    if (absl::Status s = WriteConverted(t, name, dtype, static_cast<char*>(slot.data()) + offset); !s.ok()) return s;
    out->set_name(name);
    out->set_dtype(ToProto(dtype));
    for (int64_t d : t.shape()) out->add_shape(d);
    out->mutable_host_shm()->set_region(region);
    out->mutable_host_shm()->set_offset(offset);
    out->mutable_host_shm()->set_byte_size(bytes);
    offset = Align256(offset + bytes);
    return absl::OkStatus();
  };
  if (absl::Status s = put(result.image, "image", result.image.dtype(), batch->mutable_image()); !s.ok()) return s;
  for (size_t k = 0; k < result.seg.size(); ++k) {
    const HostTensor& level = result.seg[k];
    if (absl::Status s = put(level, absl::StrCat("target_", k), label_dtype.value_or(level.dtype()), batch->add_targets());
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

uint64_t SlotPayloadBytes(const v1::Batch& batch) {
  auto bytes = [](const v1::Tensor& t) -> uint64_t {
    return t.has_host_shm() ? t.host_shm().byte_size() : t.has_cuda_ipc() ? t.cuda_ipc().byte_size() : 0;
  };
  uint64_t sum = bytes(batch.image());
  for (const v1::Tensor& t : batch.targets()) sum += bytes(t);
  return sum;
}

uint64_t InputRegions::bytes() const {
  uint64_t sum = 0;
  for (const auto& [name, r] : host) sum += r->byte_size();
  for (const auto& [name, r] : cuda) sum += r->byte_size();
  return sum;
}

absl::StatusOr<std::unique_ptr<InputRegions>> OpenInputRegions(const v1::OpenSessionRequest& request,
                                                               const DeviceInfo& device, bool allowed) {
  if (request.host_shm_regions_size() == 0 && request.cuda_ipc_regions_size() == 0) return nullptr;
  if (!allowed) {
    return absl::PermissionDeniedError(
        "host_shm_regions / cuda_ipc_regions: client shared memory is disabled on this server (--allow_client_shm)");
  }
  if (request.config().has_dataset()) {
    return absl::InvalidArgumentError(
        "host_shm_regions / cuda_ipc_regions: input regions are for patch mode; dataset mode reads its own data");
  }
  auto out = std::make_unique<InputRegions>();
  auto check_name = [&](const std::string& name, const std::string& field) -> absl::Status {
    if (name.empty()) return absl::InvalidArgumentError(absl::StrCat(field, ".name: required"));
    if (out->host.count(name) > 0 || out->cuda.count(name) > 0) {
      return absl::InvalidArgumentError(absl::StrCat(field, ".name: '", name, "' is used twice"));
    }
    return absl::OkStatus();
  };
  for (int i = 0; i < request.host_shm_regions_size(); ++i) {
    const v1::HostShmRegion& r = request.host_shm_regions(i);
    const std::string field = absl::StrCat("host_shm_regions[", i, "]");
    if (absl::Status s = check_name(r.name(), field); !s.ok()) return s;
    absl::StatusOr<std::unique_ptr<ShmInputRegion>> opened = ShmInputRegion::Open(r, field);
    if (!opened.ok()) return opened.status();
    out->host[r.name()] = *std::move(opened);
  }
  for (int i = 0; i < request.cuda_ipc_regions_size(); ++i) {
    const v1::CudaIpcRegion& r = request.cuda_ipc_regions(i);
    const std::string field = absl::StrCat("cuda_ipc_regions[", i, "]");
    if (absl::Status s = check_name(r.name(), field); !s.ok()) return s;
    if (device.kind != DeviceKind::kCuda) {
      return absl::InvalidArgumentError(absl::StrCat(field, ": CUDA IPC inputs need a session on a CUDA device (",
                                                     "this one runs on ", device.name, ")"));
    }
    absl::StatusOr<std::unique_ptr<CudaInputRegion>> opened = CudaInputRegion::Open(r, device.index, device.uuid, field);
    if (!opened.ok()) return opened.status();
    out->cuda[r.name()] = *std::move(opened);
  }
  return out;
}

absl::StatusOr<InputTensor> ResolveInputTensor(const v1::Tensor& tensor, const std::string& field,
                                               const InputRegions* regions) {
  InputTensor out;
  if (tensor.storage_case() != v1::Tensor::kHostShm && tensor.storage_case() != v1::Tensor::kCudaIpc) {
    absl::StatusOr<TensorView> view = TensorViewFromProto(tensor, field);
    if (!view.ok()) return view.status();
    out.view = *view;
    return out;
  }
  uint64_t bytes = 0;
  absl::StatusOr<TensorView> view = TensorLayoutFromProto(tensor, field, &bytes);
  if (!view.ok()) return view.status();
  out.view = *view;
  if (tensor.storage_case() == v1::Tensor::kHostShm) {
    const std::string ref_field = absl::StrCat(field, ".host_shm");
    auto region = FindRegion(regions == nullptr ? nullptr : &regions->host, tensor.host_shm().region(), ref_field);
    if (!region.ok()) return region.status();
    if (absl::Status s = CheckRef(tensor.host_shm(), bytes, (*region)->byte_size(), ref_field); !s.ok()) return s;
    out.owned.reset(new (std::nothrow) uint8_t[bytes == 0 ? 1 : bytes]);
    if (out.owned == nullptr) {
      return absl::ResourceExhaustedError(absl::StrCat(ref_field, ": cannot allocate ", bytes, " bytes for the copy"));
    }
    if (absl::Status s = (*region)->Read(tensor.host_shm().offset(), bytes, out.owned.get(), ref_field); !s.ok()) {
      return s;
    }
    out.view.data = out.owned.get();
    return out;
  }
  const std::string ref_field = absl::StrCat(field, ".cuda_ipc");
  auto region = FindRegion(regions == nullptr ? nullptr : &regions->cuda, tensor.cuda_ipc().region(), ref_field);
  if (!region.ok()) return region.status();
  if (absl::Status s = CheckRef(tensor.cuda_ipc(), bytes, (*region)->byte_size(), ref_field); !s.ok()) return s;
  out.view.data = (*region)->data() + tensor.cuda_ipc().offset();
  out.on_device = true;
  return out;
}

}  // namespace augmentd
