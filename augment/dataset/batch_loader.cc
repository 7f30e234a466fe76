#include "augment/dataset/batch_loader.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "augment/thread_pool.h"

namespace augmentd::dataset {

BatchLoader::BatchLoader(std::shared_ptr<const NnunetDataset> dataset, PatchSampler sampler, LoaderOptions options)
    : dataset_(std::move(dataset)), sampler_(std::move(sampler)), options_(std::move(options)) {
  options_.echo_factor = std::max<int64_t>(1, options_.echo_factor);
  options_.prefetch_batches = std::max<int64_t>(0, options_.prefetch_batches);
}

Shape BatchLoader::SampleDataShape(int64_t channels) const {
  Shape s{channels};
  const auto& p = sampler_.patch_size();
  s.insert(s.end(), p.begin() + (sampler_.patch_was_2d() ? 1 : 0), p.end());
  return s;
}

Shape BatchLoader::SampleSegShape() const {
  return SampleDataShape(dataset_->options().previous_stage_dir.empty() ? 1 : 2);
}

uint64_t BatchLoader::LoadIndex(uint64_t batch_index, int64_t j) const {
  const uint64_t i = batch_index * static_cast<uint64_t>(batch_size()) + static_cast<uint64_t>(j);
  return i / static_cast<uint64_t>(options_.echo_factor);
}

absl::StatusOr<std::shared_ptr<const CaseHandle>> BatchLoader::OpenForCrop(const std::string& id) const {
  if (options_.cache == nullptr) return dataset_->OpenCase(id);
  return options_.cache->OpenCase(id);
}

absl::StatusOr<SamplePlan> BatchLoader::PlanSample(uint64_t batch_index, int64_t j) const {
  return PlanSample(batch_index, j, nullptr);
}

absl::StatusOr<SamplePlan> BatchLoader::PlanSample(uint64_t batch_index, int64_t j,
                                                   std::shared_ptr<const CaseHandle>* opened) const {
  SamplePlan plan;
  plan.slot = j;
  plan.load_index = LoadIndex(batch_index, j);
  const uint64_t b = static_cast<uint64_t>(batch_size());
  const uint64_t lb = plan.load_index / b;                       // the sampler's batch …
  const int64_t lj = static_cast<int64_t>(plan.load_index % b);  // … and slot of this load
  plan.case_index = sampler_.ChooseCase(lb, lj);
  plan.case_id = sampler_.case_ids()[static_cast<size_t>(plan.case_index)];
  plan.force_fg = sampler_.ForceForeground(lb, lj);
  absl::StatusOr<std::shared_ptr<const CaseHandle>> c = OpenForCrop(plan.case_id);
  if (!c.ok()) return c.status();
  plan.case_shape = (*c)->data().shape();
  const Shape spatial = (*c)->spatial_shape();
  if (spatial.size() != 3) {
    return absl::FailedPreconditionError(absl::StrCat((*c)->data().path(), ": expected a (C, X, Y, Z) array"));
  }
  std::shared_ptr<const ClassLocations> loc;
  if (plan.force_fg || sampler_.options().has_ignore_label) {
    absl::StatusOr<std::shared_ptr<const ClassLocations>> l = dataset_->GetClassLocations(**c);
    if (!l.ok()) return l.status();
    loc = *l;
  }
  BoxChoice choice = sampler_.ChooseBox(lb, lj, spatial, plan.force_fg, loc.get());
  plan.key_index = choice.key_index;
  plan.box = std::move(choice.box);
  if (opened != nullptr) *opened = *c;
  return plan;
}

absl::StatusOr<std::vector<SamplePlan>> BatchLoader::PlanBatch(uint64_t batch_index) const {
  std::vector<SamplePlan> plans;
  for (int64_t j = 0; j < batch_size(); ++j) {
    absl::StatusOr<SamplePlan> p = PlanSample(batch_index, j);
    if (!p.ok()) return p.status();
    plans.push_back(*std::move(p));
  }
  return plans;
}

absl::Status BatchLoader::LoadSample(const SamplePlan& plan, const CaseHandle& c, float* data, size_t data_elems,
                                     int16_t* seg, size_t seg_elems) const {
  const Shape spatial = c.spatial_shape();
  const int64_t box_voxels = NumElements(plan.box.extent());
  const size_t need_data = static_cast<size_t>(c.num_channels() * box_voxels);
  const bool prev = c.seg_prev() != nullptr;
  const size_t need_seg = static_cast<size_t>((c.seg().shape()[0] + (prev ? 1 : 0)) * box_voxels);
  if (data_elems < need_data || seg_elems < need_seg) {
    return absl::InvalidArgumentError(absl::StrCat("output buffers too small for case ", c.id(), ": need ", need_data,
                                                   " data and ", need_seg, " seg elements"));
  }
  if (BoxMissesArray(plan.box, spatial)) {
    std::fill_n(data, need_data, 0.0f);
    std::fill_n(seg, need_seg, int16_t{0});
    return absl::OkStatus();
  }
  if (absl::Status st = c.data().ReadBox(plan.box, 0.0, DType::kFloat32, data, data_elems * sizeof(float)); !st.ok()) {
    return st;
  }
  if (absl::Status st = c.seg().ReadBox(plan.box, -1.0, DType::kInt16, seg, seg_elems * sizeof(int16_t)); !st.ok()) {
    return st;
  }
  if (!prev) return absl::OkStatus();
  // nnUNetDataLoader: crop_and_pad_nd(seg_prev, bbox, -1) concatenated as seg channel 1.
  const size_t first = static_cast<size_t>(c.seg().shape()[0] * box_voxels);
  return c.seg_prev()->ReadBox(plan.box, -1.0, DType::kInt16, seg + first, (seg_elems - first) * sizeof(int16_t));
}

absl::Status BatchLoader::LoadSample(const SamplePlan& plan, float* data, size_t data_elems, int16_t* seg,
                                     size_t seg_elems) const {
  absl::StatusOr<std::shared_ptr<const CaseHandle>> c = OpenForCrop(plan.case_id);
  if (!c.ok()) return c.status();
  return LoadSample(plan, **c, data, data_elems, seg, seg_elems);
}

void BatchLoader::PrefetchBatches(uint64_t first, uint64_t count) const {
  if (options_.cache == nullptr || count == 0) return;
  std::vector<std::string> ids;
  std::set<std::string> seen;
  const uint64_t b = static_cast<uint64_t>(batch_size());
  const uint64_t e = static_cast<uint64_t>(options_.echo_factor);
  const uint64_t begin = first * b / e, end = ((first + count) * b + e - 1) / e;  // load indices [begin, end)
  for (uint64_t l = begin; l < end; ++l) {
    const std::string& id = sampler_.case_ids()[static_cast<size_t>(sampler_.ChooseCase(l / b, static_cast<int64_t>(l % b)))];
    if (seen.insert(id).second) ids.push_back(id);
  }
  options_.cache->Prefetch(ids);
}

absl::StatusOr<BatchLoader::PlannedBatch> BatchLoader::PlanAll(uint64_t batch_index) const {
  if (options_.prefetch_batches > 0) PrefetchBatches(batch_index + 1, static_cast<uint64_t>(options_.prefetch_batches));
  const int64_t b = batch_size();
  PlannedBatch out;
  out.cases.assign(static_cast<size_t>(b), nullptr);
  int64_t channels = -1;
  for (int64_t j = 0; j < b; ++j) {
    absl::StatusOr<SamplePlan> p = PlanSample(batch_index, j, &out.cases[static_cast<size_t>(j)]);
    if (!p.ok()) return p.status();
    if (channels >= 0 && p->case_shape[0] != channels) {
      return absl::FailedPreconditionError(
          absl::StrCat("case ", p->case_id, " has ", p->case_shape[0], " channels, others ", channels));
    }
    channels = p->case_shape[0];
    out.samples.push_back(*std::move(p));
  }
  const Shape ds = SampleDataShape(channels), ss = SampleSegShape();
  out.data_shape = Shape{b};
  out.data_shape.insert(out.data_shape.end(), ds.begin(), ds.end());
  out.seg_shape = Shape{b};
  out.seg_shape.insert(out.seg_shape.end(), ss.begin(), ss.end());
  out.per_data = static_cast<size_t>(NumElements(ds));
  out.per_seg = static_cast<size_t>(NumElements(ss));
  return out;
}

absl::StatusOr<HostBatch> BatchLoader::LoadBatch(uint64_t batch_index) const {
  return LoadBatchInto(batch_index, nullptr, 0, nullptr, 0);
}

absl::StatusOr<HostBatch> BatchLoader::LoadBatchInto(uint64_t batch_index, float* data, size_t data_elems,
                                                     int16_t* seg, size_t seg_elems) const {
  absl::StatusOr<PlannedBatch> planned = PlanAll(batch_index);
  if (!planned.ok()) return planned.status();
  const std::vector<std::shared_ptr<const CaseHandle>>& cases = planned->cases;
  const size_t per_data = planned->per_data, per_seg = planned->per_seg;
  HostBatch batch;
  batch.samples = std::move(planned->samples);
  batch.data_shape = planned->data_shape;
  batch.seg_shape = planned->seg_shape;
  const size_t n = static_cast<size_t>(batch_size());
  if (data == nullptr) {  // LoadBatch: owned buffers
    batch.data.resize(per_data * n);
    batch.seg.resize(per_seg * n);
    data = batch.data.data();
    seg = batch.seg.data();
  } else if (data_elems < per_data * n || seg == nullptr || seg_elems < per_seg * n) {
    return absl::InvalidArgumentError(absl::StrCat("LoadBatchInto: buffers hold ", data_elems, " data and ", seg_elems,
                                                   " seg elements; the batch needs ", per_data * n, " and ",
                                                   per_seg * n));
  }
  // The first slot of each load crops (in parallel with options_.load_threads), then echoes copy their
  // predecessor in order. The first failing slot's error is returned, whatever the thread timing.
  auto echo = [&](size_t j) { return j > 0 && batch.samples[j].load_index == batch.samples[j - 1].load_index; };
  std::vector<size_t> loads;
  for (size_t j = 0; j < n; ++j)
    if (!echo(j)) loads.push_back(j);
  std::vector<absl::Status> status(loads.size());
  ParallelFor(static_cast<int64_t>(loads.size()), std::max(1, options_.load_threads), [&](int64_t i) {
    const size_t j = loads[static_cast<size_t>(i)];
    status[static_cast<size_t>(i)] =
        LoadSample(batch.samples[j], *cases[j], data + j * per_data, per_data, seg + j * per_seg, per_seg);
  });
  for (const absl::Status& st : status)
    if (!st.ok()) return st;
  for (size_t j = 1; j < n; ++j) {
    if (!echo(j)) continue;  // echo: same crop as the previous slot
    std::memcpy(data + j * per_data, data + (j - 1) * per_data, per_data * sizeof(float));
    std::memcpy(seg + j * per_seg, seg + (j - 1) * per_seg, per_seg * sizeof(int16_t));
  }
  return batch;
}

absl::StatusOr<DeviceBatch> BatchLoader::LoadBatchToDevice(uint64_t batch_index, const DeviceBatchBuffers& dst,
                                                           CUstream_st* stream) const {
  if (options_.cache == nullptr || !options_.cache->has_device_tier()) {
    return absl::FailedPreconditionError("LoadBatchToDevice needs a case cache with a GPU tier");
  }
  absl::StatusOr<PlannedBatch> planned = PlanAll(batch_index);
  if (!planned.ok()) return planned.status();
  const std::vector<std::shared_ptr<const CaseHandle>>& cases = planned->cases;
  const size_t per_data = planned->per_data, per_seg = planned->per_seg;
  const int64_t b = batch_size();
  DeviceBatch out;
  out.samples = std::move(planned->samples);
  out.data_shape = planned->data_shape;
  out.seg_shape = planned->seg_shape;
  if (dst.image == nullptr || dst.seg == nullptr || dst.image_elems < per_data * static_cast<size_t>(b) ||
      dst.seg_elems < per_seg * static_cast<size_t>(b)) {
    return absl::InvalidArgumentError(absl::StrCat("LoadBatchToDevice: buffers hold ", dst.image_elems, " image and ",
                                                   dst.seg_elems, " seg elements; the batch needs ",
                                                   per_data * static_cast<size_t>(b), " and ",
                                                   per_seg * static_cast<size_t>(b)));
  }
  std::vector<float> host_data;
  std::vector<int16_t> host_seg;
  for (size_t j = 0; j < static_cast<size_t>(b); ++j) {
    const SamplePlan& plan = out.samples[j];
    float* data = dst.image + j * per_data;
    int16_t* seg = dst.seg + j * per_seg;
    if (j > 0 && plan.load_index == out.samples[j - 1].load_index) {  // echo: same crop
      if (absl::Status st = CopyDeviceToDevice(data, data - per_data, per_data * sizeof(float), stream); !st.ok()) {
        return st;
      }
      if (absl::Status st = CopyDeviceToDevice(seg, seg - per_seg, per_seg * sizeof(int16_t), stream); !st.ok()) {
        return st;
      }
      ++out.echoed;
      continue;
    }
    absl::StatusOr<std::shared_ptr<const DeviceCase>> dev = options_.cache->GetDevice(plan.case_id);
    if (!dev.ok()) return dev.status();
    if (*dev != nullptr) {
      if (absl::Status st = CropOnDevice(**dev, plan.box, data, seg, stream); !st.ok()) return st;
      ++out.cropped_on_device;
      continue;
    }
    host_data.resize(per_data);
    host_seg.resize(per_seg);
    if (absl::Status st = LoadSample(plan, *cases[j], host_data.data(), per_data, host_seg.data(), per_seg); !st.ok()) {
      return st;
    }
    if (absl::Status st = CopyHostToDevice(data, host_data.data(), per_data * sizeof(float), stream); !st.ok()) {
      return st;
    }
    if (absl::Status st = CopyHostToDevice(seg, host_seg.data(), per_seg * sizeof(int16_t), stream); !st.ok()) {
      return st;
    }
    ++out.copied_from_host;
  }
  return out;
}

}  // namespace augmentd::dataset
