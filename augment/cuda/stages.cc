// MakeCudaStage (cuda/stage.h) and the stages of the default transforms still outside their own folder.
// Each Prepare packs the CPU transform's drawn parameters (the same structs its Apply reads) into per-slice or
// per-sample records of chain_kernels.h; each Enqueue is one launcher call. Samples whose entry was not applied
// get "off" records (kernels skip them).
#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "augment/cuda/backend.h"
#include "augment/cuda/stage.h"
#include "augment/cuda/slice_stage.h"
#include "augment/cuda/stages.h"
#include "augment/kernels/cpu_blur.h"
#include "augment/kernels/cpu_resample.h"
#include "augment/kernels/cuda/chain_kernels.h"
#include "augment/status_macros.h"
#include "augment/transforms/convert_segmentation_to_regions.h"
#include "augment/transforms/gaussian_blur.h"
#include "augment/transforms/mask_image.h"
#include "augment/transforms/mirror.h"
#include "augment/transforms/remove_label.h"
#include "augment/transforms/rot90.h"
#include "augment/transforms/simulate_low_resolution.h"
#include "augment/transforms/transpose_axes.h"

namespace augmentd {
namespace {

namespace ch = cuda::chain;
using stage_internal::ImageDims;
using stage_internal::NamedStage;
using stage_internal::SegDims;
using stage_internal::SliceStage;

#define AUGMENTD_STAGE_CUDA_OK(expr) RETURN_IF_ERROR(CudaStatus((expr), #expr))

// ---- gaussian_blur: the CPU's own float taps (GaussianKernel1D) per slice and axis --------------------------------
class BlurStage final : public SliceStage<ch::BlurSlice> {
 public:
  using SliceStage::SliceStage;
  absl::Status BeginBatch(const ChainTensors&) override {
    weights_.clear();
    return absl::OkStatus();
  }
  absl::Status Fill(const TransformParams& tp, const ChainTensors& t, ch::BlurSlice* row) override {
    const auto& p = static_cast<const GaussianBlurParams&>(tp);
    if (p.sigmas.size() != p.apply_to_channel.size()) return Invalid("one sigma list per selected channel");
    for (size_t k = 0; k < p.apply_to_channel.size(); ++k) {
      const int64_t c = p.apply_to_channel[k];
      RETURN_IF_ERROR(CheckChannel(c, t));
      if (p.sigmas[k].size() != 3) return Invalid("needs 3 sigmas per channel");
      for (int d = 0; d < 3; ++d) {
        const std::vector<float> taps = kernels::GaussianKernel1D(p.sigmas[k][d]);
        const int ks = static_cast<int>(taps.size());
        if (t.shape[d] <= ks / 2) {
          return Invalid(absl::StrCat("kernel of ", ks, " taps needs axis ", d, " longer than ", ks / 2,
                                      " (reflect padding)"));
        }
        row[c].offset[d] = static_cast<int32_t>(weights_.size());
        row[c].taps[d] = ks;
        weights_.insert(weights_.end(), taps.begin(), taps.end());
      }
      row[c].on = 1;
    }
    return absl::OkStatus();
  }
  void AppendExtra(ParamArena& arena) override { weights_offset_ = arena.AppendArray(weights_); }
  absl::Status Launch(ChainTensors& t, const ch::BlurSlice* d, const ParamArena& arena, ChainWorkspace& ws,
                      cudaStream_t s) override {
    const ch::Dims dims = ImageDims(t);
    ASSIGN_OR_RETURN(void* tmp,
                     ws.Scratch(ChainWorkspace::kSlotStage, 2 * sizeof(float) * dims.slices() * dims.voxels()));
    return CudaStatus(
        ch::LaunchBlur(dims, t.image, d, arena.device_as<float>(weights_offset_), static_cast<float*>(tmp), s),
        "gaussian_blur");
  }

