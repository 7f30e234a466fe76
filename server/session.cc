#include "server/session.h"

#include <algorithm>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "server/adapter.h"
#include "server/session_config.h"
#include "server/session_lease.h"

namespace augmentd {
namespace {

uint64_t MicrosSince(absl::Time start) { return static_cast<uint64_t>(absl::ToInt64Microseconds(absl::Now() - start)); }

v1::LatencySummary Summarize(std::vector<double> us) {
  v1::LatencySummary out;
  if (us.empty()) return out;
  std::sort(us.begin(), us.end());
  double sum = 0;
  for (double v : us) sum += v;
  out.set_count(us.size());
  out.set_mean_us(sum / static_cast<double>(us.size()));
  out.set_p50_us(us[us.size() / 2]);
  out.set_p99_us(us[std::min(us.size() - 1, us.size() * 99 / 100)]);
  out.set_max_us(us.back());
  return out;
}

}  // namespace

namespace {
std::unique_ptr<HostBatchPool> InputBuffers(const SessionSettings& s) {
  if (s.loader == nullptr) return nullptr;
  const size_t seg = static_cast<size_t>(s.loader->batch_size() * NumElements(s.loader->SampleSegShape()));
  const size_t data =
      static_cast<size_t>(s.loader->batch_size() * NumElements(s.loader->SampleDataShape(s.num_image_channels)));
  return std::make_unique<HostBatchPool>(data, seg);
}
}  // namespace

Session::Session(SessionSettings settings, SessionResources resources)
    : settings_(std::move(settings)), resources_(std::move(resources)), input_buffers_(InputBuffers(settings_)) {
  next_batch_index_ = settings_.start_batch_index;
}

bool Session::WritesIntoCudaSlot(const v1::SlotLease* lease) const {
  return lease != nullptr && resources_.slots != nullptr && resources_.slots->kind() == v1::DELIVERY_KIND_CUDA_IPC;
}

RunOptions Session::BatchOptions(uint64_t batch_index) const {
  RunOptions options;
  options.seed = settings_.seed;
  options.first_sample_index = batch_index * settings_.batch_size;
  options.num_threads = settings_.threads_per_batch;
  options.image_dtype = settings_.image_dtype;
  options.device = settings_.device.name;  // "cpu" or "cuda:N" (OpenSession checked coverage)
  return options;
}

absl::Status Session::RunEngine(const BatchInput& input, const RunOptions& options, const v1::SlotLease* lease,
                                ProducedBatch* out) const {
  if (resources_.cuda == nullptr) {  // CPU session
    absl::StatusOr<BatchResult> result = AugmentBatch(settings_.pipeline, input, options);
    if (!result.ok()) return result.status();
    out->result = *std::move(result);
    return absl::OkStatus();
  }
  absl::StatusOr<CudaWorkerPool::Lease> worker = resources_.cuda->Acquire();
  if (!worker.ok()) return worker.status();
  if (WritesIntoCudaSlot(lease)) {
    out->slot_tensors.emplace();
    return (*worker)->RunIntoSlot(input, options, resources_.slots->buffer(lease->slot()),
                                  SlotRegionName(lease->slot()), &*out->slot_tensors, &out->result.samples);
  }
  absl::StatusOr<BatchResult> result = (*worker)->RunHost(input, options);
  if (!result.ok()) return result.status();
  out->result = *std::move(result);
  return absl::OkStatus();
}

absl::StatusOr<ProducedBatch> Session::ProduceDatasetBatch(uint64_t batch_index, const v1::SlotLease* lease) const {
  if (!dataset_mode()) return absl::FailedPreconditionError("the session is in patch mode: send patches (Augment)");
  const dataset::CaseCache* cache = settings_.loader->options().cache.get();
  if (resources_.cuda != nullptr && cache != nullptr && cache->has_device_tier()) {
    return ProduceDatasetBatchOnDevice(batch_index, lease);
  }
  ProducedBatch out;
  out.batch_index = batch_index;
  const absl::Time start = absl::Now();
  absl::StatusOr<HostBatchPool::Lease> buffers = input_buffers_->Acquire();
  if (!buffers.ok()) return buffers.status();
  absl::StatusOr<dataset::HostBatch> host =
      settings_.loader->LoadBatchInto(batch_index, buffers->data(), input_buffers_->data_elems(), buffers->seg(),
                                      input_buffers_->seg_elems());
  if (!host.ok()) return host.status();
  out.load_us = MicrosSince(start);
  BatchInput input;  // read by the engine before RunEngine returns (the CUDA worker stages it synchronously)
  input.image = TensorView{buffers->data(), host->data_shape, DType::kFloat32};
  input.seg = TensorView{buffers->seg(), host->seg_shape, DType::kInt16};
  const absl::Time compute_start = absl::Now();
  if (absl::Status s = RunEngine(input, BatchOptions(batch_index), lease, &out); !s.ok()) return s;
  out.compute_us = MicrosSince(compute_start);
  out.plans = std::move(host->samples);
  return out;
}

absl::StatusOr<ProducedBatch> Session::ProduceDatasetBatchOnDevice(uint64_t batch_index,
                                                                   const v1::SlotLease* lease) const {
  ProducedBatch out;
  out.batch_index = batch_index;
  const absl::Time start = absl::Now();
  absl::StatusOr<CudaWorkerPool::Lease> worker = resources_.cuda->Acquire();
  if (!worker.ok()) return worker.status();
  CudaBatchInput input;
  absl::StatusOr<dataset::DeviceBatch> loaded =
      (*worker)->LoadDatasetBatch(*settings_.loader, batch_index, settings_.num_image_channels, &input);
  if (!loaded.ok()) return loaded.status();
  out.load_us = MicrosSince(start);  // enqueue time: the crops run on the worker's stream before the kernels
  const absl::Time compute_start = absl::Now();
  const RunOptions options = BatchOptions(batch_index);
  if (WritesIntoCudaSlot(lease)) {
    out.slot_tensors.emplace();
    absl::Status s = (*worker)->RunDeviceIntoSlot(input, options, resources_.slots->buffer(lease->slot()),
                                                  SlotRegionName(lease->slot()), &*out.slot_tensors,
                                                  &out.result.samples);
    if (!s.ok()) return s;
  } else {
    absl::StatusOr<BatchResult> result = (*worker)->RunDeviceInput(input, options);
    if (!result.ok()) return result.status();
    out.result = *std::move(result);
  }
  out.compute_us = MicrosSince(compute_start);
  out.plans = std::move(loaded->samples);
  return out;
}

absl::Status Session::CheckPatches(const TensorView& image, const TensorView& seg) const {
  if (dataset_mode()) {
    return absl::FailedPreconditionError("the session is in dataset mode: the server samples its patches");
  }
  const size_t spatial = settings_.input_patch_size.size();
  auto check = [&](const TensorView& t, const char* field, int64_t channels, DType dtype) -> absl::Status {
    if (t.dtype != dtype) {
      return absl::InvalidArgumentError(absl::StrCat(field, ".dtype: the session expects ", std::string(DTypeName(dtype)),
                                                     ", got ", std::string(DTypeName(t.dtype))));
    }
    std::vector<int64_t> expected = {t.shape.empty() ? 0 : t.shape[0], channels};
    expected.insert(expected.end(), settings_.input_patch_size.begin(), settings_.input_patch_size.end());
    if (t.shape.size() != spatial + 2 || t.shape != expected || t.shape[0] < 1 ||
        t.shape[0] > static_cast<int64_t>(settings_.batch_size)) {
      return absl::InvalidArgumentError(absl::StrCat(field, ".shape: expected (B, ", channels, ", ",
                                                     absl::StrJoin(settings_.input_patch_size, ", "),
                                                     ") with 1 <= B <= batch_size ", settings_.batch_size,
                                                     ", got ", ShapeString(t.shape)));
    }
    return absl::OkStatus();
  };
  if (absl::Status s = check(image, "image", settings_.num_image_channels, settings_.input_image_dtype); !s.ok()) {
    return s;
  }
  if (absl::Status s = check(seg, "segmentation", settings_.num_segmentation_channels, settings_.input_label_dtype);
      !s.ok()) {
    return s;
  }
  if (seg.shape[0] != image.shape[0]) {
    return absl::InvalidArgumentError(absl::StrCat("segmentation.shape: batch ", seg.shape[0],
                                                   " differs from image batch ", image.shape[0]));
  }
  return absl::OkStatus();
}

absl::StatusOr<ProducedBatch> Session::AugmentPatches(uint64_t batch_index, const TensorView& image,
                                                      const TensorView& seg) const {
  if (absl::Status s = CheckPatches(image, seg); !s.ok()) return s;
  ProducedBatch out;
  out.batch_index = batch_index;
  const absl::Time start = absl::Now();
  if (absl::Status s = RunEngine(BatchInput{image, seg}, BatchOptions(batch_index), nullptr, &out); !s.ok()) return s;
  out.compute_us = MicrosSince(start);
  return out;
}

absl::StatusOr<ProducedBatch> Session::AugmentRequestPatches(const v1::AugmentRequest& request) const {
  const InputRegions* regions = resources_.inputs.get();
  absl::StatusOr<InputTensor> image = ResolveInputTensor(request.image(), "image", regions);
  if (!image.ok()) return image.status();
  absl::StatusOr<InputTensor> seg = ResolveInputTensor(request.segmentation(), "segmentation", regions);
  if (!seg.ok()) return seg.status();
  if (!image->on_device && !seg->on_device) return AugmentPatches(request.batch_index(), image->view, seg->view);
  // CUDA IPC inputs (OpenSession admitted them on CUDA sessions only): both tensors on the device.
  if (!image->on_device || !seg->on_device || resources_.cuda == nullptr) {
    return absl::InvalidArgumentError("segmentation: image and segmentation must both be CUDA IPC references");
  }
  if (absl::Status s = CheckPatches(image->view, seg->view); !s.ok()) return s;
  if (image->view.dtype != DType::kFloat32 || seg->view.dtype != DType::kInt16) {
    return absl::InvalidArgumentError("image.dtype: CUDA IPC inputs are float32 images and int16 segmentations");
  }
  ProducedBatch out;
  out.batch_index = request.batch_index();
  absl::StatusOr<CudaWorkerPool::Lease> worker = resources_.cuda->Acquire();
  if (!worker.ok()) return worker.status();
  CudaBatchInput din;
  din.image = static_cast<const float*>(image->view.data);
  din.seg = static_cast<const int16_t*>(seg->view.data);
  din.image_shape = image->view.shape;
  const absl::Time start = absl::Now();
  absl::StatusOr<BatchResult> result = (*worker)->RunDeviceInput(din, BatchOptions(request.batch_index()));
  if (!result.ok()) return result.status();
  out.compute_us = MicrosSince(start);
  out.result = *std::move(result);
  return out;
}

absl::StatusOr<v1::Batch> Session::MakeBatchProto(const ProducedBatch& batch, const v1::SlotLease* lease) const {
  v1::Batch out;
  if (batch.slot_tensors.has_value()) out = *batch.slot_tensors;
  out.set_session_id(settings_.id);
  out.set_batch_index(batch.batch_index);
  if (lease != nullptr) {
    *out.mutable_lease() = *lease;
    if (!batch.slot_tensors.has_value()) {
      if (resources_.slots == nullptr || resources_.slots->kind() != v1::DELIVERY_KIND_HOST_SHM) {
        return absl::InternalError("a slot lease on a session without host slots");
      }
      if (absl::Status s = WriteHostSlot(batch.result, settings_.label_dtype, resources_.slots->buffer(lease->slot()),
                                         SlotRegionName(lease->slot()), &out);
          !s.ok()) {
        return s;
      }
    }
  } else if (absl::Status s = BatchResultToProto(batch.result, settings_.label_dtype, &out); !s.ok()) {
    return s;
  }
  const int64_t b = out.image().shape_size() == 0 ? 0 : out.image().shape(0);  // inline or slot tensors
  for (int64_t j = 0; j < b; ++j) {
    v1::SampleInfo* info = out.add_samples();
    info->set_sample_index(batch.batch_index * settings_.batch_size + static_cast<uint64_t>(j));
    if (static_cast<size_t>(j) < batch.plans.size()) {
      const dataset::SamplePlan& plan = batch.plans[static_cast<size_t>(j)];
      info->set_case_id(plan.case_id);
      for (int64_t lb : plan.box.lb) info->add_bbox_lower(lb);
      info->set_forced_foreground(plan.force_fg);
    }
  }
  out.mutable_timing()->set_load_us(batch.load_us);
  out.mutable_timing()->set_compute_us(batch.compute_us);
  return out;
}

void Session::Close() {
  std::vector<std::function<void()>> listeners;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return;
    closed_ = true;
    listeners.swap(close_listeners_);
  }
  // New openers can no longer reach the slots; the memory goes with the last reference to the session.
  if (resources_.slots != nullptr) resources_.slots->Unlink();
  if (resources_.input_slots != nullptr) resources_.input_slots->Unlink();
  for (auto& listener : listeners) listener();
}

