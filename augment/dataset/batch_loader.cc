#include "augment/dataset/batch_loader.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace augmentd::dataset {
namespace {

// crop_and_pad_nd returns np.zeros when the box misses the array on some axis (before padding).
bool MissesImage(const Box& box, const Shape& spatial) {
  for (size_t d = 0; d < box.rank(); ++d) {
    if (box.ub[d] <= 0 || box.lb[d] >= spatial[d]) return true;
  }
  return false;
}

}  // namespace

Shape BatchLoader::SampleDataShape(int64_t channels) const {
  Shape s{channels};
  const auto& p = sampler_.patch_size();
  s.insert(s.end(), p.begin() + (sampler_.patch_was_2d() ? 1 : 0), p.end());
  return s;
}

Shape BatchLoader::SampleSegShape() const { return SampleDataShape(1); }

absl::StatusOr<SamplePlan> BatchLoader::PlanSample(uint64_t batch_index, int64_t j) const {
  return PlanSample(batch_index, j, nullptr);
}

absl::StatusOr<SamplePlan> BatchLoader::PlanSample(uint64_t batch_index, int64_t j,
                                                   std::shared_ptr<const CaseHandle>* opened) const {
  SamplePlan plan;
  plan.slot = j;
  plan.case_index = sampler_.ChooseCase(batch_index, j);
  plan.case_id = sampler_.case_ids()[static_cast<size_t>(plan.case_index)];
  plan.force_fg = sampler_.ForceForeground(batch_index, j);
  absl::StatusOr<std::shared_ptr<const CaseHandle>> c = dataset_->OpenCase(plan.case_id);
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
  BoxChoice choice = sampler_.ChooseBox(batch_index, j, spatial, plan.force_fg, loc.get());
  plan.key_index = choice.key_index;
  plan.box = std::move(choice.box);
  if (opened != nullptr) *opened = *c;
  return plan;
}

absl::StatusOr<std::vector<SamplePlan>> BatchLoader::PlanBatch(uint64_t batch_index) const {
  std::vector<SamplePlan> plans;
  for (int64_t j = 0; j < sampler_.options().batch_size; ++j) {
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
  const size_t need_seg = static_cast<size_t>(c.seg().shape()[0] * box_voxels);
  if (data_elems < need_data || seg_elems < need_seg) {
    return absl::InvalidArgumentError(absl::StrCat("output buffers too small for case ", c.id(), ": need ", need_data,
                                                   " data and ", need_seg, " seg elements"));
  }
  if (MissesImage(plan.box, spatial)) {
    std::fill_n(data, need_data, 0.0f);
    std::fill_n(seg, need_seg, int16_t{0});
    return absl::OkStatus();
  }
  if (absl::Status st = c.data().ReadBox(plan.box, 0.0, DType::kFloat32, data, data_elems * sizeof(float)); !st.ok()) {
    return st;
  }
  return c.seg().ReadBox(plan.box, -1.0, DType::kInt16, seg, seg_elems * sizeof(int16_t));
}

absl::Status BatchLoader::LoadSample(const SamplePlan& plan, float* data, size_t data_elems, int16_t* seg,
                                     size_t seg_elems) const {
  absl::StatusOr<std::shared_ptr<const CaseHandle>> c = dataset_->OpenCase(plan.case_id);
  if (!c.ok()) return c.status();
  return LoadSample(plan, **c, data, data_elems, seg, seg_elems);
}

absl::StatusOr<HostBatch> BatchLoader::LoadBatch(uint64_t batch_index) const {
  HostBatch batch;
  const int64_t b = sampler_.options().batch_size;
  int64_t channels = -1;
  std::vector<std::shared_ptr<const CaseHandle>> cases(static_cast<size_t>(b));
  for (int64_t j = 0; j < b; ++j) {
    absl::StatusOr<SamplePlan> p = PlanSample(batch_index, j, &cases[static_cast<size_t>(j)]);
    if (!p.ok()) return p.status();
    if (channels >= 0 && p->case_shape[0] != channels) {
      return absl::FailedPreconditionError(
          absl::StrCat("case ", p->case_id, " has ", p->case_shape[0], " channels, others ", channels));
    }
    channels = p->case_shape[0];
    batch.samples.push_back(*std::move(p));
  }
  const Shape ds = SampleDataShape(channels), ss = SampleSegShape();
  batch.data_shape = Shape{b};
  batch.data_shape.insert(batch.data_shape.end(), ds.begin(), ds.end());
  batch.seg_shape = Shape{b};
  batch.seg_shape.insert(batch.seg_shape.end(), ss.begin(), ss.end());
  const size_t per_data = static_cast<size_t>(NumElements(ds)), per_seg = static_cast<size_t>(NumElements(ss));
  batch.data.resize(per_data * static_cast<size_t>(b));
  batch.seg.resize(per_seg * static_cast<size_t>(b));
  for (int64_t j = 0; j < b; ++j) {
    const size_t jj = static_cast<size_t>(j);
    if (absl::Status st = LoadSample(batch.samples[jj], *cases[jj], batch.data.data() + jj * per_data, per_data,
                                     batch.seg.data() + jj * per_seg, per_seg);
        !st.ok()) {
      return st;
    }
  }
  return batch;
}

}  // namespace augmentd::dataset
