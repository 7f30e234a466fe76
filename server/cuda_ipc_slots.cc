// CUDA build of server/cuda_ipc_slots.h.
#include "server/cuda_ipc_slots.h"

#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "augment/cuda/status.h"
#include "augment/status_macros.h"
#include "server/adapter.h"
#include "server/shm_region.h"

namespace augmentd {
namespace {

#define SLOTS_CUDA_OK(expr) RETURN_IF_ERROR(CudaStatus((expr), #expr))

uint64_t Align256(uint64_t n) { return (n + 255) & ~uint64_t{255}; }

class CudaIpcSlot final : public SlotBuffer {
 public:
  CudaIpcSlot(int device, std::string uuid, void* ptr, uint64_t bytes, cudaEvent_t event)
      : device_(device), uuid_(std::move(uuid)), ptr_(ptr), bytes_(bytes), event_(event) {}
  ~CudaIpcSlot() override {
    cudaSetDevice(device_);
    if (event_ != nullptr) cudaEventDestroy(event_);
    cudaFree(ptr_);
  }
  absl::Status ExportHandles() {
    SLOTS_CUDA_OK(cudaIpcGetMemHandle(&mem_handle_, ptr_));
    SLOTS_CUDA_OK(cudaIpcGetEventHandle(&event_handle_, event_));
    return absl::OkStatus();
  }
  void* data() override { return ptr_; }
  uint64_t byte_size() const override { return bytes_; }
  cudaEvent_t event() const { return event_; }
  v1::OutputSlot Export(uint32_t index) const override {
    v1::OutputSlot out;
    out.set_index(index);
    out.set_byte_size(bytes_);
    v1::CudaIpcRegion* r = out.mutable_cuda_ipc();
    r->set_name(absl::StrCat("slot", index));
    r->set_mem_handle(std::string(reinterpret_cast<const char*>(&mem_handle_), sizeof(mem_handle_)));
    r->set_byte_size(bytes_);
    r->set_device_uuid(uuid_);
    r->set_event_handle(std::string(reinterpret_cast<const char*>(&event_handle_), sizeof(event_handle_)));
    return out;
  }

