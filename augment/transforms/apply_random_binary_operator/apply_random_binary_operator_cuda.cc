// apply_random_binary_operator's CUDA stage on the generic chain (augment/cuda/stage.h). Prepare resolves each
// sample's drawn channels, operators and radii (the CPU Draw) into per-round records: round j holds every sample's
// j-th applied channel (the CPU applies a sample's channels in order, each reading the previous results), with the
// footprint of binary_operator_internal::Footprint (disk for 2D samples, ball for 3D) as runs along the last axis, as
// the CPU's Dilate3 decomposes it. Enqueue runs the rounds (binop_cuda_types.h, apply_random_binary_operator.cu):
// exact, integer-only, so GPU = CPU bit for bit. Registered in augment/cuda/backends.cc.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "absl/strings/str_cat.h"
#include "augment/cuda/slice_stage.h"
#include "augment/transforms/apply_random_binary_operator/apply_random_binary_operator.h"
#include "augment/transforms/apply_random_binary_operator/binop_cuda_types.h"
#include "augment/transforms/common/one_hot_channels.h"

namespace augmentd {
namespace {
namespace ch = cuda::chain;
using stage_internal::NamedStage;

// The CPU's Dilate3 runs of footprint `fp` (dims f, 3D form), the rows nearest the origin first (the kernel ORs
// them and stops at the first hit: inside a mask that is the first run; the order does not change the result).
void AppendRuns(const std::vector<uint8_t>& fp, const int64_t f[3], std::vector<ch::BinopRun>& runs) {
  const size_t first = runs.size();
  const int64_t o[3] = {(f[0] - 1) / 2, (f[1] - 1) / 2, (f[2] - 1) / 2};
  for (int64_t a = 0; a < f[0]; ++a)
    for (int64_t b = 0; b < f[1]; ++b) {
      int64_t c = 0;
      while (c < f[2]) {
        if (!fp[(a * f[1] + b) * f[2] + c]) {
          ++c;
          continue;
        }
        int64_t e = c;
        while (e + 1 < f[2] && fp[(a * f[1] + b) * f[2] + e + 1]) ++e;
        runs.push_back({static_cast<int32_t>(a - o[0]), static_cast<int32_t>(b - o[1]), static_cast<int32_t>(c - o[2]),
                        static_cast<int32_t>(e - o[2])});
        c = e + 1;
      }
    }
  std::stable_sort(runs.begin() + static_cast<std::ptrdiff_t>(first), runs.end(),
                   [](const ch::BinopRun& x, const ch::BinopRun& y) {
                     return std::abs(x.d0) + std::abs(x.d1) < std::abs(y.d0) + std::abs(y.d1);
                   });
}

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
    const int ndim = t.two_d ? 2 : 3;
    std::vector<std::vector<ch::BinopSample>> recs;
    std::vector<std::vector<ch::BinopRun>> runs;
    for (size_t b = 0; b < params.size(); ++b) {
      if (params[b] == nullptr) continue;
      const auto* p = dynamic_cast<const ApplyRandomBinaryOperatorParams*>(params[b]);
      if (p == nullptr) return Invalid("unexpected params");
      if (p->operators.size() != p->apply_to_channels.size() || p->strel_size.size() != p->apply_to_channels.size())
        return absl::InvalidArgumentError("params: operators and strel_size need one entry per applied channel");
      for (size_t k = 0; k < p->apply_to_channels.size(); ++k) {
        if (recs.size() <= k) {
          recs.emplace_back(static_cast<size_t>(t.batch));
          runs.emplace_back();
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
        std::vector<int64_t> fd;
        const std::vector<uint8_t> fp = binary_operator_internal::Footprint(p->strel_size[k], ndim, fd);
        int64_t f[3] = {1, 1, 1};
        for (int d = 0; d < ndim; ++d) f[3 - ndim + d] = fd[d];
        r.runs_offset = static_cast<int32_t>(runs[k].size());
        AppendRuns(fp, f, runs[k]);
        r.runs_count = static_cast<int32_t>(runs[k].size()) - r.runs_offset;
      }
    }
    for (size_t k = 0; k < recs.size(); ++k) {
      Round round;
      round.second_pass = std::any_of(recs[k].begin(), recs[k].end(),
                                      [](const ch::BinopSample& r) { return r.on && r.pass2 != ch::kBinopNone; });
      round.recs = arena.AppendArray(recs[k]);
      if (runs[k].empty()) runs[k].push_back({});  // a valid address even when no run
      round.runs = arena.AppendArray(runs[k]);
      rounds_.push_back(round);
    }
    return absl::OkStatus();
  }

  absl::Status Enqueue(ChainTensors& t, const ParamArena& arena, ChainWorkspace& ws, cudaStream_t stream) override {
    if (rounds_.empty()) return absl::OkStatus();
    const int64_t n = t.voxels();
    const size_t mask = static_cast<size_t>(t.batch) * n;
    const size_t prefix = sizeof(int32_t) * t.batch * int64_t{t.shape[0]} * t.shape[1] * (t.shape[2] + 1);
    ASSIGN_OR_RETURN(void* masks, ws.Scratch(ChainWorkspace::kSlotStage, 3 * mask + 512));
    ASSIGN_OR_RETURN(void* pre, ws.Scratch(ChainWorkspace::kSlotStage + 1, prefix));
    auto* m0 = static_cast<uint8_t*>(masks);
    for (const Round& r : rounds_) {
      RETURN_IF_ERROR(CudaStatus(
          ch::LaunchBinaryOperatorRound(t.batch, t.channels, t.shape, t.image, arena.device_as<ch::BinopSample>(r.recs),
                                        arena.device_as<ch::BinopRun>(r.runs), r.second_pass, m0, m0 + mask,
                                        m0 + 2 * mask, static_cast<int32_t*>(pre), stream),
          name_.c_str()));
    }
    return absl::OkStatus();
  }

 private:
  struct Round {
    size_t recs = 0, runs = 0;
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