 private:
  std::vector<float> weights_;
  size_t weights_offset_ = 0;
};

// ---- simulate_low_resolution: Q_d = round_half_even(S_d · float32 scale) as the CPU -------------------------------
class LowResStage final : public SliceStage<ch::LowResSlice> {
 public:
  using SliceStage::SliceStage;
  absl::Status Fill(const TransformParams& tp, const ChainTensors& t, ch::LowResSlice* row) override {
    const auto& p = static_cast<const SimulateLowResolutionParams&>(tp);
    if (p.scales.size() != p.apply_to_channel.size()) return Invalid("one scale list per selected channel");
    for (size_t k = 0; k < p.apply_to_channel.size(); ++k) {
      const int64_t c = p.apply_to_channel[k];
      RETURN_IF_ERROR(CheckChannel(c, t));
      if (p.scales[k].size() != 3) return Invalid("needs 3 scales per channel");
      for (int d = 0; d < 3; ++d) {
        const int64_t q = kernels::PyRoundToInt(static_cast<double>(t.shape[d]) * static_cast<double>(p.scales[k][d]));
        if (q < 1) return Invalid("params.scales: scale rounds an axis to size 0");
        if (q > t.shape[d]) return Invalid("params.scales: low-resolution shape larger than the patch");
        row[c].q[d] = static_cast<int32_t>(q);
      }
      row[c].on = 1;
    }
    return absl::OkStatus();
  }
  absl::Status Launch(ChainTensors& t, const ch::LowResSlice* d, const ParamArena&, ChainWorkspace& ws,
                      cudaStream_t s) override {
    const ch::Dims dims = ImageDims(t);
    ASSIGN_OR_RETURN(void* tmp, ws.Scratch(ChainWorkspace::kSlotStage, sizeof(float) * dims.slices() * dims.voxels()));
    return CudaStatus(ch::LaunchLowRes(dims, t.image, d, static_cast<float*>(tmp), s), "simulate_low_resolution");
  }
};

// ---- mirror / rot90 / transpose_axes: one signed permutation per sample -----------------------------------------
struct SignedPerm {
  std::array<int, 3> perm{0, 1, 2};
  std::array<bool, 3> flip{false, false, false};
};
// `second` applied after `first`: src(o)[d] = first.flip[d] XOR second.flip[e] applied to o[second.perm[e]],
// e = first.perm[d] (exchanged axes have equal sizes, so the flips compose).
SignedPerm Compose(const SignedPerm& first, const SignedPerm& second) {
  SignedPerm r;
  for (int d = 0; d < 3; ++d) {
    const int e = first.perm[d];
    r.perm[d] = second.perm[e];
    r.flip[d] = first.flip[d] != second.flip[e];
  }
  return r;
}

}  // namespace

absl::StatusOr<ch::PermuteSample> PermuteOf(const Transform& t, const TransformParams& params, const int32_t shape[3]) {
  const auto invalid = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(t.name()), ": ", why));
  };
  SignedPerm sp;
  if (t.kind() == TransformKind::kMirror) {
    for (int64_t a : static_cast<const MirrorParams&>(params).axes) {
      if (a < 0 || a > 2) return invalid(absl::StrCat("params.axes: axis ", a, " out of range"));
      sp.flip[a] = true;
    }
  } else if (t.kind() == TransformKind::kTransposeAxes) {
    const auto& order = static_cast<const TransposeAxesParams&>(params).axis_order;
    if (order.size() != 4 || order[0] != 0) return invalid("params.axis_order: expected a permutation of 4 dims");
    std::array<bool, 3> seen{false, false, false};
    for (int j = 0; j < 3; ++j) {
      const int64_t src = order[j + 1] - 1;
      if (src < 0 || src > 2 || seen[src]) return invalid("params.axis_order: not a permutation");
      seen[src] = true;
      sp.perm[src] = j;
    }
  } else if (t.kind() == TransformKind::kRot90) {
    const auto& p = static_cast<const Rot90Params&>(params);
    if (p.num_rot_per_combination.size() != p.axis_combinations.size())
      return invalid("params.axis_combinations: one entry per num_rot_per_combination entry");
    for (size_t i = 0; i < p.axis_combinations.size(); ++i) {
      const int64_t k = ((p.num_rot_per_combination[i] % 4) + 4) % 4;
      const int64_t a = p.axis_combinations[i][0] - 1, b = p.axis_combinations[i][1] - 1;
      if (a < 0 || b < 0 || a > 2 || b > 2 || a == b) return invalid("params.axis_combinations: bad dims");
      if (k == 0) continue;
      // torch.rot90 as the CPU transform: k=1 src[a]=o[b], src[b]=S−1−o[a]; k=3 mirrored; k=2 flips both.
      SignedPerm step;
      if (k == 2) {
        step.flip[a] = step.flip[b] = true;
      } else {
        step.perm[a] = static_cast<int>(b);
        step.perm[b] = static_cast<int>(a);
        step.flip[k == 1 ? b : a] = true;
      }
      sp = Compose(sp, step);
    }
  } else {
    return invalid("not a permutation transform");
  }
  ch::PermuteSample out;
  for (int d = 0; d < 3; ++d) {
    if (shape[d] != shape[sp.perm[d]])
      return invalid(absl::StrCat("exchanging axes ", d, " and ", sp.perm[d], " of different sizes (",
                                  shape[d], " vs ", shape[sp.perm[d]], ")"));
    out.perm[d] = sp.perm[d];
    out.flip[d] = sp.flip[d] ? 1 : 0;
    out.on |= (sp.perm[d] != d || sp.flip[d]) ? 1 : 0;
  }
  return out;
}