 private:
  const int device_;
  const std::string uuid_;
  void* const ptr_;
  const uint64_t bytes_;
  cudaEvent_t event_;
  cudaIpcMemHandle_t mem_handle_{};
  cudaIpcEventHandle_t event_handle_{};
};

void Grow(void** ptr, uint64_t* cap, uint64_t need, bool pinned, absl::Status* st) {
  if (*cap >= need) return;
  if (*ptr != nullptr) pinned ? cudaFreeHost(*ptr) : cudaFree(*ptr);
  *ptr = nullptr;
  *cap = 0;
  *st = pinned ? CudaStatus(cudaMallocHost(ptr, need), "cudaMallocHost")
               : CudaStatus(cudaMalloc(ptr, need), "cudaMalloc");
  if (st->ok()) *cap = need;
}

// memcpy of a large host buffer (an inline request, a host shm input) into pinned staging on several threads: one
// thread copies ~5-10 GB/s, so a 100 MB patch batch would cost 10-20 ms of the call on one (issue 22).
void ParallelMemcpy(void* dst, const void* src, size_t bytes) {
  constexpr size_t kPerThread = size_t{16} << 20;
  const size_t hw = std::max(1u, std::thread::hardware_concurrency());
  const size_t threads = std::min<size_t>({8, std::max<size_t>(1, hw / 2), std::max<size_t>(1, bytes / kPerThread)});
  if (threads <= 1) {
    std::memcpy(dst, src, bytes);
    return;
  }
  const size_t chunk = (bytes + threads - 1) / threads;
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  for (size_t t = 1; t < threads; ++t) {
    const size_t begin = t * chunk, n = begin < bytes ? std::min(chunk, bytes - begin) : 0;
    pool.emplace_back([=] { std::memcpy(static_cast<char*>(dst) + begin, static_cast<const char*>(src) + begin, n); });
  }
  std::memcpy(dst, src, std::min(chunk, bytes));
  for (std::thread& th : pool) th.join();
}

void SetRef(v1::Tensor* t, const std::string& name, v1::DType dtype, const std::vector<int64_t>& shape,
            const std::string& region, uint64_t offset, uint64_t bytes) {
  t->set_name(name);
  t->set_dtype(dtype);
  for (int64_t d : shape) t->add_shape(d);
  t->mutable_cuda_ipc()->set_region(region);
  t->mutable_cuda_ipc()->set_offset(offset);
  t->mutable_cuda_ipc()->set_byte_size(bytes);
}

// Offsets of the image and every label level in one buffer (each 256-byte aligned); returns the total size.
uint64_t Offsets(const CudaOutputLayout& lay, std::vector<uint64_t>* offsets) {
  offsets->assign(1, 0);
  uint64_t end = Align256(lay.image_bytes);
  for (size_t b : lay.seg_bytes) {
    offsets->push_back(end);
    end += Align256(b);
  }
  return end;
}

CudaBatchOutput OutputsAt(void* base, const std::vector<uint64_t>& offsets) {
  CudaBatchOutput out;
  char* p = static_cast<char*>(base);
  out.image = p;
  for (size_t l = 1; l < offsets.size(); ++l) out.seg.push_back(reinterpret_cast<int16_t*>(p + offsets[l]));
  return out;
}

}  // namespace

bool CudaIpcBuilt() { return true; }

absl::StatusOr<std::unique_ptr<SlotBuffer>> CreateCudaIpcSlot(int device, const std::string& device_uuid,
                                                              uint64_t bytes) {
  bytes = (bytes + kCudaSlotAlignment - 1) / kCudaSlotAlignment * kCudaSlotAlignment;
  SLOTS_CUDA_OK(cudaSetDevice(device));
  void* ptr = nullptr;
  SLOTS_CUDA_OK(cudaMalloc(&ptr, bytes));
  cudaEvent_t event = nullptr;
  if (absl::Status s = CudaStatus(cudaEventCreateWithFlags(&event, cudaEventInterprocess | cudaEventDisableTiming),
                            "cudaEventCreateWithFlags");
      !s.ok()) {
    cudaFree(ptr);
    return s;
  }
  auto slot = std::make_unique<CudaIpcSlot>(device, device_uuid, ptr, bytes, event);
  RETURN_IF_ERROR(slot->ExportHandles());
  return std::unique_ptr<SlotBuffer>(std::move(slot));
}

absl::Status PinHostSlot(SlotBuffer& slot, int device) {
  auto* shm = dynamic_cast<ShmSlot*>(&slot);
  if (shm == nullptr || shm->pinned()) return absl::OkStatus();
  SLOTS_CUDA_OK(cudaSetDevice(device));
  void* base = shm->data();
  SLOTS_CUDA_OK(cudaHostRegister(base, shm->byte_size(), cudaHostRegisterPortable));
  shm->set_pinned([base, device] {
    cudaSetDevice(device);
    cudaHostUnregister(base);
  });
  return absl::OkStatus();
}

namespace {

// Whether `p` is page-locked host memory the device can copy from directly (cudaHostRegister / cudaMallocHost).
bool IsPinnedHost(const void* p) {
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return attr.type == cudaMemoryTypeHost;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CudaInputRegion>> CudaInputRegion::Open(const v1::CudaIpcRegion& region, int device,
                                                                       const std::string& device_uuid,
                                                                       const std::string& field) {
  if (region.mem_handle().size() != sizeof(cudaIpcMemHandle_t)) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".mem_handle: ", region.mem_handle().size(),
                                                   " bytes, a cudaIpcMemHandle_t has ", sizeof(cudaIpcMemHandle_t)));
  }
  if (!region.device_uuid().empty() && !absl::EqualsIgnoreCase(region.device_uuid(), device_uuid)) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".device_uuid: ", region.device_uuid(),
                                                   " is not the session's device ", device_uuid));
  }
  if (region.byte_size() == 0) return absl::InvalidArgumentError(absl::StrCat(field, ".byte_size: must be > 0"));
  SLOTS_CUDA_OK(cudaSetDevice(device));
  cudaIpcMemHandle_t handle;
  std::memcpy(&handle, region.mem_handle().data(), sizeof(handle));
  void* ptr = nullptr;
  if (cudaError_t e = cudaIpcOpenMemHandle(&ptr, handle, cudaIpcMemLazyEnablePeerAccess); e != cudaSuccess) {
    cudaGetLastError();
    return absl::InvalidArgumentError(absl::StrCat(field, ".mem_handle: cudaIpcOpenMemHandle failed: ",
                                                   cudaGetErrorName(e)));
  }
  // The real allocation size: cuMemGetAddressRange through the runtime (no link-time libcuda dependency).
  using GetRange = CUresult (*)(CUdeviceptr*, size_t*, CUdeviceptr);
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q{};
  CUdeviceptr base = 0;
  size_t size = 0;
  if (cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &fn, 12000, cudaEnableDefault, &q) != cudaSuccess ||
      fn == nullptr || reinterpret_cast<GetRange>(fn)(&base, &size, reinterpret_cast<CUdeviceptr>(ptr)) != CUDA_SUCCESS) {
    cudaGetLastError();
    cudaIpcCloseMemHandle(ptr);
    return absl::InternalError(absl::StrCat(field, ": cannot query the size of the opened allocation"));
  }
  const uint64_t available = size - (reinterpret_cast<CUdeviceptr>(ptr) - base);
  if (region.byte_size() > available) {
    cudaIpcCloseMemHandle(ptr);
    return absl::InvalidArgumentError(absl::StrCat(field, ".byte_size: ", region.byte_size(),
                                                   " exceeds the allocation's real size ", available));
  }
  return std::unique_ptr<CudaInputRegion>(new CudaInputRegion(ptr, region.byte_size(), device));
}

