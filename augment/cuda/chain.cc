// The generic CUDA chain's executor (cuda/chain.h).
#include "augment/cuda/chain.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "augment/cuda/chain_2d.h"
#include "augment/cuda/slice_stage.h"
#include "augment/json_util.h"
#include "augment/kernels/cuda/chain_kernels.h"
#include "augment/kernels/cuda/pipeline_cuda.h"
#include "augment/status_macros.h"
#include "augment/transforms/convert_segmentation_to_regions/convert_segmentation_to_regions.h"
#include "augment/transforms/downsample_seg_for_ds/downsample_seg_for_ds.h"
#include "augment/transforms/move_seg_as_one_hot_to_data/move_seg_as_one_hot_to_data.h"
#include "augment/transforms/remove_label/remove_label.h"
#include "augment/transforms/spatial/spatial.h"

namespace augmentd {
namespace ju = json_util;
namespace ch = cuda::chain;

namespace {

// Executor slots of the ChainWorkspace (stages use kSlotStage and up).
enum Slot : int { kImage = 0, kSeg = 1, kFused = 2, kSegTemp = 3 };
static_assert(kSegTemp < ChainWorkspace::kSlotStage);
// The input-shaped scratch of the entries before the spatial one, above every stage's slots.
constexpr int kPreImage = ChainWorkspace::kSlotStage + 32, kPreSeg = kPreImage + 1;
// Output pairs (image, seg) of a staged chain's spatial stages, alternating (a stage reads its predecessor's).
constexpr int kStagedSpatial[2] = {kPreSeg + 1, kPreSeg + 3};

// The gathered planes of an entry with a channel selection (TransformSpec::channels).
constexpr int kChannelView = kPreImage + 16;

#define AUGMENTD_CHAIN_CUDA_OK(expr) RETURN_IF_ERROR(CudaStatus((expr), #expr))

// The tensors an entry with a channel selection sees: `t` with only `channels` image planes per sample (at `image`,
// null while only preparing). INVALID_ARGUMENT when a selected channel is missing.
absl::StatusOr<ChainTensors> ChannelView(const ChainTensors& t, const std::vector<int64_t>& channels, float* image) {
  for (int64_t c : channels)
    if (c < 0 || c >= t.channels)
      return ju::Invalid("transform.channels", absl::StrCat("channel ", c, " >= the batch's ", t.channels,
                                                            " channels"));
  ChainTensors v = t;
  v.image = image;
  v.final_image = nullptr;  // the view's planes are not the output's layout
  v.final_seg = nullptr;
  v.channels = static_cast<int32_t>(channels.size());
  v.channel_capacity = v.channels;
  return v;
}

// Copies the selected planes of every sample between the chain's image (B, C, P) and the view (B, K, P): one
// strided 2D copy per selected channel (`to_view`: gather, else scatter back).
absl::Status CopyChannelView(const ChainTensors& t, const std::vector<int64_t>& channels, float* view, bool to_view,
                             cudaStream_t stream) {
  const size_t plane = sizeof(float) * static_cast<size_t>(t.voxels());
  const size_t k = channels.size();
  for (size_t i = 0; i < k; ++i) {
    float* full = t.image + channels[i] * t.voxels();
    float* part = view + static_cast<int64_t>(i) * t.voxels();
    const size_t full_pitch = plane * static_cast<size_t>(t.channels), part_pitch = plane * k;
    AUGMENTD_CHAIN_CUDA_OK(to_view ? cudaMemcpy2DAsync(part, part_pitch, full, full_pitch, plane,
                                                       static_cast<size_t>(t.batch), cudaMemcpyDeviceToDevice, stream)
                                   : cudaMemcpy2DAsync(full, full_pitch, part, part_pitch, plane,
                                                       static_cast<size_t>(t.batch), cudaMemcpyDeviceToDevice, stream));
  }
  return absl::OkStatus();
}

absl::Status NotCovered(const TransformSpec& ts, size_t index, std::string_view why) {
  return absl::UnimplementedError(absl::StrCat("CUDA engine: transform ", index, " (",
                                               std::string(TransformKindName(ts.kind)), "): ", std::string(why),
                                               " (run it on device \"cpu\")"));
}

struct Geometry {
  int64_t batch = 0, channels = 0, seg_channels = 0;
  int32_t in[3] = {0, 0, 0};
  int32_t out[3] = {0, 0, 0};
  int64_t in_voxels() const { return int64_t{in[0]} * in[1] * in[2]; }
  int64_t out_voxels() const { return int64_t{out[0]} * out[1] * out[2]; }
};

// The scratch as the entries after downsample_seg_for_ds see it: no labels (the CPU engine emptied them).
void HideLabels(ChainTensors& t) {
  t.seg = nullptr;
  t.final_seg = nullptr;
  t.seg_channels = 0;
}

// A 2D or 3D spatial shape as the chain's 3D internal shape (leading unit axis for 2D).
void Internal3(const std::vector<int64_t>& s, int32_t out[3]) {
  const size_t lead = 3 - s.size();
  for (size_t d = 0; d < 3; ++d) out[d] = d < lead ? 1 : static_cast<int32_t>(s[d - lead]);
}

// remove_label as the fused kernel's remove_minus_one does it (RemovesMinusOneOnChannel0; the fold runs only with one
// seg channel), with no channel selection and no region mode.
bool RemovesMinusOneOnly(const TransformSpec& ts) {
  const auto* r = dynamic_cast<const RemoveLabelTransform*>(ts.transform.get());
  return r != nullptr && !ts.region_mode.enabled() && ts.channels.empty() && RemovesMinusOneOnChannel0(r->config());
}

}  // namespace

CudaChain::~CudaChain() {
  if (upload_stream_ != nullptr) {
    cudaStreamSynchronize(upload_stream_);
    cudaStreamDestroy(upload_stream_);
  }
  if (batch_start_ != nullptr) cudaEventDestroy(batch_start_);
  if (late_uploaded_ != nullptr) cudaEventDestroy(late_uploaded_);
  cudaGetLastError();
}

ChainStageTimer::~ChainStageTimer() {
  for (cudaEvent_t e : events_) cudaEventDestroy(e);
}

absl::Status ChainStageTimer::Mark(std::string name, cudaStream_t stream) {
  if (used_ == events_.size()) {
    cudaEvent_t e = nullptr;
    RETURN_IF_ERROR(CudaStatus(cudaEventCreate(&e), "cudaEventCreate(stage timer)"));
    events_.push_back(e);
  }
  if (names_.size() <= used_) names_.resize(used_ + 1);
  names_[used_] = std::move(name);
  RETURN_IF_ERROR(CudaStatus(cudaEventRecord(events_[used_], stream), "cudaEventRecord(stage timer)"));
  ++used_;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::pair<std::string, double>>> ChainStageTimer::Collect() {
  std::vector<std::pair<std::string, double>> steps;
  const size_t used = used_;
  used_ = 0;
  if (used == 0) return steps;
  RETURN_IF_ERROR(CudaStatus(cudaEventSynchronize(events_[used - 1]), "cudaEventSynchronize(stage timer)"));
  for (size_t i = 0; i + 1 < used; ++i) {
    if (names_[i].empty()) continue;
    float ms = 0;
    RETURN_IF_ERROR(CudaStatus(cudaEventElapsedTime(&ms, events_[i], events_[i + 1]), "cudaEventElapsedTime"));
    steps.emplace_back(names_[i], static_cast<double>(ms));
  }
  return steps;
}

absl::StatusOr<std::unique_ptr<CudaChain>> CudaChain::Create(const PipelineSpec& spec) {
  std::unique_ptr<CudaChain> c(new CudaChain());
  c->spec_ = spec;
  // DS / regions with p < 1, label entries after DS: INVALID_ARGUMENT, as the CPU engine (CudaAugmenter checks the
  // batch's shape when an entry can be skipped).
  RETURN_IF_ERROR(spec.CheckLayoutStable());
  const size_t n = spec.transforms.size();
  // Staged: several spatial entries, or one after regions — every spatial entry a ChainSpatialStage.
  size_t spatials = 0, regions_at = SIZE_MAX;
  for (size_t t = 0; t < n; ++t) {
    const TransformKind k = spec.transforms[t].kind;
    if (k == TransformKind::kConvertSegmentationToRegions) regions_at = std::min(regions_at, t);
    if (k == TransformKind::kSpatial) {
      ++spatials;
      c->staged_ = c->staged_ || t > regions_at;
    }
  }
  c->staged_ = c->staged_ || spatials > 1;
  for (size_t t = 0; t < n; ++t) {
    const TransformSpec& ts = spec.transforms[t];
    // The executor's own kinds (no CudaStage): the spatial step and the deep-supervision pyramid.
    if (ts.kind == TransformKind::kSpatial) {
      if (c->staged_) {
        const auto* sp = dynamic_cast<const SpatialTransform*>(ts.transform.get());
        if (sp == nullptr) return NotCovered(ts, t, "unknown implementation");
        ASSIGN_OR_RETURN(std::unique_ptr<ChainSpatial> s, ChainSpatial::Create(*sp, t));
        const int slot = kStagedSpatial[c->staged_spatial_.size() % 2];
        auto stage = std::make_unique<ChainSpatialStage>(std::move(s), slot, kSegTemp);
        c->staged_spatial_.push_back(stage.get());
        c->entries_.push_back(Entry{t, ts.kind, std::move(stage), 0});
        continue;
      }
      c->spatial_index_ = t;
      continue;
    }
    if (ts.kind == TransformKind::kDownsampleSegForDs) {  // entries after it are image-only (CheckLayoutStable)
      c->ds_ = dynamic_cast<const DownsampleSegForDsTransform*>(ts.transform.get());
      if (c->ds_ == nullptr) return NotCovered(ts, t, "unknown implementation");
      c->ds_index_ = t;
      continue;
    }
    Entry e{t, ts.kind, nullptr, 0};
    if (ts.kind == TransformKind::kConvertSegmentationToRegions) {
      const auto* r = dynamic_cast<const ConvertSegmentationToRegionsTransform*>(ts.transform.get());
      if (r == nullptr) return NotCovered(ts, t, "unknown implementation");
      e.regions = static_cast<int32_t>(r->config().regions.size());
      c->max_regions_ = std::max(c->max_regions_, e.regions);
      c->out_regions_ = e.regions;
      c->bool_seg_ = true;
    }
    if (ts.kind == TransformKind::kMoveSegAsOneHotToData) {
      const auto* m = dynamic_cast<const MoveSegAsOneHotToDataTransform*>(ts.transform.get());
      if (m == nullptr) return NotCovered(ts, t, "unknown implementation");
      // A spatial entry after it would resample a grown image: the cascade's order never does (the GPU chain sizes
      // the spatial steps for the input's channels).
      for (size_t u = t + 1; u < n; ++u)
        if (spec.transforms[u].kind == TransformKind::kSpatial)
          return NotCovered(ts, t, "a spatial entry after it (channel growth before resampling)");
      e.image_growth = static_cast<int32_t>(m->config().all_labels.size());
      e.seg_drop = m->config().remove_channel_from_source ? 1 : 0;
      c->image_growth_ += e.image_growth;
      c->seg_drop_ += e.seg_drop;
    }
    ASSIGN_OR_RETURN(e.stage, MakeCudaStage(*ts.transform, t));
    if (ts.region_mode.enabled()) {  // AugLab's in_seg / out_seg around the entry's stage (region_mode.h)
      auto wrapped = std::make_unique<RegionModeStage>(std::move(e.stage));
      e.region = wrapped.get();
      e.stage = std::move(wrapped);
    }
    c->entries_.push_back(std::move(e));
  }
  // Consecutive signed permutations (DA5's rot90 then transpose_axes) gather the batch once, through their
  // composition: adjacent in the spec (no spatial step or label store between them), on every channel.
  for (size_t i = 0; i + 1 < c->entries_.size(); ++i) {
    const Entry &a = c->entries_[i], &b = c->entries_[i + 1];
    if (b.index == a.index + 1 && spec.transforms[a.index].channels.empty() &&
        spec.transforms[b.index].channels.empty())
      stage_internal::LinkPermutations(*a.stage, *b.stage);
  }
  // The run of permutation entries directly after the spatial entry (no channel selection: linked above), by its
  // last entry, whose composition the fused spatial kernel can store through. The entries prepared before the spatial
  // launch (Run, step 3) are those before it and that run.
  if (c->spatial_index_ != SIZE_MAX) c->early_last_index_ = c->spatial_index_;
  if (c->spatial_index_ != SIZE_MAX && (c->ds_index_ == SIZE_MAX || c->ds_index_ > c->spatial_index_)) {
    size_t next = c->spatial_index_ + 1;
    for (Entry& e : c->entries_) {
      if (e.index < next) continue;
      auto* p = dynamic_cast<stage_internal::PermuteStage*>(e.stage.get());
      if (e.index != next || p == nullptr || !spec.transforms[e.index].channels.empty()) break;
      c->leading_permute_ = p;
      c->early_last_index_ = e.index;
      ++next;
    }
  }
  if (c->spatial_index_ != SIZE_MAX) {
    const TransformSpec& ts = spec.transforms[c->spatial_index_];
    const auto* sp = dynamic_cast<const SpatialTransform*>(ts.transform.get());
    if (sp == nullptr) return NotCovered(ts, c->spatial_index_, "unknown implementation");
    if (!ChainSpatial::Needed(sp->config())) {
      ASSIGN_OR_RETURN(c->spatial_plan_, MakeSpatialPlan(spec));
    }
    ASSIGN_OR_RETURN(c->generic_, ChainSpatial::Create(*sp, c->spatial_index_));
  }
  // remove_label (−1 → 0) folded into the fused spatial kernel's label store (BatchShape::remove_minus_one), when no
  // entry between the spatial one and it reads the labels other than signed permutations, which move labels without
  // looking at them and so commute with a map of their values (DA5: mirror, between image-only entries).
  if (c->spatial_plan_.spatial != nullptr) {
    for (const Entry& e : c->entries_) {
      if (e.index <= c->spatial_index_) continue;
      if (e.index >= c->ds_index_) break;  // the labels are stored there (SIZE_MAX: no DS entry)
      const TransformSpec& ts = spec.transforms[e.index];
      if (e.kind == TransformKind::kRemoveLabel) {
        if (RemovesMinusOneOnly(ts)) c->folded_remove_index_ = e.index;
        break;
      }
      const bool permutation = dynamic_cast<const stage_internal::PermuteStage*>(e.stage.get()) != nullptr;
      if (!permutation && (ts.transform->UsesLabels() || ts.region_mode.enabled())) break;
    }
  }
  return c;
}

absl::StatusOr<CudaOutputLayout> CudaChain::OutputLayout(const std::vector<int64_t>& image_shape, DType image_dtype,
                                                         int64_t seg_channels) const {
  if (image_shape.size() != 5 && image_shape.size() != 4) {
    return ju::Invalid("image.shape",
                       absl::StrCat("expected (B, C, X, Y, Z) or (B, C, X, Y), got ", ShapeString(image_shape)));
  }
  if (image_shape.size() == 4) {
    for (size_t t = 0; t < spec_.transforms.size(); ++t) RETURN_IF_ERROR(CheckStage2D(spec_.transforms[t].kind, t));
  }
  if (!IsFloatingDType(image_dtype)) return ju::Invalid("image_dtype", "must be a float dtype");
  if (image_shape[0] < 1 || image_shape[0] > 4096) return ju::Invalid("image.shape", "batch not in [1, 4096]");
  if (image_shape[1] < 1 || image_shape[1] > 64) return ju::Invalid("image.shape", "channels not in [1, 64]");
  if (seg_channels < 0 || seg_channels > 64) return ju::Invalid("seg.shape", "seg channel count not in [0, 64]");
  std::vector<int64_t> p(image_shape.begin() + 2, image_shape.end());
  for (int64_t v : p)
    if (v < 1 || v > 4096) return ju::Invalid("image.shape", "spatial size not in [1, 4096]");
  int64_t vox = NumElements(p);  // the largest scratch shape
  if (generic_ != nullptr) {
    RETURN_IF_ERROR(generic_->Geometry(p, image_shape[0], image_shape[1], seg_channels).status());
    p = generic_->OutputShape(p);
  }
  for (const ChainSpatialStage* s : staged_spatial_) {
    RETURN_IF_ERROR(s->spatial().Geometry(p, image_shape[0], image_shape[1], seg_channels).status());
    p = s->spatial().OutputShape(p);
    vox = std::max(vox, NumElements(p));
  }
  vox = std::max(vox, NumElements(p));
  // Channel growth (move_seg_as_one_hot_to_data): the output's channels, as PipelineSpec::OutputChannels.
  if (seg_drop_ > seg_channels)
    return ju::Invalid("seg.shape", absl::StrCat("move_seg_as_one_hot_to_data needs ", seg_drop_,
                                                 " seg channel(s), the batch has ", seg_channels));
  const int64_t out_image_channels = image_shape[1] + image_growth_;
  if (out_image_channels > 64) return ju::Invalid("image.shape", "output channels (after one-hot growth) above 64");
  const int64_t widest = std::max<int64_t>(out_image_channels, std::max<int64_t>(seg_channels, max_regions_));
  if (vox * image_shape[0] * widest > (int64_t{1} << 31))
    return ju::Invalid("image.shape", "batch larger than the CUDA chain allows (2^31 voxels per tensor)");
  if (image_shape[0] * widest > 65535)
    return ju::Invalid("image.shape", "batch × channels larger than the CUDA chain allows (65535 planes)");
  CudaOutputLayout lay;
  lay.image_shape = {image_shape[0], out_image_channels};
  lay.image_shape.insert(lay.image_shape.end(), p.begin(), p.end());
  lay.image_bytes = static_cast<size_t>(NumElements(lay.image_shape)) * DTypeSize(image_dtype);
  if (seg_channels - seg_drop_ == 0) return lay;  // no labels (left)
  const int64_t out_channels = out_regions_ > 0 ? out_regions_ : seg_channels - seg_drop_;
  lay.seg_dtype = bool_seg_ ? DType::kBool : DType::kInt16;
  const size_t levels = ds_ != nullptr ? ds_->config().ds_scales.size() : 1;
  for (size_t l = 0; l < levels; ++l) {
    if (ds_ != nullptr && ds_->config().ds_scales[l].size() != 1 && ds_->config().ds_scales[l].size() != p.size())
      return ju::Invalid("downsample_seg_for_ds.ds_scales", "needs 1 or one entry per spatial dim");
    const std::vector<int64_t> q = ds_ != nullptr ? ds_->LevelShape(p, l) : p;
    for (int64_t v : q)
      if (v < 1) return ju::Invalid("downsample_seg_for_ds.ds_scales", "a scale rounds an axis to size 0");
    lay.seg_shapes.push_back({image_shape[0], out_channels});
    lay.seg_shapes.back().insert(lay.seg_shapes.back().end(), q.begin(), q.end());
    lay.seg_bytes.push_back(static_cast<size_t>(NumElements(lay.seg_shapes.back())) * DTypeSize(lay.seg_dtype));
  }
  return lay;
}

absl::Status CudaChain::Run(const CudaBatchInput& input, const CudaBatchOutput& output, const RunOptions& options,
                            cudaStream_t stream, std::vector<SampleRecord>& records) {
  const int64_t seg_channels = input.seg != nullptr ? input.seg_channels : 0;
  ASSIGN_OR_RETURN(const CudaOutputLayout lay, OutputLayout(input.image_shape, options.image_dtype, seg_channels));
  if (input.image == nullptr) return ju::Invalid("image.data", "is null");
  if (output.image == nullptr) return ju::Invalid("output.image", "is null");
  if (output.seg.size() != lay.seg_shapes.size())
    return ju::Invalid("output.seg", absl::StrCat("needs ", lay.seg_shapes.size(), " label levels"));
  for (int16_t* p : output.seg)
    if (p == nullptr) return ju::Invalid("output.seg", "is null");
  Geometry g;
  g.batch = input.image_shape[0];
  g.channels = input.image_shape[1];
  g.seg_channels = seg_channels;
  const bool two_d = input.image_shape.size() == 4;
  const std::vector<int64_t> sample(input.image_shape.begin() + 2, input.image_shape.end());
  Internal3(sample, g.in);
  Internal3(std::vector<int64_t>(lay.image_shape.begin() + 2, lay.image_shape.end()), g.out);
  if (options.injected != nullptr && static_cast<int64_t>(options.injected->size()) != g.batch) {
    return ju::Invalid("params", absl::StrCat("injected parameters for ", options.injected->size(),
                                              " samples, batch has ", g.batch));
  }

  // Diagnostics (set_stage_timer): a step starts at each mark; no-op without a timer.
  const auto mark = [&](std::string name) -> absl::Status {
    return timer_ != nullptr ? timer_->Mark(std::move(name), stream) : absl::OkStatus();
  };
  const auto entry_name = [&](const Entry& e) {
    return absl::StrCat(std::string(TransformKindName(e.kind)), "#", e.index);
  };
  RETURN_IF_ERROR(mark("host: draws, spatial parameters, upload"));

  // 1. Draws (the CPU engine's) and the spatial kernel's parameters.
  records.assign(g.batch, SampleRecord{});
  const SampleLayout layout{g.channels, sample, g.seg_channels};
  cuda::BatchShape sh;
  sh.batch = static_cast<int32_t>(g.batch);
  sh.channels = static_cast<int32_t>(g.channels);
  for (int d = 0; d < 3; ++d) {
    sh.in[d] = g.in[d];
    sh.out[d] = g.out[d];
  }
  sh.remove_minus_one = 0;  // 1 below when this batch folds remove_label in (folded_remove_index_)
  sh.elastic = spatial_plan_.elastic ? 1 : 0;
  sh.seg_pad_first = spatial_plan_.pad_first ? 1 : 0;
  const bool spatial = generic_ != nullptr;
  // The fused spatial kernel when the spec and every sample's parameters fit it, else the generic one.
  bool fused_spatial = spatial_plan_.spatial != nullptr && g.channels <= cuda::kMaxChannels;
  std::vector<cuda::SampleParams> sp(fused_spatial ? g.batch : 0);
  for (int64_t b = 0; b < g.batch; ++b) {
    RETURN_IF_ERROR(DrawSampleParams(spec_, options.seed, options.first_sample_index + b,
                                     options.injected ? &(*options.injected)[b] : nullptr, layout, records[b],
                                     options.first_sample_index));
    if (fused_spatial) {
      const absl::Status st = TranslateSample(spec_, spatial_plan_, records[b], sh, sp[b]);
      if (absl::IsUnimplemented(st)) {
        fused_spatial = false;
        sp.clear();
      } else if (!st.ok()) {
        return st;
      }
    }
  }
  ch::SpatialGeom geom;
  std::vector<ch::SpatialSampleRec> recs(spatial && !fused_spatial ? g.batch : 0);
  std::vector<float> grids;
  if (!recs.empty()) {
    ASSIGN_OR_RETURN(geom, generic_->Geometry(sample, g.batch, g.channels, g.seg_channels));
    for (int64_t b = 0; b < g.batch; ++b) {
      const AppliedTransform& at = records[b].transforms[generic_->index()];
      const auto* p = at.applied ? static_cast<const SpatialParams*>(at.params.get()) : nullptr;
      RETURN_IF_ERROR(generic_->AddSample(p, geom, grids, recs[b]));
    }
  }
  // remove_label folded into the fused kernel's label store for this batch (folded_remove_index_): its stage then sees
  // every sample as not applied (the records keep the draws).
  const bool remove_folded =
      fused_spatial && g.seg_channels == 1 && folded_remove_index_ != SIZE_MAX &&
      std::all_of(records.begin(), records.end(),
                  [&](const SampleRecord& r) { return r.transforms[folded_remove_index_].applied; });
  if (remove_folded) {
    sh.remove_minus_one = 1;
    ++folded_remove_batches_;
  }
  if (!spatial && staged_spatial_.empty()) {
    for (int d = 0; d < 3; ++d)
      if (g.in[d] != g.out[d]) return absl::InternalError("CUDA chain: shape changes without a spatial entry");
  }

  // 2. Scratch tensors (grow only for a larger batch): the patch shape after the executor's spatial entry, else
  // (staged, or no spatial entry) the input shape.
  const int64_t n = g.out_voxels();
  const int32_t* shape0 = spatial ? g.out : g.in;
  const int64_t n0 = int64_t{shape0[0]} * shape0[1] * shape0[2];
  const int64_t seg_cap = g.seg_channels > 0 ? std::max<int64_t>(g.seg_channels, max_regions_) : 0;
  const int64_t channel_cap = g.channels + image_growth_;  // the final channels (growth only adds)
  ASSIGN_OR_RETURN(void* image, ws_.Scratch(kImage, sizeof(float) * g.batch * channel_cap * n0));
  void* seg = nullptr;
  if (seg_cap > 0) {
    ASSIGN_OR_RETURN(seg, ws_.Scratch(kSeg, sizeof(int16_t) * g.batch * seg_cap * n0));
  }
  ChainTensors t0;
  t0.image = static_cast<float*>(image);
  t0.seg = static_cast<int16_t*>(seg);
  t0.batch = static_cast<int32_t>(g.batch);
  t0.channels = static_cast<int32_t>(g.channels);
  t0.channel_capacity = static_cast<int32_t>(channel_cap);
  t0.seg_channels = static_cast<int32_t>(g.seg_channels);
  t0.seg_capacity = static_cast<int32_t>(seg_cap);
  t0.two_d = two_d;
  for (int d = 0; d < 3; ++d) t0.shape[d] = shape0[d];
  // Entries before the spatial one run on a copy of the input (input shape).
  const bool pre = spatial && !entries_.empty() && entries_.front().index < spatial_index_;
  ChainTensors pre_t = t0;
  if (pre) {
    ASSIGN_OR_RETURN(void* pre_image, ws_.Scratch(kPreImage, sizeof(float) * g.batch * g.channels * g.in_voxels()));
    pre_t.image = static_cast<float*>(pre_image);
    pre_t.seg = nullptr;
    if (g.seg_channels > 0) {
      ASSIGN_OR_RETURN(void* pre_seg, ws_.Scratch(kPreSeg, sizeof(int16_t) * g.batch * g.seg_channels * g.in_voxels()));
      pre_t.seg = static_cast<int16_t*>(pre_seg);
    }
    pre_t.seg_capacity = static_cast<int32_t>(g.seg_channels);
    pre_t.channel_capacity = static_cast<int32_t>(g.channels);  // no growth before the spatial entry (Create)
    for (int d = 0; d < 3; ++d) pre_t.shape[d] = g.in[d];
  }
  const auto before_spatial = [&](const Entry& e) { return pre && e.index < spatial_index_; };

  // 3. Parameters into two arenas, one upload each: the spatial step's and those of the entries up to it (the entries
  // before it, the permutations it stores through) into arena_, uploaded before the spatial launch; the later
  // entries' into late_arena_ after it, so that their host work overlaps the spatial kernel.
  arena_.Reset();
  late_arena_.Reset();
  const size_t recs_offset = arena_.AppendArray(recs);
  const size_t grids_offset = arena_.AppendArray(grids);
  size_t early = 0;  // entries_[0, early) use arena_
  if (spatial_index_ != SIZE_MAX) {
    while (early < entries_.size() && entries_[early].index <= early_last_index_) ++early;
  }
  const auto arena_of = [&](size_t i) -> ParamArena& { return i < early ? arena_ : late_arena_; };
  ChainTensors tp = t0, tp_in = pre_t;
  std::vector<const TransformParams*> params(g.batch);
  std::vector<std::unique_ptr<TransformParams>> lifted(two_d ? g.batch : 0);  // 3D forms of 2D parameters
  std::vector<RegionDraw> regions;
  // Entry i's Prepare, on the view of its channel selection when it has one (the enqueue below gathers those planes),
  // with the shape changes its Enqueue will make applied to `tp`.
  const auto prepare_entry = [&](size_t i) -> absl::Status {
    Entry& e = entries_[i];
    ParamArena& arena = arena_of(i);
    const auto prepare = [&](const ChainTensors& t) -> absl::Status {
      const std::vector<int64_t>& sel = spec_.transforms[e.index].channels;
      if (sel.empty()) return e.stage->Prepare(params, t, arena);
      ASSIGN_OR_RETURN(const ChainTensors view, ChannelView(t, sel, nullptr));
      return e.stage->Prepare(params, view, arena);
    };
    if (e.region != nullptr) regions.assign(static_cast<size_t>(g.batch), RegionDraw{});
    for (int64_t b = 0; b < g.batch; ++b) {
      const AppliedTransform& at = records[b].transforms[e.index];
      params[b] = at.applied && !(remove_folded && e.index == folded_remove_index_) ? at.params.get() : nullptr;
      if (e.region != nullptr && at.applied) regions[b] = at.region;
      if (two_d && params[b] != nullptr) {
        ASSIGN_OR_RETURN(lifted[b], LiftParams2D(e.kind, *params[b]));
        if (lifted[b] != nullptr) params[b] = lifted[b].get();
      }
    }
    if (e.region != nullptr) e.region->SetRegions(regions);
    if (before_spatial(e)) return prepare(tp_in);  // no regions here (staged otherwise)
    if (e.index > ds_index_) HideLabels(tp);  // what the enqueue loop will do
    auto* staged_spatial = e.kind == TransformKind::kSpatial ? static_cast<ChainSpatialStage*>(e.stage.get()) : nullptr;
    if (staged_spatial != nullptr) staged_spatial->set_two_d(two_d);
    RETURN_IF_ERROR(prepare(tp));
    if (staged_spatial != nullptr)
      for (int d = 0; d < 3; ++d) tp.shape[d] = staged_spatial->out_shape()[d];
    if (e.regions > 0 && tp.seg_channels > 0) {  // what RegionsStage::Enqueue will do
      tp.seg_channels = e.regions;
      tp.seg_is_bool = true;
    }
    if (e.image_growth > 0 || e.seg_drop > 0) {  // what the move_seg_as_one_hot_to_data stage will do
      tp.channels += e.image_growth;
      tp.seg_channels -= e.seg_drop;
      if (tp.seg_channels == 0) tp.seg = nullptr;
    }
    return absl::OkStatus();
  };
  for (size_t i = 0; i < early; ++i) RETURN_IF_ERROR(prepare_entry(i));
  // The permutations right after the spatial entry go into the fused kernel's store (SampleParams::out_axis and its
  // mirror bits, which the chain's spatial plan leaves 0): o[perm[d]] = flip[d] ? P_d − 1 − j_d : j_d is the inverse
  // of the stage's gather src(o)[d] = flip[d] ? S − 1 − o[perm[d]] : o[perm[d]].
  if (fused_spatial && leading_permute_ != nullptr && g.channels <= cuda::kMaxPermutedChannels) {
    if (const std::vector<ch::PermuteSample>* perms = leading_permute_->TakePermutations(); perms != nullptr) {
      for (int64_t b = 0; b < g.batch; ++b) {
        const ch::PermuteSample& p = (*perms)[static_cast<size_t>(b)];
        if (!p.on) continue;
        sp[b].mirror_mask = 0;
        for (int d = 0; d < 3; ++d) {
          sp[b].out_axis[d] = p.perm[d];
          sp[b].mirror_mask |= p.flip[d] != 0 ? 1 << d : 0;
        }
      }
    }
  }
  const size_t sp_offset = arena_.AppendArray(sp);
  RETURN_IF_ERROR(arena_.Upload(stream));
  if (upload_stream_ == nullptr) {
    AUGMENTD_CHAIN_CUDA_OK(cudaStreamCreateWithFlags(&upload_stream_, cudaStreamNonBlocking));
    AUGMENTD_CHAIN_CUDA_OK(cudaEventCreateWithFlags(&batch_start_, cudaEventDisableTiming));
    AUGMENTD_CHAIN_CUDA_OK(cudaEventCreateWithFlags(&late_uploaded_, cudaEventDisableTiming));
  }
  AUGMENTD_CHAIN_CUDA_OK(cudaEventRecord(batch_start_, stream));

  // A stage's enqueue, on the gathered planes of its channel selection when it has one.
  const auto enqueue = [&](size_t i, ChainTensors& t) -> absl::Status {
    Entry& e = entries_[i];
    const ParamArena& arena = arena_of(i);
    const std::vector<int64_t>& sel = spec_.transforms[e.index].channels;
    if (sel.empty()) return e.stage->Enqueue(t, arena, ws_, stream);
    const size_t bytes = sizeof(float) * static_cast<size_t>(t.batch) * sel.size() * static_cast<size_t>(t.voxels());
    ASSIGN_OR_RETURN(void* buf, ws_.Scratch(kChannelView, bytes));
    ASSIGN_OR_RETURN(ChainTensors view, ChannelView(t, sel, static_cast<float*>(buf)));
    RETURN_IF_ERROR(CopyChannelView(t, sel, view.image, true, stream));
    RETURN_IF_ERROR(e.stage->Enqueue(view, arena, ws_, stream));
    t.seg = view.seg;  // the view shares the labels: a stage may have moved them to another buffer (PermuteStage)
    return CopyChannelView(t, sel, view.image, false, stream);
  };

  // 4. Entries before the spatial one, then spatial (or the input as is).
  const int64_t in_n = g.in_voxels();
  const float* src_image = input.image;
  const int16_t* src_seg = input.seg;
  if (pre) {
    AUGMENTD_CHAIN_CUDA_OK(cudaMemcpyAsync(pre_t.image, input.image, sizeof(float) * g.batch * g.channels * in_n,
                                           cudaMemcpyDeviceToDevice, stream));
    if (g.seg_channels > 0) {
      AUGMENTD_CHAIN_CUDA_OK(cudaMemcpyAsync(pre_t.seg, input.seg, sizeof(int16_t) * g.batch * g.seg_channels * in_n,
                                             cudaMemcpyDeviceToDevice, stream));
    }
    for (size_t i = 0; i < entries_.size(); ++i) {
      if (!before_spatial(entries_[i])) continue;
      RETURN_IF_ERROR(mark(entry_name(entries_[i])));
      RETURN_IF_ERROR(enqueue(i, pre_t));
    }
    src_image = pre_t.image;
    src_seg = pre_t.seg;
  }
  RETURN_IF_ERROR(mark(spatial ? (fused_spatial ? "spatial (fused kernel)" : "spatial (generic kernel)")
                                : "input copy"));
  if (spatial && !fused_spatial) {
    const bool any_grid =
        std::any_of(recs.begin(), recs.end(), [](const ch::SpatialSampleRec& r) { return r.grid >= 0; });
    RETURN_IF_ERROR(generic_->Enqueue(geom, arena_.device_as<ch::SpatialSampleRec>(recs_offset),
                                      arena_.device_as<float>(grids_offset), any_grid, src_image, src_seg, t0.image,
                                      t0.seg, ws_, kSegTemp, stream));
  } else if (fused_spatial) {
    // Several seg channels: one launch per sample and channel (a batch of 1) reading the input's plane and writing
    // the scratch's directly, instead of gathering each whole input channel (B · S voxels) into a contiguous
    // temporary and scattering the result back.
    const bool per_plane = g.seg_channels > 1;
    cuda::BatchShape wsh = sh;
    if (per_plane) wsh.batch = 1;
    const size_t fused_bytes = cuda::WorkspaceBytes(wsh);
    if (fused_bytes == 0) {
      return ju::Invalid("image.shape", absl::StrCat("batch shape ", ShapeString(input.image_shape),
                                                     " is outside what the CUDA kernels accept"));
    }
    ASSIGN_OR_RETURN(void* fused, ws_.Scratch(kFused, fused_bytes));
    // The workspace's layout and counters do not depend on remove_minus_one, which a folded remove_label drawn for
    // some batches only would flip: left out of the key.
    cuda::BatchShape key = wsh;
    key.remove_minus_one = 0;
    if (fused != fused_ws_ || std::memcmp(&fused_shape_, &key, sizeof(key)) != 0) {
      AUGMENTD_CHAIN_CUDA_OK(cuda::InitWorkspace(wsh, fused, stream));
      fused_ws_ = fused;
      fused_shape_ = key;
    }
    const uint32_t stages = cuda::ActiveStages(sp.data(), sh);
    const auto* d_sp = arena_.device_as<cuda::SampleParams>(sp_offset);
    cuda::PipelineIO io;
    io.image = src_image;
    io.out_image = t0.image;
    if (per_plane) {
      // The image is resampled with each sample's first seg channel; later channels run the spatial kernel seg only
      // (pipeline_cuda.h) when nothing follows it in the fused launch, instead of resampling the image again.
      for (int64_t b = 0; b < g.batch; ++b) {
        const uint32_t stages_b = cuda::ActiveStages(&sp[b], wsh);
        const bool seg_only_later = (stages_b & cuda::kStagesAfterSpatial) == 0;
        for (int64_t k = 0; k < g.seg_channels; ++k) {
          cuda::PipelineIO io_k;
          if (k == 0 || !seg_only_later) {
            io_k.image = src_image + b * g.channels * in_n;
            io_k.out_image = t0.image + b * g.channels * n;
          }
          io_k.seg = src_seg + (b * g.seg_channels + k) * in_n;
          io_k.out_seg = t0.seg + (b * g.seg_channels + k) * n;
          AUGMENTD_CHAIN_CUDA_OK(cuda::RunPipeline(wsh, d_sp + b, stages_b, io_k, fused, stream));
        }
      }
    } else if (g.seg_channels == 1) {
      io.seg = src_seg;
      io.out_seg = t0.seg;
      AUGMENTD_CHAIN_CUDA_OK(cuda::RunPipeline(sh, d_sp, stages, io, fused, stream));
    } else {
      // Image-only: a zero label map through contiguous temporaries (B, 1, S) → (B, 1, P).
      ASSIGN_OR_RETURN(void* tmp, ws_.Scratch(kSegTemp, sizeof(int16_t) * g.batch * (in_n + n) + 256));
      auto* tin = static_cast<int16_t*>(tmp);
      io.seg = tin;
      io.out_seg = tin + g.batch * in_n;
      AUGMENTD_CHAIN_CUDA_OK(cudaMemsetAsync(tin, 0, sizeof(int16_t) * g.batch * in_n, stream));
      AUGMENTD_CHAIN_CUDA_OK(cuda::RunPipeline(sh, d_sp, stages, io, fused, stream));
    }
  } else {
    AUGMENTD_CHAIN_CUDA_OK(cudaMemcpyAsync(t0.image, input.image, sizeof(float) * g.batch * g.channels * n0,
                                           cudaMemcpyDeviceToDevice, stream));
    if (g.seg_channels > 0) {
      AUGMENTD_CHAIN_CUDA_OK(cudaMemcpyAsync(t0.seg, input.seg, sizeof(int16_t) * g.batch * g.seg_channels * n0,
                                             cudaMemcpyDeviceToDevice, stream));
    }
  }

  // The later entries' parameters, while the spatial kernel runs (a step of its own in the timer: the GPU's idle time
  // if this host work outlasts the kernel).
  RETURN_IF_ERROR(mark("host: later entries' parameters"));
  for (size_t i = early; i < entries_.size(); ++i) RETURN_IF_ERROR(prepare_entry(i));
  AUGMENTD_CHAIN_CUDA_OK(cudaStreamWaitEvent(upload_stream_, batch_start_, 0));
  RETURN_IF_ERROR(late_arena_.Upload(upload_stream_));
  AUGMENTD_CHAIN_CUDA_OK(cudaEventRecord(late_uploaded_, upload_stream_));
  AUGMENTD_CHAIN_CUDA_OK(cudaStreamWaitEvent(stream, late_uploaded_, 0));

  // 5. The stages, in spec order; the label pyramid where downsample_seg_for_ds stands (the entries after it are
  // image-only: PipelineSpec::CheckLayoutStable).
  const auto store_labels = [&](const ChainTensors& t) -> absl::Status {
    for (int d = 0; d < 3; ++d)
      if (t.shape[d] != g.out[d]) return absl::InternalError("CUDA chain: labels stored before the final shape");
    std::vector<ch::SegLevel> levels(lay.seg_shapes.size());
    for (size_t l = 0; l < lay.seg_shapes.size(); ++l) {
      if (lay.seg_shapes[l][1] != t.seg_channels) {
        return absl::InternalError(absl::StrCat("CUDA chain: ", t.seg_channels, " seg channels, layout says ",
                                                lay.seg_shapes[l][1]));
      }
      Internal3(std::vector<int64_t>(lay.seg_shapes[l].begin() + 2, lay.seg_shapes[l].end()), levels[l].shape);
      levels[l].dst = output.seg[l];
    }
    AUGMENTD_CHAIN_CUDA_OK(ch::LaunchSegLevels(static_cast<int32_t>(g.batch) * t.seg_channels, t.shape, t.seg,
                                               levels.data(), static_cast<int32_t>(levels.size()), t.seg_is_bool,
                                               stream));
    return absl::OkStatus();
  };
  ChainTensors t = t0;
  // The caller's outputs as the tensors' final homes (ChainTensors::final_image / final_seg), where the layout can no
  // longer change: one spatial step (or none), no channel growth, float32 output; int16 labels without regions or a
  // dropped channel, and a full-resolution first level.
  if (!staged_ && image_growth_ == 0 && options.image_dtype == DType::kFloat32 && t.channels == lay.image_shape[1])
    t.final_image = static_cast<float*>(output.image);
  std::vector<int64_t> full_labels = lay.image_shape;  // (B, K, patch)
  full_labels[1] = t.seg_channels;
  if (!staged_ && t.seg != nullptr && !bool_seg_ && max_regions_ == 0 && seg_drop_ == 0 && !lay.seg_shapes.empty() &&
      lay.seg_shapes[0] == full_labels)
    t.final_seg = static_cast<int16_t*>(output.seg[0]);
  bool labels_stored = false;
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    if (before_spatial(e)) continue;
    if (e.index > ds_index_ && !labels_stored) {
      RETURN_IF_ERROR(mark("label pyramid"));
      RETURN_IF_ERROR(store_labels(t));
      labels_stored = true;
      HideLabels(t);
    }
    RETURN_IF_ERROR(mark(entry_name(e)));
    RETURN_IF_ERROR(enqueue(i, t));
  }
  if (!labels_stored) {
    RETURN_IF_ERROR(mark("label pyramid"));
    RETURN_IF_ERROR(store_labels(t));
  }

  // 6. The image in the output dtype.
  for (int d = 0; d < 3; ++d)
    if (t.shape[d] != g.out[d]) return absl::InternalError("CUDA chain: the image does not end at the output shape");
  if (t.channels != lay.image_shape[1])
    return absl::InternalError(absl::StrCat("CUDA chain: ", t.channels, " image channels, layout says ",
                                            lay.image_shape[1]));
  const cuda::OutDType odt = options.image_dtype == DType::kFloat16    ? cuda::OutDType::kFloat16
                             : options.image_dtype == DType::kBFloat16 ? cuda::OutDType::kBFloat16
                                                                       : cuda::OutDType::kFloat32;
  RETURN_IF_ERROR(mark("image store"));
  if (t.image != output.image)  // else a stage wrote it there (ChainTensors::final_image)
    AUGMENTD_CHAIN_CUDA_OK(ch::LaunchStoreImage(g.batch * t.channels * n, t.image, output.image, odt, stream));
  return mark("");
}

}  // namespace augmentd