namespace {

class PermuteStage final : public NamedStage {
 public:
  PermuteStage(const Transform& t, size_t index) : NamedStage(t, index), t_(t) {}
  absl::Status Prepare(const std::vector<const TransformParams*>& params, const ChainTensors& t,
                       ParamArena& arena) override {
    host_.assign(static_cast<size_t>(t.batch), ch::PermuteSample{});
    for (size_t b = 0; b < params.size(); ++b) {
      if (params[b] == nullptr) continue;
      absl::StatusOr<ch::PermuteSample> p = PermuteOf(t_, *params[b], t.shape);
      if (!p.ok()) return Invalid(std::string(p.status().message()));
      host_[b] = *p;
    }
    any_ = std::any_of(host_.begin(), host_.end(), [](const ch::PermuteSample& s) { return s.on != 0; });
    offset_ = arena.AppendArray(host_);
    return absl::OkStatus();
  }
  absl::Status Enqueue(ChainTensors& t, const ParamArena& arena, ChainWorkspace& ws, cudaStream_t stream) override {
    if (!any_) return absl::OkStatus();
    const ch::Dims img = ImageDims(t), seg = SegDims(t);
    ASSIGN_OR_RETURN(void* itmp, ws.Scratch(ChainWorkspace::kSlotStage, sizeof(float) * img.slices() * img.voxels()));
    void* stmp = nullptr;
    if (t.seg != nullptr && seg.slices() > 0) {
      ASSIGN_OR_RETURN(stmp, ws.Scratch(ChainWorkspace::kSlotStage + 1, sizeof(int16_t) * seg.slices() * seg.voxels()));
    }
    return CudaStatus(ch::LaunchPermute(img, t.image, static_cast<float*>(itmp), seg, t.seg,
                                             static_cast<int16_t*>(stmp), arena.device_as<ch::PermuteSample>(offset_),
                                             stream),
                           name_.c_str());
  }

 private:
  const Transform& t_;
  std::vector<ch::PermuteSample> host_;
  bool any_ = false;
  size_t offset_ = 0;
};

// Per-sample "applied" flags of a deterministic entry (mask_image, remove_label).
class FlagStage : public NamedStage {
 public:
  absl::Status Prepare(const std::vector<const TransformParams*>& params, const ChainTensors& t,
                       ParamArena& arena) override {
    on_.assign(static_cast<size_t>(t.batch), 0);
    for (size_t b = 0; b < params.size(); ++b) on_[b] = params[b] != nullptr ? 1 : 0;
    any_ = std::find(on_.begin(), on_.end(), 1) != on_.end();
    offset_ = arena.AppendArray(on_);
    return Check(t);
  }
  absl::Status Enqueue(ChainTensors& t, const ParamArena& arena, ChainWorkspace&, cudaStream_t stream) override {
    if (!any_ || t.seg == nullptr || t.seg_channels == 0) return absl::OkStatus();
    return CudaStatus(Launch(t, arena.device_as<int32_t>(offset_), stream), name_.c_str());
  }

