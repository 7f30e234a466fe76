// apply_random_binary_operator's CUDA stage on the generic chain (augment/cuda/stage.h). Prepare resolves each
// sample's drawn channels, operators and radii (the CPU Draw) into per-round records: round j holds every sample's
// j-th applied channel (the CPU applies a sample's channels in order, each reading the previous results), with the
// footprint given by its per-axis costs (binary_operator_internal::AxisCosts: disk for 2D samples, ball for 3D) and
// r². Enqueue runs the rounds (binop_cuda_types.h, apply_random_binary_operator.cu): the CPU's exact separable
// method, float64 additions only, so GPU = CPU bit for bit; nothing is copied back or synchronised.
// Registered in augment/cuda/backends.cc.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "augment/cuda/slice_stage.h"
#include "augment/transforms/apply_random_binary_operator/apply_random_binary_operator.h"
#include "augment/transforms/apply_random_binary_operator/binop_cuda_types.h"
#include "augment/transforms/apply_random_binary_operator/binop_passes.h"
#include "augment/transforms/common/one_hot_channels.h"

namespace augmentd {
namespace {
namespace ch = cuda::chain;
using stage_internal::NamedStage;

void Passes(BinaryOperator op, int32_t& p1, int32_t& p2) {
  switch (op) {
    case BinaryOperator::kDilation: p1 = ch::kBinopDilate; p2 = ch::kBinopNone; return;
    case BinaryOperator::kErosion: p1 = ch::kBinopErode; p2 = ch::kBinopNone; return;
    case BinaryOperator::kOpening: p1 = ch::kBinopErode; p2 = ch::kBinopDilate; return;
    case BinaryOperator::kClosing: p1 = ch::kBinopDilate; p2 = ch::kBinopErode; return;
  }
}

class BinaryOperatorStage final : public NamedStage {
 public:
  BinaryOperatorStage(const ApplyRandomBinaryOperatorTransform& t, size_t index)
      : NamedStage(t, index), c_(t.config()) {}

  absl::Status Prepare(const std::vector<const TransformParams*>& params, const ChainTensors& t,
                       ParamArena& arena) override {
    rounds_.clear();
    if (t.channels > 64) return Invalid("more than 64 image channels");
    if (t.voxels() >= (int64_t{1} << 31)) return Invalid("more than 2^31 voxels per sample");
    const int ndim = t.two_d ? 2 : 3;
    std::vector<std::vector<ch::BinopSample>> recs;
    std::vector<std::vector<double>> costs;
    for (size_t b = 0; b < params.size(); ++b) {
      if (params[b] == nullptr) continue;
      const auto* p = dynamic_cast<const ApplyRandomBinaryOperatorParams*>(params[b]);
      if (p == nullptr) return Invalid("unexpected params");
      if (p->operators.size() != p->apply_to_channels.size() || p->strel_size.size() != p->apply_to_channels.size())
        return absl::InvalidArgumentError("params: operators and strel_size need one entry per applied channel");
      for (size_t k = 0; k < p->apply_to_channels.size(); ++k) {
        if (recs.size() <= k) {
          recs.emplace_back(static_cast<size_t>(t.batch));
          costs.emplace_back();
        }
        const int64_t raw = p->apply_to_channels[k];
        ASSIGN_OR_RETURN(const int64_t a, one_hot_channels::Resolve(raw, t.channels, "params.apply_to_channels"));
        ch::BinopSample& r = recs[k][b];
        r.on = 1;
        r.channel = static_cast<int32_t>(a);
        for (int64_t oc_raw : c_.channel_idx) {
          if (oc_raw == raw) continue;
          ASSIGN_OR_RETURN(const int64_t oc, one_hot_channels::Resolve(oc_raw, t.channels,
                                                                       "apply_random_binary_operator.channel_idx"));
          r.others |= uint64_t{1} << oc;
        }
        Passes(p->operators[k], r.pass1, r.pass2);
        const std::vector<double> h = binary_operator_internal::AxisCosts(p->strel_size[k], ndim);
        if (h.empty() || h.size() > 254) return Invalid("strel_size out of range");
        r.k = static_cast<int32_t>(h.size());
        r.ndim = ndim;
        r.r2 = p->strel_size[k] * p->strel_size[k];
        r.unimodal = ch::binop::BinopSplit(h.data(), r.k, &r.split) ? 1 : 0;
        r.costs_offset = static_cast<int32_t>(costs[k].size());
        costs[k].insert(costs[k].end(), h.begin(), h.end());
      }
    }
    for (size_t k = 0; k < recs.size(); ++k) {
      Round round;
      round.second_pass = std::any_of(recs[k].begin(), recs[k].end(),
                                      [](const ch::BinopSample& r) { return r.on && r.pass2 != ch::kBinopNone; });
      round.recs = arena.AppendArray(recs[k]);
      if (costs[k].empty()) costs[k].push_back(0);  // a valid address even when no sample is on
      round.costs = arena.AppendArray(costs[k]);
      rounds_.push_back(round);
    }
    return absl::OkStatus();
  }

  absl::Status Enqueue(ChainTensors& t, const ParamArena& arena, ChainWorkspace& ws, cudaStream_t stream) override {
    const int64_t n = t.voxels();
    const size_t mask = static_cast<size_t>(t.batch) * n;
    // One slot (m0, r1, nearest, then the 256-aligned pairs, then the 256-aligned boxes): 5 bytes a voxel + 48 a
    // sample.
    const size_t pairs_at = (3 * mask + 255) / 256 * 256;
    const size_t boxes_at = (pairs_at + sizeof(uint16_t) * mask + 255) / 256 * 256;
    ASSIGN_OR_RETURN(void* masks, ws.Scratch(ChainWorkspace::kSlotStage,
                                             boxes_at + sizeof(int32_t) * 12 * static_cast<size_t>(t.batch)));
    auto* m0 = static_cast<uint8_t*>(masks);
    auto* pairs = reinterpret_cast<uint16_t*>(m0 + pairs_at);
    auto* boxes = reinterpret_cast<int32_t*>(m0 + boxes_at);
    // Taken above even when no sample applies the entry: allocated in the first batch, not by a later one (a
    // regrowth synchronises the device).
    if (rounds_.empty()) return absl::OkStatus();
    for (const Round& r : rounds_) {
      RETURN_IF_ERROR(CudaStatus(
          ch::LaunchBinaryOperatorRound(t.batch, t.channels, t.shape, t.image, arena.device_as<ch::BinopSample>(r.recs),
                                        arena.device_as<double>(r.costs), r.second_pass, m0, m0 + mask,
                                        m0 + 2 * mask, pairs, boxes, stream),
          name_.c_str()));
    }
    return absl::OkStatus();
  }

 private:
  struct Round {
    size_t recs = 0, costs = 0;
    bool second_pass = false;
  };
  ApplyRandomBinaryOperatorConfig c_;
  std::vector<Round> rounds_;
};

}  // namespace

CudaStageOrError MakeApplyRandomBinaryOperatorStage(const Transform& t, size_t index) {
  const auto* b = dynamic_cast<const ApplyRandomBinaryOperatorTransform*>(&t);
  if (b == nullptr) return stage_internal::NotCovered(t, index, "unknown implementation");
  return std::unique_ptr<CudaStage>(new BinaryOperatorStage(*b, index));
}

}  // namespace augmentd
