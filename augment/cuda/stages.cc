// MakeCudaStage (cuda/stage.h) and the stages of the default transforms still outside their own folder.
// Each Prepare packs the CPU transform's drawn parameters (the same structs its Apply reads) into per-slice or
// per-sample records of chain_kernels.h; each Enqueue is one launcher call. Samples whose entry was not applied
// get "off" records (kernels skip them).
#include <algorithm>
#include <array>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "augment/cuda/backend.h"
#include "augment/cuda/stage.h"
#include "augment/cuda/slice_stage.h"
#include "augment/cuda/stages.h"
#include "augment/kernels/cuda/chain_kernels.h"
#include "augment/status_macros.h"
#include "augment/transforms/mirror/mirror.h"
#include "augment/transforms/rot90/rot90.h"
#include "augment/transforms/transpose_axes/transpose_axes.h"

namespace augmentd {
namespace {

namespace ch = cuda::chain;
using stage_internal::ImageDims;
using stage_internal::NotCovered;
using stage_internal::NamedStage;
using stage_internal::SegDims;
using stage_internal::SliceStage;

}  // namespace

// ---- Signed permutations: the shared stage (slice_stage.h) ----------------------------------------------------------
namespace stage_internal {

ch::PermuteSample ComposePermutations(const ch::PermuteSample& first, const ch::PermuteSample& second) {
  // src(o)[d] = first.flip[d] XOR second.flip[e] applied to o[second.perm[e]], e = first.perm[d] (exchanged axes have
  // equal sizes, so the flips compose). An off record is the identity whatever its fields hold.
  const ch::PermuteSample id{};
  const ch::PermuteSample& f = first.on ? first : id;
  const ch::PermuteSample& g = second.on ? second : id;
  ch::PermuteSample r;
  for (int d = 0; d < 3; ++d) {
    const int e = f.perm[d];
    r.perm[d] = g.perm[e];
    r.flip[d] = (f.flip[d] != 0) != (g.flip[e] != 0) ? 1 : 0;
    r.on |= (r.perm[d] != d || r.flip[d] != 0) ? 1 : 0;
  }
  return r;
}

absl::Status PermuteStage::Prepare(const std::vector<const TransformParams*>& params, const ChainTensors& t,
                                   ParamArena& arena) {
  host_.assign(static_cast<size_t>(t.batch), ch::PermuteSample{});
  for (size_t b = 0; b < params.size() && b < host_.size(); ++b) {
    if (params[b] == nullptr) continue;
    absl::StatusOr<ch::PermuteSample> p = SampleOf(*params[b], t);
    if (!p.ok()) return Invalid(std::string(p.status().message()));
    host_[b] = *p;
  }
  if (prev_ != nullptr) {
    if (prev_->host_.size() != host_.size()) return absl::InternalError("CUDA chain: linked permutations differ in batch");
    for (size_t b = 0; b < host_.size(); ++b) host_[b] = ComposePermutations(prev_->host_[b], host_[b]);
  }
  any_ = !forward_ && std::any_of(host_.begin(), host_.end(), [](const ch::PermuteSample& s) { return s.on != 0; });
  if (any_) offset_ = arena.AppendArray(host_);
  return absl::OkStatus();
}

absl::Status PermuteStage::Enqueue(ChainTensors& t, const ParamArena& arena, ChainWorkspace& ws, cudaStream_t stream) {
  if (!any_) return absl::OkStatus();
  const ch::Dims img = ImageDims(t), seg = SegDims(t);
  const bool with_seg = t.seg != nullptr && seg.slices() > 0;
  const size_t ibytes = sizeof(float) * img.slices() * img.voxels();
  const size_t sbytes = with_seg ? sizeof(int16_t) * seg.slices() * seg.voxels() : 0;
  // Scratch of the tensors' own capacity, so that the slots can exchange buffers.
  ASSIGN_OR_RETURN(void* itmp, ws.Scratch(kSlotImage, std::max(ibytes, ws.CapacityOf(t.image))));
  void* stmp = nullptr;
  if (with_seg) {
    ASSIGN_OR_RETURN(stmp, ws.Scratch(kSlotSeg, std::max(sbytes, ws.CapacityOf(t.seg))));
  }
  // Straight into the caller's output when the tensor is not there yet (ChainTensors::final_image / final_seg).
  float* idst = t.final_image != nullptr && t.image != t.final_image ? t.final_image : static_cast<float*>(itmp);
  int16_t* sdst = with_seg && t.final_seg != nullptr && t.seg != t.final_seg ? t.final_seg
                                                                             : static_cast<int16_t*>(stmp);
  const bool rows_kept =
      std::all_of(host_.begin(), host_.end(), [](const ch::PermuteSample& p) { return !p.on || p.perm[2] == 2; });
  RETURN_IF_ERROR(CudaStatus(ch::LaunchPermute(img, t.image, idst, seg, with_seg ? t.seg : nullptr, sdst,
                                               arena.device_as<ch::PermuteSample>(offset_), rows_kept, stream),
                             name_.c_str()));
  // The gathered copies become the tensors.
  const auto adopt = [&](auto*& tensor, auto* gathered, const void* slot_buffer, int slot,
                         size_t bytes) -> absl::Status {
    using Ptr = std::remove_reference_t<decltype(tensor)>;
    if (gathered != slot_buffer) {  // the caller's output
      tensor = gathered;
      return absl::OkStatus();
    }
    if (void* now = ws.Exchange(slot, tensor); now != nullptr) {
      tensor = static_cast<Ptr>(now);
      return absl::OkStatus();
    }
    return CudaStatus(cudaMemcpyAsync(tensor, gathered, bytes, cudaMemcpyDeviceToDevice, stream), name_.c_str());
  };
  RETURN_IF_ERROR(adopt(t.image, idst, itmp, kSlotImage, ibytes));
  if (with_seg) RETURN_IF_ERROR(adopt(t.seg, sdst, stmp, kSlotSeg, sbytes));
  return absl::OkStatus();
}

void LinkPermutations(CudaStage& first, CudaStage& second) {
  auto* a = dynamic_cast<PermuteStage*>(&first);
  auto* b = dynamic_cast<PermuteStage*>(&second);
  if (a != nullptr && b != nullptr) a->ForwardTo(*b);
}

}  // namespace stage_internal

absl::StatusOr<ch::PermuteSample> PermuteOf(const Transform& t, const TransformParams& params, const int32_t shape[3]) {
  const auto invalid = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(t.name()), ": ", why));
  };
  ch::PermuteSample sp;
  if (t.kind() == TransformKind::kMirror) {
    for (int64_t a : static_cast<const MirrorParams&>(params).axes) {
      if (a < 0 || a > 2) return invalid(absl::StrCat("params.axes: axis ", a, " out of range"));
      sp.flip[a] = 1;
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
      ch::PermuteSample step;
      step.on = 1;
      if (k == 2) {
        step.flip[a] = step.flip[b] = 1;
      } else {
        step.perm[a] = static_cast<int>(b);
        step.perm[b] = static_cast<int>(a);
        step.flip[k == 1 ? b : a] = 1;
      }
      sp = stage_internal::ComposePermutations(sp, step);
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

// mirror, rot90 and transpose_axes: PermuteOf of the entry's parameters.
class EntryPermuteStage final : public stage_internal::PermuteStage {
 public:
  EntryPermuteStage(const Transform& t, size_t index) : PermuteStage(t, index), t_(t) {}

 private:
  absl::StatusOr<ch::PermuteSample> SampleOf(const TransformParams& p, const ChainTensors& t) const override {
    return PermuteOf(t_, p, t.shape);
  }
  const Transform& t_;
};

}  // namespace

// The factories of the stages above, one per kind (registered in augment/cuda/backends.cc).
// mirror, rot90 and transpose_axes share the signed-permutation stage (one thin factory each: Make<Camel>Stage).
CudaStageOrError MakeMirrorStage(const Transform& t, size_t index) {
  return std::unique_ptr<CudaStage>(new EntryPermuteStage(t, index));
}
CudaStageOrError MakeRot90Stage(const Transform& t, size_t index) {
  return std::unique_ptr<CudaStage>(new EntryPermuteStage(t, index));
}
CudaStageOrError MakeTransposeAxesStage(const Transform& t, size_t index) {
  return std::unique_ptr<CudaStage>(new EntryPermuteStage(t, index));
}

CudaStageOrError MakeCudaStage(const Transform& t, size_t index) {
  const CudaBackend* backend = CudaBackendOf(t.kind());
  if (backend == nullptr) return NotCovered(t, index, "no CUDA stage");
  if (backend->make_stage == nullptr) return NotCovered(t, index, "run by the chain executor, not a stage");
  return backend->make_stage(t, index);
}

}  // namespace augmentd