CudaInputRegion::~CudaInputRegion() {
  cudaSetDevice(device_);
  cudaIpcCloseMemHandle(ptr_);
}

struct CudaWorker::Impl {
  int device = 0;
  std::unique_ptr<CudaAugmenter> aug;
  cudaStream_t stream = nullptr;
  void* pinned = nullptr;
  uint64_t pinned_cap = 0;
  void* d_in = nullptr;
  uint64_t d_in_cap = 0;
  void* d_out = nullptr;
  uint64_t d_out_cap = 0;
  ~Impl() {
    cudaSetDevice(device);
    if (stream != nullptr) cudaStreamSynchronize(stream);
    if (pinned != nullptr) cudaFreeHost(pinned);
    if (d_in != nullptr) cudaFree(d_in);
    if (d_out != nullptr) cudaFree(d_out);
    if (stream != nullptr) cudaStreamDestroy(stream);
  }
};

CudaWorker::CudaWorker(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudaWorker::~CudaWorker() = default;

absl::StatusOr<std::unique_ptr<CudaWorker>> CudaWorker::Create(const PipelineSpec& spec, int device) {
  auto impl = std::make_unique<Impl>();
  impl->device = device;
  ASSIGN_OR_RETURN(impl->aug, CudaAugmenter::Create(spec, device));
  SLOTS_CUDA_OK(cudaSetDevice(device));
  SLOTS_CUDA_OK(cudaStreamCreateWithFlags(&impl->stream, cudaStreamNonBlocking));
  return std::unique_ptr<CudaWorker>(new CudaWorker(std::move(impl)));
}

absl::StatusOr<BatchResult> CudaWorker::RunHost(const BatchInput& input, const RunOptions& options) {
  return impl_->aug->RunHost(input, options);
}

absl::Status CudaWorker::RunIntoSlot(const BatchInput& input, const RunOptions& options, SlotBuffer& slot,
                                     const std::string& region, v1::Batch* batch,
                                     std::vector<SampleRecord>* records) {
  if (input.image.dtype != DType::kFloat32 || input.seg.data == nullptr || input.seg.dtype != DType::kInt16) {
    return absl::InvalidArgumentError("image/segmentation: CUDA IPC delivery takes float32 images and int16 labels");
  }
  ASSIGN_OR_RETURN(CudaBatchInput din, StageHostInput(input));
  return RunDeviceIntoSlot(din, options, slot, region, batch, records);
}

absl::StatusOr<BatchResult> CudaWorker::RunHostStaged(const BatchInput& input, const RunOptions& options) {
  if (input.image.dtype != DType::kFloat32 || input.seg.data == nullptr || input.seg.dtype != DType::kInt16 ||
      input.image.shape.size() != 5 || input.seg.shape.size() != 5) {
    return RunHost(input, options);
  }
  ASSIGN_OR_RETURN(CudaBatchInput din, StageHostInput(input));
  return RunDeviceInput(din, options);
}

absl::StatusOr<CudaBatchInput> CudaWorker::StageHostInput(const BatchInput& input) {
  Impl& m = *impl_;
  const uint64_t img_in = Align256(input.image.numel() * sizeof(float));
  const uint64_t seg_in = input.seg.numel() * sizeof(int16_t);
  SLOTS_CUDA_OK(cudaSetDevice(m.device));
  SLOTS_CUDA_OK(cudaStreamSynchronize(m.stream));  // a failed earlier run may still read the staging
  absl::Status st;
  Grow(&m.pinned, &m.pinned_cap, img_in + seg_in, true, &st);
  RETURN_IF_ERROR(st);
  Grow(&m.d_in, &m.d_in_cap, img_in + seg_in, false, &st);
  RETURN_IF_ERROR(st);
  CudaBatchInput din;
  din.image = static_cast<const float*>(m.d_in);
  din.seg = reinterpret_cast<const int16_t*>(static_cast<const char*>(m.d_in) + img_in);
  din.image_shape = input.image.shape;
  // (B, S, *spatial) beside (B, C, *spatial), 2D or 3D (the cascade: S = 2)
  din.seg_channels = input.seg.shape.size() == input.image.shape.size() ? input.seg.shape[1] : 1;
  if (IsPinnedHost(input.image.data) && IsPinnedHost(input.seg.data)) {
    // A pinned host-shm input slot: straight to the device, no staging pass (the caller synchronises the stream
    // before the slot goes back to the client).
    SLOTS_CUDA_OK(cudaMemcpyAsync(m.d_in, input.image.data, input.image.numel() * sizeof(float),
                                  cudaMemcpyHostToDevice, m.stream));
    SLOTS_CUDA_OK(cudaMemcpyAsync(static_cast<char*>(m.d_in) + img_in, input.seg.data, seg_in,
                                  cudaMemcpyHostToDevice, m.stream));
    return din;
  }
  ParallelMemcpy(m.pinned, input.image.data, input.image.numel() * sizeof(float));
  ParallelMemcpy(static_cast<char*>(m.pinned) + img_in, input.seg.data, seg_in);
  SLOTS_CUDA_OK(cudaMemcpyAsync(m.d_in, m.pinned, img_in + seg_in, cudaMemcpyHostToDevice, m.stream));
  return din;
}

absl::Status CudaWorker::WaitForSlotWrites(SlotBuffer& slot) {
  auto* cuda_slot = dynamic_cast<CudaIpcSlot*>(&slot);
  if (cuda_slot == nullptr || cuda_slot->event() == nullptr) return absl::OkStatus();
  SLOTS_CUDA_OK(cudaSetDevice(impl_->device));
  SLOTS_CUDA_OK(cudaStreamWaitEvent(impl_->stream, cuda_slot->event(), 0));
  return absl::OkStatus();
}

absl::StatusOr<bool> CudaWorker::RunHostIntoHostSlot(const BatchInput& input, const RunOptions& options,
                                                     std::optional<DType> label_dtype, SlotBuffer& slot,
                                                     const std::string& region, v1::Batch* batch,
                                                     std::vector<SampleRecord>* records) {
  Impl& m = *impl_;
  auto* shm = dynamic_cast<ShmSlot*>(&slot);
  if (shm == nullptr || !shm->pinned() || input.image.dtype != DType::kFloat32 || input.seg.data == nullptr ||
      input.seg.dtype != DType::kInt16 || input.image.shape.size() != 5 || input.seg.shape.size() != 5) {
    return false;
  }
  const int64_t seg_channels = input.seg.shape[1];
  ASSIGN_OR_RETURN(CudaOutputLayout lay, m.aug->OutputLayout(input.image.shape, options.image_dtype, seg_channels));
  if (label_dtype.has_value() && *label_dtype != lay.seg_dtype) return false;
  // WriteHostSlot's layout: the image at 0, each target level at the next 256-byte boundary.
  std::vector<uint64_t> offsets;
  const uint64_t end = Offsets(lay, &offsets);
  const uint64_t last = lay.seg_bytes.empty() ? lay.image_bytes : offsets.back() + lay.seg_bytes.back();
  if (last > slot.byte_size()) {
    return absl::InvalidArgumentError(absl::StrCat("image: the batch does not fit its output slot of ",
                                                   slot.byte_size(), " bytes"));
  }
  ASSIGN_OR_RETURN(CudaBatchInput din, StageHostInput(input));
  absl::Status st;
  Grow(&m.d_out, &m.d_out_cap, end, false, &st);
  RETURN_IF_ERROR(st);
  const CudaBatchOutput dout = OutputsAt(m.d_out, offsets);
  RETURN_IF_ERROR(m.aug->Run(din, dout, options, m.stream, records));
  char* host = static_cast<char*>(slot.data());
  SLOTS_CUDA_OK(cudaMemcpyAsync(host, dout.image, lay.image_bytes, cudaMemcpyDeviceToHost, m.stream));
  for (size_t l = 0; l < lay.seg_shapes.size(); ++l) {
    SLOTS_CUDA_OK(cudaMemcpyAsync(host + offsets[l + 1], dout.seg[l], lay.seg_bytes[l], cudaMemcpyDeviceToHost,
                                  m.stream));
  }
  SLOTS_CUDA_OK(cudaStreamSynchronize(m.stream));
  auto ref = [&](v1::Tensor* t, const std::string& name, DType dtype, const std::vector<int64_t>& shape,
                 uint64_t offset, uint64_t bytes) {
    t->set_name(name);
    t->set_dtype(ToProto(dtype));
    for (int64_t d : shape) t->add_shape(d);
    t->mutable_host_shm()->set_region(region);
    t->mutable_host_shm()->set_offset(offset);
    t->mutable_host_shm()->set_byte_size(bytes);
  };
  ref(batch->mutable_image(), "image", options.image_dtype, lay.image_shape, 0, lay.image_bytes);
  for (size_t l = 0; l < lay.seg_shapes.size(); ++l) {
    ref(batch->add_targets(), absl::StrCat("target_", l), lay.seg_dtype, lay.seg_shapes[l], offsets[l + 1],
        lay.seg_bytes[l]);
  }
  return true;
}

absl::Status CudaWorker::RunDeviceIntoSlot(const CudaBatchInput& input, const RunOptions& options, SlotBuffer& slot,
                                           const std::string& region, v1::Batch* batch,
                                           std::vector<SampleRecord>* records) {
  Impl& m = *impl_;
  auto* cuda_slot = dynamic_cast<CudaIpcSlot*>(&slot);
  if (cuda_slot == nullptr) return absl::InternalError("RunDeviceIntoSlot: not a CUDA IPC slot");
  ASSIGN_OR_RETURN(CudaOutputLayout lay, m.aug->OutputLayout(input.image_shape, options.image_dtype,
                                                              input.seg != nullptr ? input.seg_channels : 0));
  std::vector<uint64_t> offsets;
  const uint64_t end = Offsets(lay, &offsets);
  if (end > slot.byte_size()) {
    return absl::InvalidArgumentError(absl::StrCat("batch: needs ", end, " bytes, the slot holds ", slot.byte_size()));
  }
  SLOTS_CUDA_OK(cudaSetDevice(m.device));
  RETURN_IF_ERROR(m.aug->Run(input, OutputsAt(slot.data(), offsets), options, m.stream, records));
  SLOTS_CUDA_OK(cudaEventRecord(cuda_slot->event(), m.stream));
  SLOTS_CUDA_OK(cudaStreamSynchronize(m.stream));
  SetRef(batch->mutable_image(), "image", ToProto(options.image_dtype), lay.image_shape, region, 0, lay.image_bytes);
  for (size_t l = 0; l < lay.seg_shapes.size(); ++l) {
    SetRef(batch->add_targets(), absl::StrCat("target_", l), ToProto(lay.seg_dtype), lay.seg_shapes[l], region,
           offsets[l + 1], lay.seg_bytes[l]);
  }
  return absl::OkStatus();
}

absl::StatusOr<dataset::DeviceBatch> CudaWorker::LoadDatasetBatch(const dataset::BatchLoader& loader,
                                                                  uint64_t batch_index, int64_t channels,
                                                                  CudaBatchInput* input) {
  Impl& m = *impl_;
  const dataset::Shape data_shape = loader.SampleDataShape(channels);
  const dataset::Shape seg_shape = loader.SampleSegShape();
  const auto numel = [](const dataset::Shape& s) {
    int64_t n = 1;
    for (int64_t d : s) n *= d;
    return static_cast<uint64_t>(n);
  };
  const uint64_t batch = static_cast<uint64_t>(loader.batch_size());
  const uint64_t img_elems = batch * numel(data_shape), seg_elems = batch * numel(seg_shape);
  const uint64_t img_bytes = Align256(img_elems * sizeof(float));
  SLOTS_CUDA_OK(cudaSetDevice(m.device));
  SLOTS_CUDA_OK(cudaStreamSynchronize(m.stream));  // an earlier run may still read the input buffers
  absl::Status st;
  Grow(&m.d_in, &m.d_in_cap, img_bytes + seg_elems * sizeof(int16_t), false, &st);
  RETURN_IF_ERROR(st);
  dataset::DeviceBatchBuffers dst;
  dst.image = static_cast<float*>(m.d_in);
  dst.image_elems = img_elems;
  dst.seg = reinterpret_cast<int16_t*>(static_cast<char*>(m.d_in) + img_bytes);
  dst.seg_elems = seg_elems;
  ASSIGN_OR_RETURN(dataset::DeviceBatch db, loader.LoadBatchToDevice(batch_index, dst, m.stream));
  input->image = dst.image;
  input->seg = dst.seg;
  input->image_shape.assign(db.data_shape.begin(), db.data_shape.end());
  return db;
}

absl::StatusOr<BatchResult> CudaWorker::RunDeviceInput(const CudaBatchInput& input, const RunOptions& options) {
  Impl& m = *impl_;
  ASSIGN_OR_RETURN(CudaOutputLayout lay, m.aug->OutputLayout(input.image_shape, options.image_dtype,
                                                              input.seg != nullptr ? input.seg_channels : 0));
  std::vector<uint64_t> offsets;
  const uint64_t total = Offsets(lay, &offsets);
  SLOTS_CUDA_OK(cudaSetDevice(m.device));
  absl::Status st;
  Grow(&m.d_out, &m.d_out_cap, total, false, &st);
  RETURN_IF_ERROR(st);
  const CudaBatchOutput dout = OutputsAt(m.d_out, offsets);
  BatchResult result;
  RETURN_IF_ERROR(m.aug->Run(input, dout, options, m.stream, &result.samples));
  result.image = HostTensor::Empty(lay.image_shape, options.image_dtype);
  SLOTS_CUDA_OK(cudaMemcpyAsync(result.image.raw_data(), dout.image, lay.image_bytes, cudaMemcpyDeviceToHost, m.stream));
  for (size_t l = 0; l < lay.seg_shapes.size(); ++l) {
    result.seg.push_back(HostTensor::Empty(lay.seg_shapes[l], lay.seg_dtype));
    SLOTS_CUDA_OK(cudaMemcpyAsync(result.seg.back().raw_data(), dout.seg[l], lay.seg_bytes[l], cudaMemcpyDeviceToHost,
                                  m.stream));
  }
  SLOTS_CUDA_OK(cudaStreamSynchronize(m.stream));
  return result;
}

}  // namespace augmentd
