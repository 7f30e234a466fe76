// remove_random_connected_component's CUDA stage on the generic chain (augment/cuda/stage.h). Prepare turns each
// sample's drawn parameters (the CPU Draw: applied channels in order, u_c, u_f, u_o) into per-round records: round j
// holds every sample's j-th applied channel; the host resolves what does not depend on the data (the channel, the
// fill channel other[⌊u_o · |other|⌋] when u_f < fill_with_other_class_p, the size limit). Which component goes
// depends on the data: the kernels (cc_cuda_types.h, remove_random_connected_component.cu) label the components on
// the device and make the CPU's choice there (valid components in raster order of their first voxel, index
// min(⌊u_c · |valid|⌋, |valid| − 1)), so nothing is copied back to the host. Rounds that cannot affect each other
// (nnU-Net's cascade: fill_with_other_class_p = 0) run as one launch set of rounds · B slots. Exact (integer labels,
// the same double products as the CPU). Registered in augment/cuda/backends.cc.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "augment/cuda/slice_stage.h"
#include "augment/transforms/common/one_hot_channels.h"
#include "augment/transforms/remove_random_connected_component/cc_cuda_types.h"
#include "augment/transforms/remove_random_connected_component/remove_random_connected_component.h"

namespace augmentd {
namespace {
namespace ch = cuda::chain;
using stage_internal::NamedStage;

int64_t Pick(double u, size_t n) { return std::min<int64_t>(static_cast<int64_t>(u * static_cast<double>(n)), n - 1); }

class RemoveComponentStage final : public NamedStage {
 public:
  RemoveComponentStage(const RemoveRandomConnectedComponentTransform& t, size_t index)
      : NamedStage(t, index), c_(t.config()) {}

  absl::Status Prepare(const std::vector<const TransformParams*>& params, const ChainTensors& t,
                       ParamArena& arena) override {
    rounds_.clear();
    if (t.voxels() >= (int64_t{1} << 31)) return Invalid("more than 2^31 voxels per sample");
    std::vector<std::vector<ch::CcSample>> recs;
    const double n = static_cast<double>(t.voxels());
    for (size_t b = 0; b < params.size(); ++b) {
      if (params[b] == nullptr) continue;
      const auto* p = dynamic_cast<const RemoveRandomConnectedComponentParams*>(params[b]);
      if (p == nullptr) return Invalid("unexpected params");
      const size_t na = p->apply_to_channels.size();
      if (p->component_draw.size() != na || p->fill_draw.size() != na || p->other_class_draw.size() != na)
        return absl::InvalidArgumentError(
            "params: component_draw, fill_draw and other_class_draw need one entry per applied channel");
      for (size_t k = 0; k < na; ++k) {
        if (recs.size() <= k) recs.emplace_back(static_cast<size_t>(t.batch));
        const int64_t raw = p->apply_to_channels[k];
        ASSIGN_OR_RETURN(const int64_t a, one_hot_channels::Resolve(raw, t.channels, "params.apply_to_channels"));
        ch::CcSample& r = recs[k][b];
        r.on = 1;
        r.channel = static_cast<int32_t>(a);
        r.limit = n * c_.dont_do_if_covers_more_than_x_percent;
        r.component_draw = p->component_draw[k];
        r.fill_channel = -1;
        if (p->fill_draw[k] < c_.fill_with_other_class_p) {
          std::vector<int64_t> other;
          for (int64_t c : c_.channel_idx)
            if (c != raw) other.push_back(c);
          if (!other.empty()) {
            ASSIGN_OR_RETURN(const int64_t oc,
                             one_hot_channels::Resolve(other[Pick(p->other_class_draw[k], other.size())], t.channels,
                                                       "remove_random_connected_component.channel_idx"));
            r.fill_channel = static_cast<int32_t>(oc);
          }
        }
      }
    }
    // Independent rounds (no fill channel, each sample's channels distinct) run as one launch set: a round only
    // reads and writes its own channel then, so the CPU's order does not matter.
    bool independent = true;
    for (size_t b = 0; b < static_cast<size_t>(t.batch) && independent; ++b)
      for (size_t k = 0; k < recs.size() && independent; ++k) {
        const ch::CcSample& r = recs[k][b];
        if (!r.on) continue;
        independent = r.fill_channel < 0;
        for (size_t j = 0; j < k && independent; ++j) independent = !recs[j][b].on || recs[j][b].channel != r.channel;
      }
    together_ = independent && recs.size() > 1 && static_cast<int64_t>(recs.size()) * t.batch <= 65535;
    if (together_) {
      std::vector<ch::CcSample> all;
      for (const auto& r : recs) all.insert(all.end(), r.begin(), r.end());
      rounds_.push_back(arena.AppendArray(all));
      slots_ = static_cast<int32_t>(recs.size());
    } else {
      for (const auto& r : recs) rounds_.push_back(arena.AppendArray(r));
      slots_ = 1;
    }
    // Scratch for as many rounds as channel_idx allows at once when no fill can make them dependent (a slot regrowth
    // synchronises the device: sized once), else for what this batch needs.
    const int32_t most = c_.fill_with_other_class_p > 0 ? slots_ : static_cast<int32_t>(c_.channel_idx.size());
    max_slots_ = std::max(max_slots_, std::max(slots_, most));
    return absl::OkStatus();
  }