 public:
  using NamedStage::NamedStage;

 protected:
  virtual absl::Status Check(const ChainTensors& t) const = 0;
  virtual cudaError_t Launch(ChainTensors& t, const int32_t* on, cudaStream_t stream) const = 0;
  bool any_ = false;

 private:
  std::vector<int32_t> on_;
  size_t offset_ = 0;
};

class MaskImageStage final : public FlagStage {
 public:
  MaskImageStage(const MaskImageTransform& t, size_t index) : FlagStage(t, index), c_(t.config()) {
    for (int64_t c : c_.apply_to_channels)
      if (c >= 0 && c < 64) bits_ |= uint64_t{1} << c;
  }
  absl::Status Check(const ChainTensors& t) const override {
    if (!any_ || c_.apply_to_channels.empty()) return absl::OkStatus();
    if (t.seg_channels == 0) return Invalid("needs a segmentation");
    if (c_.channel_idx_in_seg >= t.seg_channels) return Invalid("mask_image.channel_idx_in_seg out of range");
    for (int64_t c : c_.apply_to_channels)
      if (c >= t.channels) return Invalid(absl::StrCat("mask_image.apply_to_channels: channel ", c, " out of range"));
    return absl::OkStatus();
  }
  cudaError_t Launch(ChainTensors& t, const int32_t* on, cudaStream_t stream) const override {
    if (bits_ == 0) return cudaSuccess;
    return ch::LaunchMaskImage(ImageDims(t), t.image, SegDims(t), t.seg, static_cast<int32_t>(c_.channel_idx_in_seg),
                               bits_, static_cast<float>(c_.set_outside_to), on, stream);
  }

 private:
  MaskImageConfig c_;
  uint64_t bits_ = 0;
};

class RemoveLabelStage final : public FlagStage {
 public:
  RemoveLabelStage(const RemoveLabelTransform& t, size_t index) : FlagStage(t, index), c_(t.config()) {}
  absl::Status Check(const ChainTensors& t) const override {
    if (c_.segmentation_channels)
      for (int64_t c : *c_.segmentation_channels)
        if (c >= t.seg_channels && t.seg_channels > 0 && any_)
          return Invalid(absl::StrCat("remove_label.segmentation_channels: channel ", c, " out of range"));
    return absl::OkStatus();
  }
  cudaError_t Launch(ChainTensors& t, const int32_t* on, cudaStream_t stream) const override {
    uint64_t bits = 0;
    if (c_.segmentation_channels) {
      for (int64_t c : *c_.segmentation_channels) bits |= uint64_t{1} << c;
    } else {
      bits = ~uint64_t{0};
    }
    return ch::LaunchReplaceLabel(SegDims(t), t.seg, bits, static_cast<int16_t>(c_.label_value),
                                  static_cast<int16_t>(c_.set_to), on, stream);
  }

