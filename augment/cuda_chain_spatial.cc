// ChainSpatial (cuda_chain_spatial.h): the generic spatial kernel's per-batch geometry and per-sample records.
#include "augment/cuda_chain_spatial.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "augment/json_util.h"
#include "augment/kernels/cpu_spatial.h"
#include "augment/kernels/cuda/pipeline_cuda.h"
#include "augment/status_macros.h"

namespace augmentd {
namespace ju = json_util;
namespace ch = cuda::chain;

bool ChainSpatial::Needed(const SpatialConfig& c) {
  if (c.dummy_2d || c.patch_size.size() != 3 || c.random_crop) return true;
  if (c.mode_seg != "bilinear" || c.mode_image != "bilinear") return true;
  if (c.padding_mode_image == "constant" && c.padding_value_image != 0) return true;
  if (c.border_mode_seg == "constant" && c.padding_value_seg != 0 && c.padding_value_seg != -1) return true;
  if (c.p_elastic_deform > 0)
    for (int64_t v : c.patch_size)
      if (v > cuda::kMaxElasticAxis) return true;
  return false;
}

absl::StatusOr<std::unique_ptr<ChainSpatial>> ChainSpatial::Create(const SpatialTransform& t, size_t index) {
  if (t.config().bg_style_seg_sampling) {
    return absl::UnimplementedError(absl::StrCat("CUDA engine: transform ", index,
                                                 " (spatial): bg_style_seg_sampling=True (bgv2's threshold label "
                                                 "mode has no CUDA kernel; run it on device \"cpu\")"));
  }
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
  g.image_fill = image_constant && c.padding_value_image != 0 ? 1 : 0;
  g.image_fill_value = static_cast<float>(c.padding_value_image);
  g.seg_fill = seg_constant && c.padding_value_seg != 0 ? 1 : 0;
  g.seg_fill_value = static_cast<int32_t>(c.padding_value_seg);
  g.image_crop_pad = image_constant ? static_cast<float>(c.padding_value_image) : 0.0f;
  g.seg_crop_pad = seg_constant ? static_cast<int32_t>(c.padding_value_seg) : 0;
  return g;
}

absl::Status ChainSpatial::AddSample(const SpatialParams* p, const ch::SpatialGeom& g, std::vector<float>& grids,
                                     ch::SpatialSampleRec& rec) const {
  const int nd = g.ndim;
  rec = ch::SpatialSampleRec{};
  if (p == nullptr) {
    for (int d = 0; d < nd; ++d) {
      if (g.in[d] != g.out[d]) {
        return absl::UnimplementedError(absl::StrCat("CUDA engine: transform ", index_,
                                                     " (spatial): not applied to a sample whose shape != patch"));
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
  return absl::OkStatus();
}

}  // namespace augmentd