  absl::Status Enqueue(ChainTensors& t, const ParamArena& arena, ChainWorkspace& ws, cudaStream_t stream) override {
    // The scratch is taken even when no sample applies the entry, so that it is allocated in the first batch (a
    // later regrowth would synchronise the device in the middle of a run) and only looked up afterwards.
    const size_t slots = static_cast<size_t>(t.batch) * static_cast<size_t>(max_slots_);
    const size_t n = slots * t.voxels();
    const size_t tiles = slots * ch::CcTiles(t.voxels());
    // Slot kSlotStage: the mask, then (256-aligned) chosen and the tile counts (1 + 1/1024 bytes a voxel and slot);
    // slot + 1: labels and sizes (8 bytes a voxel and slot). Slots are shared along the chain and only grow (a
    // regrowth's cudaFree synchronises the device: once per run, not per batch).
    const size_t ints_at = (n + 255) / 256 * 256;
    ASSIGN_OR_RETURN(void* mask, ws.Scratch(ChainWorkspace::kSlotStage, ints_at + sizeof(int32_t) * (slots + tiles)));
    ASSIGN_OR_RETURN(void* ints, ws.Scratch(ChainWorkspace::kSlotStage + 1, sizeof(int32_t) * 2 * n));
    auto* labels = static_cast<int32_t*>(ints);
    auto* chosen = reinterpret_cast<int32_t*>(static_cast<uint8_t*>(mask) + ints_at);
    if (rounds_.empty()) return absl::OkStatus();
    for (size_t off : rounds_) {
      RETURN_IF_ERROR(CudaStatus(
          ch::LaunchRemoveComponentRound(t.batch, slots_, t.channels, t.shape, t.image,
                                         arena.device_as<ch::CcSample>(off), static_cast<uint8_t*>(mask), labels,
                                         labels + n, chosen, chosen + slots, stream),
          name_.c_str()));
    }
    return absl::OkStatus();
  }

 private:
  RemoveRandomConnectedComponentConfig c_;
  std::vector<size_t> rounds_;  // arena offsets: one per round, or one for all rounds (together_)
  bool together_ = false;
  int32_t slots_ = 1;      // rounds per launch set (rounds_.size() == 1 when together_)
  int32_t max_slots_ = 1;  // rounds the scratch is sized for
};

}  // namespace

CudaStageOrError MakeRemoveRandomConnectedComponentStage(const Transform& t, size_t index) {
  const auto* r = dynamic_cast<const RemoveRandomConnectedComponentTransform*>(&t);
  if (r == nullptr) return stage_internal::NotCovered(t, index, "unknown implementation");
  return std::unique_ptr<CudaStage>(new RemoveComponentStage(*r, index));
}

}  // namespace augmentd