bool Session::closed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return closed_;
}

void Session::AddCloseListener(std::function<void()> listener) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!closed_) {
      close_listeners_.push_back(std::move(listener));
      return;
    }
  }
  listener();
}

void Session::RecordDelivered(uint64_t batch_index, uint64_t bytes, absl::Duration latency) {
  std::lock_guard<std::mutex> lock(mu_);
  ++batches_;
  bytes_ += bytes;
  next_batch_index_ = std::max(next_batch_index_, batch_index + 1);
  latencies_us_.push_back(absl::ToDoubleMicroseconds(latency));
  if (latencies_us_.size() > 1024) latencies_us_.pop_front();
}

void Session::RecordProduced(absl::Duration load, absl::Duration compute) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto [q, d] : {std::pair{&load_us_, load}, std::pair{&compute_us_, compute}}) {
    q->push_back(absl::ToDoubleMicroseconds(d));
    if (q->size() > 1024) q->pop_front();
  }
}

v1::SessionStats Session::Stats() const {
  v1::SessionStats out;
  out.set_session_id(settings_.id);
  out.set_name(settings_.name);
  std::vector<double> latencies, load, compute;
  {
    std::lock_guard<std::mutex> lock(mu_);
    out.set_batches_produced(batches_);
    out.set_samples_produced(batches_ * settings_.batch_size);
    out.set_bytes_delivered(bytes_);
    out.set_next_batch_index(next_batch_index_);
    latencies.assign(latencies_us_.begin(), latencies_us_.end());
    if (dataset_mode()) load.assign(load_us_.begin(), load_us_.end());
    compute.assign(compute_us_.begin(), compute_us_.end());
  }
  out.set_queued_batches(queued_batches.load());
  if (const std::shared_ptr<SlotRing>& ring = resources_.slots; ring != nullptr) {
    out.set_output_slots(ring->size());
    out.set_slot_bytes(ring->total_bytes());
    out.set_leased_slots(ring->leased_slots());
    out.set_stale_releases(ring->stale_releases());
    if (ring->kind() == v1::DELIVERY_KIND_CUDA_IPC) out.set_device_memory_bytes(ring->total_bytes());
  }
  if (resources_.inputs != nullptr) out.set_input_region_bytes(resources_.inputs->bytes());
  FillDatasetCacheStats(settings_, &out);
  out.set_credits(credits.load());
  const double seconds = absl::ToDoubleSeconds(absl::Now() - opened_);
  if (seconds > 0) out.set_samples_per_second(static_cast<double>(out.samples_produced()) / seconds);
  *out.mutable_batch_latency() = Summarize(std::move(latencies));
  *out.mutable_compute_latency() = Summarize(std::move(compute));
  if (dataset_mode()) *out.mutable_load_latency() = Summarize(std::move(load));
  return out;
}

