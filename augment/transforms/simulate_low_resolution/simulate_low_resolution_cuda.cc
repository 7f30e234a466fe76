// simulate_low_resolution's CUDA stage on the generic chain (augment/cuda/stage.h): the CPU's target shapes Q_d =
// round_half_even(S_d · float32 scale) per slice, nearest-exact down and linear up per batch (chain_kernels.h
// LaunchLowRes). Registered in augment/cuda/backends.cc.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "augment/cuda/slice_stage.h"
#include "augment/kernels/cpu_resample.h"
#include "augment/transforms/simulate_low_resolution/simulate_low_resolution.h"

namespace augmentd {
namespace {
namespace ch = cuda::chain;
using stage_internal::FlagStage;
using stage_internal::ImageDims;
using stage_internal::NamedStage;
using stage_internal::NotCovered;
using stage_internal::SegDims;
using stage_internal::SliceStage;

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

}  // namespace

CudaStageOrError MakeSimulateLowResolutionStage(const Transform& t, size_t index) {
  return std::unique_ptr<CudaStage>(new LowResStage(t, index));
}

}  // namespace augmentd