 private:
  RemoveLabelConfig c_;
};

// ---- convert_segmentation_to_regions: every sample (the executor refuses apply_probability < 1) -------------------
class RegionsStage final : public NamedStage {
 public:
  RegionsStage(const ConvertSegmentationToRegionsTransform& t, size_t index)
      : NamedStage(t, index), c_(t.config()) {
    offsets_.push_back(0);
    for (const auto& r : c_.regions) {
      for (int64_t l : r) labels_.push_back(static_cast<int16_t>(l));
      offsets_.push_back(static_cast<int32_t>(labels_.size()));
    }
  }
  absl::Status Prepare(const std::vector<const TransformParams*>& params, const ChainTensors& t,
                       ParamArena& arena) override {
    for (const TransformParams* p : params)
      if (p == nullptr) return absl::UnimplementedError(absl::StrCat(
                            "CUDA chain: transform ", index_, " (", name_, "): apply_probability < 1"));
    if (t.seg_channels > 0 && c_.channel_in_seg >= t.seg_channels)
      return Invalid("convert_segmentation_to_regions.channel_in_seg out of range");
    offsets_offset_ = arena.AppendArray(offsets_);
    labels_offset_ = arena.AppendArray(labels_);
    return absl::OkStatus();
  }
  absl::Status Enqueue(ChainTensors& t, const ParamArena& arena, ChainWorkspace& ws, cudaStream_t stream) override {
    if (t.seg == nullptr || t.seg_channels == 0) return absl::OkStatus();
    const int32_t regions = static_cast<int32_t>(c_.regions.size());
    if (regions > t.seg_capacity) return absl::InternalError("CUDA chain: seg scratch smaller than the regions");
    const int64_t n = t.voxels();
    ASSIGN_OR_RETURN(void* src, ws.Scratch(ChainWorkspace::kSlotStage, sizeof(int16_t) * t.batch * n));
    auto* s = static_cast<int16_t*>(src);
    AUGMENTD_STAGE_CUDA_OK(ch::LaunchSegChannelCopy(t.batch, t.seg_channels, n,
                                                    static_cast<int32_t>(c_.channel_in_seg), t.seg, s, false, stream));
    AUGMENTD_STAGE_CUDA_OK(ch::LaunchRegions(t.batch, n, s, t.seg, regions, arena.device_as<int32_t>(offsets_offset_),
                                             arena.device_as<int16_t>(labels_offset_), stream));
    t.seg_channels = regions;
    t.seg_is_bool = true;
    return absl::OkStatus();
  }

 private:
  ConvertSegmentationToRegionsConfig c_;
  std::vector<int32_t> offsets_;
  std::vector<int16_t> labels_;
  size_t offsets_offset_ = 0, labels_offset_ = 0;
};

absl::Status NotCovered(const Transform& t, size_t index, std::string_view why) {
  return absl::UnimplementedError(absl::StrCat("CUDA engine: transform ", index, " (", std::string(t.name()), "): ",
                                               std::string(why), " (run it on device \"cpu\")"));
}

}  // namespace

// The factories of the stages above, one per kind (registered in augment/cuda/backends.cc).
CudaStageOrError MakeGaussianBlurStage(const Transform& t, size_t index) {
  return std::unique_ptr<CudaStage>(new BlurStage(t, index));
}
CudaStageOrError MakeLowResStage(const Transform& t, size_t index) {
  return std::unique_ptr<CudaStage>(new LowResStage(t, index));
}
CudaStageOrError MakePermuteStage(const Transform& t, size_t index) {  // mirror, rot90, transpose_axes
  return std::unique_ptr<CudaStage>(new PermuteStage(t, index));
}
CudaStageOrError MakeMaskImageStage(const Transform& t, size_t index) {
  return std::unique_ptr<CudaStage>(new MaskImageStage(static_cast<const MaskImageTransform&>(t), index));
}
CudaStageOrError MakeRemoveLabelStage(const Transform& t, size_t index) {
  const auto& r = static_cast<const RemoveLabelTransform&>(t);
  const RemoveLabelConfig& c = r.config();
  if (c.label_value < INT16_MIN || c.label_value > INT16_MAX || c.set_to < INT16_MIN || c.set_to > INT16_MAX)
    return NotCovered(t, index, "label values outside int16");
  if (c.segmentation_channels)
    for (int64_t k : *c.segmentation_channels)
      if (k < 0 || k >= 64) return NotCovered(t, index, "segmentation_channels outside 0..63");
  return std::unique_ptr<CudaStage>(new RemoveLabelStage(r, index));
}
CudaStageOrError MakeRegionsStage(const Transform& t, size_t index) {
  const auto& r = static_cast<const ConvertSegmentationToRegionsTransform&>(t);
  for (const auto& region : r.config().regions)
    for (int64_t l : region)
      if (l < INT16_MIN || l > INT16_MAX) return NotCovered(t, index, "region labels outside int16");
  return std::unique_ptr<CudaStage>(new RegionsStage(r, index));
}

CudaStageOrError MakeCudaStage(const Transform& t, size_t index) {
  const CudaBackend* backend = CudaBackendOf(t.kind());
  if (backend == nullptr) return NotCovered(t, index, "no CUDA stage");
  if (backend->make_stage == nullptr) return NotCovered(t, index, "run by the chain executor, not a stage");
  return backend->make_stage(t, index);
}

}  // namespace augmentd