std::string SessionRegistry::NewId() {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  std::lock_guard<std::mutex> lock(mu_);
  return absl::StrFormat("s%d-%08x", ++counter_, static_cast<uint32_t>(rng()));
}

absl::Status SessionRegistry::Add(std::shared_ptr<Session> session) {
  std::lock_guard<std::mutex> lock(mu_);
  if (sessions_.size() >= max_sessions_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("max_sessions: ", max_sessions_, " sessions are open; close one first"));
  }
  sessions_[session->id()] = std::move(session);
  ++opened_;
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<Session>> SessionRegistry::Get(const std::string& id) const {
  if (id.empty()) return absl::InvalidArgumentError("session_id: required");
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(id);
  if (it != sessions_.end()) return it->second;
  if (closed_ids_.count(id)) return absl::FailedPreconditionError(absl::StrCat("session ", id, " is closed"));
  return absl::NotFoundError(SessionLeases::UnknownSessionMessage(id));  // same words as a wrong credential
}

absl::StatusOr<std::shared_ptr<Session>> SessionRegistry::Close(const std::string& id) {
  std::shared_ptr<Session> session;
  {
    absl::StatusOr<std::shared_ptr<Session>> found = Get(id);
    if (!found.ok()) return found.status();
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end()) return absl::FailedPreconditionError(absl::StrCat("session ", id, " is closed"));
    session = std::move(it->second);
    sessions_.erase(it);
    closed_ids_.insert(id);
    closed_order_.push_back(id);
    if (closed_order_.size() > 4096) {
      closed_ids_.erase(closed_order_.front());
      closed_order_.pop_front();
    }
  }
  session->Close();
  return session;
}

void SessionRegistry::CloseAll() {
  std::map<std::string, std::shared_ptr<Session>> sessions;
  {
    std::lock_guard<std::mutex> lock(mu_);
    sessions.swap(sessions_);
    for (const auto& [id, s] : sessions) closed_ids_.insert(id);
  }
  for (auto& [id, s] : sessions) s->Close();
}

std::vector<std::shared_ptr<Session>> SessionRegistry::List() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<Session>> out;
  for (const auto& [id, s] : sessions_) out.push_back(s);
  return out;
}

uint64_t SessionRegistry::sessions_opened() const {
  std::lock_guard<std::mutex> lock(mu_);
  return opened_;
}

}  // namespace augmentd
