// ChainSpatial (cuda/chain_spatial.h): the generic spatial kernel's per-batch geometry and per-sample records.
#include "augment/cuda/chain_spatial.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "augment/json_util.h"
#include "augment/kernels/cpu_spatial.h"
#include "augment/kernels/cuda/pipeline_cuda.h"
#include "augment/status_macros.h"
#include "augment/transforms/common/common.h"

namespace augmentd {
namespace ju = json_util;
namespace ch = cuda::chain;

bool ChainSpatial::Needed(const SpatialConfig& c) {
  if (c.dummy_2d || c.patch_size.size() != 3 || c.random_crop || (c.bg_style_seg_sampling && !SegPadFirst(c)))
    return true;
  if (c.mode_seg != "bilinear" || c.mode_image != "bilinear") return true;
  if (c.padding_mode_image == "constant" && c.padding_value_image != 0) return true;
  if (c.border_mode_seg == "constant" && c.padding_value_seg != 0 && c.padding_value_seg != -1) return true;
  if (c.p_elastic_deform > 0)
    for (int64_t v : c.patch_size)
      if (v > cuda::kMaxElasticAxis) return true;
  return false;
}

namespace {
// bgv2 0.3.6's padding label, tie-break and shifted constant image padding on the generic kernel's geometry.
void SetPadFirst(const SpatialConfig& c, ch::SpatialGeom& g) {
  if (!SegPadFirst(c)) return;
  g.pad_first = 1;
  g.pad_label = c.border_mode_seg == "constant" ? static_cast<int32_t>(c.padding_value_seg) : 0;
  const std::string t = ResolvedSegTiebreak(c);
  g.tiebreak = t == "nearest" ? 1 : (t == "highest" ? 2 : 0);
  g.image_shifted = c.padding_mode_image == "constant" && c.padding_value_image != 0 ? 1 : 0;
  g.image_shift = static_cast<float>(c.padding_value_image);
}
}  // namespace

absl::StatusOr<std::unique_ptr<ChainSpatial>> ChainSpatial::Create(const SpatialTransform& t, size_t index) {
  return std::unique_ptr<ChainSpatial>(new ChainSpatial(t, index));
}

absl::StatusOr<ch::SpatialGeom> ChainSpatial::Geometry(const std::vector<int64_t>& sample, int64_t batch,
                                                       int64_t channels, int64_t seg_channels) const {
  const SpatialConfig& c = t_.config();
  ch::SpatialGeom g;
  std::vector<int64_t> work = sample;
  if (c.dummy_2d) {
    if (sample.size() != 3) return ju::Invalid("spatial.dummy_2d", "needs a 3D sample");
    g.fold = static_cast<int32_t>(sample[0]);
    work.erase(work.begin());
  }
  if (work.size() != c.patch_size.size()) {
    return ju::Invalid("spatial.patch_size", absl::StrCat("has ", c.patch_size.size(), " dims but the sample has ",
                                                          work.size(), " spatial dims",
                                                          c.dummy_2d ? " (dummy-2D)" : ""));
  }
  if (batch * g.fold > 65535) {
    return absl::UnimplementedError(absl::StrCat("CUDA engine: transform ", index_, " (spatial): batch × slices ",
                                                 batch * g.fold, " above the kernel's 65535 planes"));
  }
  g.ndim = static_cast<int32_t>(work.size());
  for (int d = 0; d < g.ndim; ++d) {
    g.in[d] = static_cast<int32_t>(work[d]);
    g.out[d] = static_cast<int32_t>(c.patch_size[d]);
  }
  g.batch = static_cast<int32_t>(batch);
  g.channels = static_cast<int32_t>(channels);
  g.seg_channels = static_cast<int32_t>(seg_channels);
  g.image_nearest = c.mode_image == "nearest" ? 1 : 0;
  g.seg_nearest = c.mode_seg == "nearest" ? 1 : 0;
  const bool image_constant = c.padding_mode_image == "constant", seg_constant = c.border_mode_seg == "constant";
  const bool pad_first = SegPadFirst(c);  // bgv2 0.3.6: pad, then resample; 0.3.5: fill out-of-bounds voxels
  g.image_fill = !pad_first && image_constant && c.padding_value_image != 0 ? 1 : 0;
  g.image_fill_value = static_cast<float>(c.padding_value_image);
  g.seg_fill = !pad_first && seg_constant && c.padding_value_seg != 0 ? 1 : 0;
  g.seg_fill_value = static_cast<int32_t>(c.padding_value_seg);
  g.image_crop_pad = image_constant ? static_cast<float>(c.padding_value_image) : 0.0f;
  g.seg_crop_pad = seg_constant ? static_cast<int32_t>(c.padding_value_seg) : 0;
  g.bg_style = !pad_first && c.bg_style_seg_sampling && !g.seg_nearest ? 1 : 0;
  SetPadFirst(c, g);
  return g;
}

absl::Status ChainSpatial::AddSample(const SpatialParams* p, const ch::SpatialGeom& g, std::vector<float>& grids,
                                     ch::SpatialSampleRec& rec) const {
  const int nd = g.ndim;
  rec = ch::SpatialSampleRec{};
  if (p == nullptr) {
    for (int d = 0; d < nd; ++d) {
      if (g.in[d] != g.out[d]) {
        return ju::Invalid("params", absl::StrCat("transform ", index_,
                                                  " (spatial) not applied to a sample whose shape is not its patch "
                                                  "shape: the batch's samples would disagree on their shape"));
      }
    }
    return absl::OkStatus();  // crop at 0: a copy
  }
  RETURN_IF_ERROR(SpatialTransform::ValidateParams(*p, nd));  // as the CPU transform
  const std::vector<float> offsets = t_.ElasticOffsets(*p);
  int64_t n_out = 1;
  for (int d = 0; d < nd; ++d) n_out *= g.out[d];
  if (!offsets.empty() && static_cast<int64_t>(offsets.size()) != n_out * nd)
    return ju::Invalid("params.elastic_offsets", "must have shape (*patch_size, ndim)");
  if (!p->affine && offsets.empty()) {
    for (int d = 0; d < nd; ++d) {
      const double start = std::floor(p->center_location_in_pixels[d]) - static_cast<double>(g.out[d] / 2);
      rec.start[d] = static_cast<int32_t>(start);
    }
    return absl::OkStatus();
  }
  kernels::GridSpec gs;
  gs.ndim = nd;
  for (int d = 0; d < nd; ++d) {
    gs.in_shape[d] = g.in[d];
    gs.out_shape[d] = g.out[d];
    gs.shift[d] = static_cast<float>(p->center_location_in_pixels[d] - static_cast<double>(g.in[d]) / 2.0);
  }
  if (p->affine) {
    gs.has_affine = true;
    for (int r = 0; r < nd; ++r)
      for (int k = 0; k < nd; ++k) gs.affine[r][k] = static_cast<float>((*p->affine)[r * nd + k]);
  }
  rec.grid = static_cast<int64_t>(grids.size());
  grids.resize(grids.size() + static_cast<size_t>(n_out * nd));
  const float* off = offsets.empty() ? nullptr : offsets.data();
  kernels::ComputeSamplingGrid(gs, off, t_.config().center_deformation && off != nullptr, grids.data() + rec.grid);
  // 0.3.6: whether the padding label votes in this sample (bgv2 decides it per sample from the whole grid)
  rec.pad_votes = g.pad_first && linear_seg() && kernels::MayReachOutside(gs, grids.data() + rec.grid) ? 1 : 0;
  return absl::OkStatus();
}

absl::Status ChainSpatial::Enqueue(const ch::SpatialGeom& g, const ch::SpatialSampleRec* recs, const float* grids,
                                   bool any_grid, const float* src_image, const int16_t* src_seg, float* out_image,
                                   int16_t* out_seg, ChainWorkspace& ws, int temp_slot, cudaStream_t stream) const {
  int16_t* lowest = nullptr;
  int32_t* num_labels = nullptr;   // bg_style and pad-first only
  int32_t* pad_present = nullptr;  // pad-first only
  const int64_t planes = int64_t{g.batch} * g.seg_channels * g.fold;
  int64_t plane_voxels = 1;
  for (int d = 0; d < g.ndim; ++d) plane_voxels *= g.in[d];
  if (g.seg_channels > 0 && linear_seg() && any_grid) {
    const int64_t counts_at = (static_cast<int64_t>(sizeof(int16_t)) * planes + 15) / 16 * 16;
    const int64_t present_at = counts_at + static_cast<int64_t>(sizeof(int32_t)) * planes;
    ASSIGN_OR_RETURN(void* low, ws.Scratch(temp_slot, present_at + sizeof(int32_t) * planes));
    lowest = static_cast<int16_t*>(low);
    if (g.bg_style || g.pad_first) num_labels = reinterpret_cast<int32_t*>(static_cast<char*>(low) + counts_at);
    if (g.pad_first) pad_present = reinterpret_cast<int32_t*>(static_cast<char*>(low) + present_at);
    RETURN_IF_ERROR(CudaStatus(ch::LaunchLowestPerPlane(static_cast<int32_t>(planes), plane_voxels, src_seg, lowest,
                                                        num_labels, stream, g.pad_label, pad_present),
                               "spatial label statistics"));
  }
  return CudaStatus(ch::LaunchSpatialGeneric(g, recs, grids, src_image, g.seg_channels > 0 ? src_seg : nullptr,
                                                  lowest, num_labels, out_image,
                                                  g.seg_channels > 0 ? out_seg : nullptr, stream, pad_present),
                         "spatial");
}

absl::Status ChainSpatialStage::Prepare(const std::vector<const TransformParams*>& params, const ChainTensors& t,
                                        ParamArena& arena) {
  if (two_d_ && t.shape[0] != 1) return absl::InternalError("CUDA chain: 2D samples without a unit leading axis");
  const std::vector<int64_t> sample = two_d_ ? std::vector<int64_t>{t.shape[1], t.shape[2]}
                                             : std::vector<int64_t>{t.shape[0], t.shape[1], t.shape[2]};
  ASSIGN_OR_RETURN(geom_, s_->Geometry(sample, t.batch, t.channels, t.seg_channels));
  recs_.assign(static_cast<size_t>(t.batch), ch::SpatialSampleRec{});
  grids_.clear();
  for (int32_t b = 0; b < t.batch; ++b) {
    const SpatialParams* p = nullptr;
    if (b < static_cast<int32_t>(params.size()) && params[b] != nullptr) {
      ASSIGN_OR_RETURN(p, transforms_internal::ParamsAs<SpatialParams>(*params[b], "spatial"));
    }
    RETURN_IF_ERROR(s_->AddSample(p, geom_, grids_, recs_[b]));
  }
  any_grid_ = std::any_of(recs_.begin(), recs_.end(), [](const ch::SpatialSampleRec& r) { return r.grid >= 0; });
  recs_offset_ = arena.AppendArray(recs_);
  grids_offset_ = arena.AppendArray(grids_);
  const std::vector<int64_t> out = s_->OutputShape(sample);
  const size_t lead = 3 - out.size();
  for (size_t d = 0; d < 3; ++d) out_[d] = d < lead ? 1 : static_cast<int32_t>(out[d - lead]);
  return absl::OkStatus();
}

absl::Status ChainSpatialStage::Enqueue(ChainTensors& t, const ParamArena& arena, ChainWorkspace& ws,
                                        cudaStream_t stream) {
  if (t.batch != geom_.batch || t.channels != geom_.channels || t.seg_channels != geom_.seg_channels)
    return absl::InternalError("CUDA chain: spatial stage enqueued with another batch than prepared");
  const int64_t n = int64_t{out_[0]} * out_[1] * out_[2];
  // Room for the channels a later move_seg_as_one_hot_to_data appends (ChainTensors::channel_capacity).
  const int64_t channel_room = std::max<int64_t>(t.channels, t.channel_capacity);
  ASSIGN_OR_RETURN(void* image, ws.Scratch(out_slot_, sizeof(float) * t.batch * channel_room * n));
  void* seg = nullptr;
  if (t.seg_channels > 0) {
    ASSIGN_OR_RETURN(seg, ws.Scratch(out_slot_ + 1, sizeof(int16_t) * t.batch * t.seg_capacity * n));
  }
  RETURN_IF_ERROR(s_->Enqueue(geom_, arena.device_as<ch::SpatialSampleRec>(recs_offset_),
                              arena.device_as<float>(grids_offset_), any_grid_, t.image, t.seg,
                              static_cast<float*>(image), static_cast<int16_t*>(seg), ws, temp_slot_, stream));
  t.image = static_cast<float*>(image);
  t.seg = static_cast<int16_t*>(seg);
  for (int d = 0; d < 3; ++d) t.shape[d] = out_[d];
  return absl::OkStatus();
}

}  // namespace augmentd
