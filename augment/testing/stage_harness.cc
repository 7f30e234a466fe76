// The GPU = CPU stage-test harness (stage_harness.h). Test-only: failures are gtest failures carrying the label.
#include "augment/testing/stage_harness.h"

#include <cmath>
#include <cstring>
#include <iostream>
#include <sstream>
#include <utility>

#include "augment/cuda/chain_2d.h"
#include "augment/registry.h"
#include "augment/testing/test_util.h"
#include "gtest/gtest.h"

namespace augmentd::testing {

TestStream::TestStream() {
  ok_ = cudaStreamCreate(&stream_) == cudaSuccess;
  EXPECT_TRUE(ok_) << "cudaStreamCreate failed";
}

TestStream::~TestStream() {
  if (ok_) {
    EXPECT_EQ(cudaStreamDestroy(stream_), cudaSuccess);
  }
}

BuiltStage BuildStage(const std::string& kind, const nlohmann::json& config, size_t index) {
  BuiltStage out;
  auto t = TransformFromJson(kind, config);
  EXPECT_TRUE(t.ok()) << kind << " " << config.dump() << ": " << t.status();
  if (!t.ok()) return out;
  out.transform = *t;
  auto stage = MakeCudaStage(**t, index);
  EXPECT_TRUE(stage.ok() && *stage != nullptr) << kind << " " << config.dump() << ": no stage " << stage.status();
  if (stage.ok()) out.stage = std::move(*stage);
  return out;
}

Tolerance Tolerance::Equal() {
  Tolerance t;
  t.kind = Kind::kEqual;
  return t;
}

Tolerance Tolerance::SameBits() {
  Tolerance t;
  t.kind = Kind::kSameBits;
  return t;
}

Tolerance Tolerance::BitsOrRelative(float rel) { return rel == 0 ? SameBits() : Tolerance(rel); }

Tolerance Tolerance::WithSpecials() const {
  Tolerance t = *this;
  t.same_specials = true;
  return t;
}

bool Tolerance::Accepts(float gpu, float cpu) const {
  if (same_specials && ((std::isnan(gpu) && std::isnan(cpu)) || (std::isinf(cpu) && gpu == cpu))) return true;
  switch (kind) {
    case Kind::kEqual:
      return gpu == cpu;
    case Kind::kSameBits:
      return std::memcmp(&gpu, &cpu, sizeof(float)) == 0;
    case Kind::kRelative:
      break;
  }
  return std::fabs(gpu - cpu) <= rel * (1 + std::fabs(cpu));
}

std::string Tolerance::ToString() const {
  std::ostringstream out;
  switch (kind) {
    case Kind::kEqual:
      out << "gpu == cpu";
      break;
    case Kind::kSameBits:
      out << "the same bits";
      break;
    case Kind::kRelative:
      out << "|gpu - cpu| <= " << rel << " * (1 + |cpu|)";
      break;
  }
  if (same_specials) out << " (NaN / Inf alike)";
  return out.str();
}

ChainTensors HostTensors(int batch, int channels, int seg_channels, const std::vector<int64_t>& shape) {
  ChainTensors t;
  t.batch = batch;
  t.channels = channels;
  t.seg_channels = t.seg_capacity = seg_channels;
  const int lead = 3 - static_cast<int>(shape.size());  // 2D samples run as (1, X, Y)
  for (int d = 0; d < 3; ++d) t.shape[d] = d < lead ? 1 : static_cast<int32_t>(shape[d - lead]);
  return t;
}

HostBatch MakeHostBatch(const Transform& t, const BatchSpec& spec, const std::string& label) {
  HostBatch out;
  out.shape3 = spec.shape.size() == 2 ? std::vector<int64_t>{1, spec.shape[0], spec.shape[1]} : spec.shape;
  out.voxels = out.shape3[0] * out.shape3[1] * out.shape3[2];
  out.channels = spec.channels;
  out.seg_channels = spec.seg_channels;
  const int64_t n = spec.channels * out.voxels, ns = spec.seg_channels * out.voxels;
  out.image.resize(static_cast<size_t>(spec.batch * n));
  out.want.resize(out.image.size());
  out.seg.resize(static_cast<size_t>(spec.batch * ns));
  out.want_seg.resize(out.seg.size());
  out.owned.resize(static_cast<size_t>(spec.batch));
  out.params.assign(static_cast<size_t>(spec.batch), nullptr);
  for (int b = 0; b < spec.batch && out.drawn; ++b) {
    const uint32_t data_seed = static_cast<uint32_t>(spec.seed * spec.data_seed_multiplier + b);
    SampleData s = spec.make_sample ? spec.make_sample(spec, b, data_seed)
                                    : RandomSample(spec.channels, spec.shape, spec.seg_channels, spec.label_lo,
                                                   spec.label_hi, data_seed);
    std::copy(s.image.begin(), s.image.end(), out.image.begin() + b * n);
    std::copy(s.seg.begin(), s.seg.end(), out.seg.begin() + b * ns);
    if (!(spec.skip && spec.skip(b))) {
      out.owned[b] = DrawFor(t, s.layout(), spec.seed, static_cast<uint64_t>(b));
      if (out.owned[b] == nullptr) {
        out.drawn = false;
        break;
      }
      const absl::Status applied = t.Apply(*out.owned[b], s);
      EXPECT_TRUE(applied.ok()) << label << ": " << applied;
      if (spec.shape.size() == 2) {  // what the chain hands the stage for a 2D sample
        auto lifted = LiftParams2D(t.kind(), *out.owned[b]);
        EXPECT_TRUE(lifted.ok()) << label << ": " << lifted.status();
        if (lifted.ok() && *lifted != nullptr) out.owned[b] = std::move(*lifted);
      }
      out.params[b] = out.owned[b].get();
    }
    std::copy(s.image.begin(), s.image.end(), out.want.begin() + b * n);
    std::copy(s.seg.begin(), s.seg.end(), out.want_seg.begin() + b * ns);
  }
  out.tensors = HostTensors(spec.batch, spec.channels, spec.upload_seg ? spec.seg_channels : 0, out.shape3);
  return out;
}

DeviceBatch::DeviceBatch(const HostBatch& b) : host_(b), tensors_(b.tensors) {
  void* image = nullptr;
  EXPECT_EQ(cudaMalloc(&image, b.image.size() * sizeof(float)), cudaSuccess);
  tensors_.image = static_cast<float*>(image);
  if (tensors_.seg_channels > 0) {
    seg_elements_ = static_cast<size_t>(tensors_.batch) * tensors_.seg_channels * b.voxels;
    void* seg = nullptr;
    EXPECT_EQ(cudaMalloc(&seg, seg_elements_ * sizeof(int16_t)), cudaSuccess);
    tensors_.seg = static_cast<int16_t*>(seg);
  }
  Upload();
}

DeviceBatch::~DeviceBatch() {
  EXPECT_EQ(cudaFree(tensors_.image), cudaSuccess);
  if (tensors_.seg != nullptr) {
    EXPECT_EQ(cudaFree(tensors_.seg), cudaSuccess);
  }
}

void DeviceBatch::Upload() {
  EXPECT_EQ(cudaMemcpy(tensors_.image, host_.image.data(), host_.image.size() * sizeof(float),
                       cudaMemcpyHostToDevice),
            cudaSuccess);
  if (seg_elements_ > 0) {
    EXPECT_EQ(cudaMemcpy(tensors_.seg, host_.seg.data(), seg_elements_ * sizeof(int16_t), cudaMemcpyHostToDevice),
              cudaSuccess);
  }
}

bool DeviceBatch::Run(CudaStage& stage, ParamArena& arena, ChainWorkspace& ws, cudaStream_t stream,
                      const std::string& label) {
  arena.Reset();
  absl::Status st = stage.Prepare(host_.params, tensors_, arena);
  if (st.ok()) st = arena.Upload(stream);
  if (st.ok()) st = stage.Enqueue(tensors_, arena, ws, stream);
  EXPECT_TRUE(st.ok()) << label << ": " << st;
  const cudaError_t synced = cudaStreamSynchronize(stream);
  EXPECT_EQ(synced, cudaSuccess) << label << ": " << cudaGetErrorString(synced);
  return st.ok() && synced == cudaSuccess;
}

std::vector<float> DeviceBatch::DownloadImage() const {
  std::vector<float> got(host_.image.size());
  EXPECT_EQ(cudaMemcpy(got.data(), tensors_.image, got.size() * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  return got;
}

std::vector<int16_t> DeviceBatch::DownloadSeg() const {
  std::vector<int16_t> got(seg_elements_);
  if (seg_elements_ > 0) {
    EXPECT_EQ(cudaMemcpy(got.data(), tensors_.seg, got.size() * sizeof(int16_t), cudaMemcpyDeviceToHost),
              cudaSuccess);
  }
  return got;
}

namespace {

// "sample 1 channel 0 voxel 17 (0, 3, 2)" for flat element i of (B, channels, shape3).
std::string Where(const HostBatch& b, size_t i, int channels, const char* what) {
  const int64_t per_sample = channels * b.voxels, v = static_cast<int64_t>(i) % b.voxels;
  std::ostringstream out;
  out << "sample " << static_cast<int64_t>(i) / per_sample << " " << what << " "
      << (static_cast<int64_t>(i) % per_sample) / b.voxels << " voxel " << v << " (" << v / (b.shape3[1] * b.shape3[2])
      << ", " << (v / b.shape3[2]) % b.shape3[1] << ", " << v % b.shape3[2] << ")";
  return out.str();
}

}  // namespace

int64_t CountImageMismatches(const std::vector<float>& got, const HostBatch& b, const Tolerance& tol,
                             const std::string& label, int report) {
  EXPECT_EQ(got.size(), b.want.size()) << label;
  if (got.size() != b.want.size()) return static_cast<int64_t>(b.want.size()) + 1;
  int64_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (tol.Accepts(got[i], b.want[i])) continue;
    if (bad++ < report)
      ADD_FAILURE() << label << ": " << Where(b, i, b.channels, "channel") << ": gpu " << got[i] << " cpu "
                    << b.want[i] << " input " << b.image[i] << " (want " << tol.ToString() << ")";
  }
  return bad;
}

int64_t CountLabelMismatches(const std::vector<int16_t>& got, const std::vector<int16_t>& want, const HostBatch& b,
                             LabelCheck how, const std::string& label, int report) {
  if (how == LabelCheck::kIgnore) return 0;
  EXPECT_EQ(got.size(), want.size()) << label << ": label elements";
  if (got.size() != want.size()) return static_cast<int64_t>(want.size()) + 1;
  const char* against = how == LabelCheck::kUnchanged ? "input" : "cpu";
  int64_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] == want[i]) continue;
    if (bad++ >= report) continue;
    const std::string msg = label + ": label mismatch at " + Where(b, i, b.seg_channels, "seg channel") + ": gpu " +
                            std::to_string(got[i]) + " " + against + " " + std::to_string(want[i]);
    if (how == LabelCheck::kCount) {
      std::cerr << msg << "\n";
    } else {
      ADD_FAILURE() << msg;
    }
  }
  return bad;
}

Mismatches CompareStageBatch(const Transform& t, CudaStage& stage, ParamArena& arena, ChainWorkspace& ws,
                             const BatchSpec& spec, const Tolerance& tol, LabelCheck labels, cudaStream_t stream,
                             const std::string& label) {
  Mismatches m;
  const HostBatch b = MakeHostBatch(t, spec, label);
  if (!b.drawn) {
    m.image = 1;
    return m;
  }
  DeviceBatch d(b);
  d.Run(stage, arena, ws, stream, label);
  const std::vector<float> got = d.DownloadImage();
  m.image = CountImageMismatches(got, b, tol, label);
  for (size_t i = 0; i < b.want.size(); ++i) m.changed += b.want[i] != b.image[i];
  if (labels != LabelCheck::kIgnore) {
    EXPECT_TRUE(spec.upload_seg) << label << ": labels checked but not uploaded";
    const std::vector<int16_t>& want = labels == LabelCheck::kUnchanged ? b.seg : b.want_seg;
    m.labels = CountLabelMismatches(d.DownloadSeg(), want, b, labels, label);
    m.label_voxels = static_cast<int64_t>(want.size());
  }
  return m;
}

std::string ShapeLabel(const std::vector<int64_t>& shape) {
  std::string out = shape.size() == 2 ? " 2D (" : " (";
  for (size_t d = 0; d < shape.size(); ++d) out += (d > 0 ? ", " : "") + std::to_string(shape[d]);
  return out + ")";
}

SweepTotals SweepCase(const StageCase& c, const Sweep& sweep, uint64_t& seed, cudaStream_t stream) {
  SweepTotals totals;
  const BuiltStage k = BuildStage(c.kind, c.config, sweep.stage_index);
  if (k.stage == nullptr) return totals;  // the failure is recorded
  ParamArena arena;
  ChainWorkspace ws;
  const std::vector<int> segs = sweep.seg_channels.empty() ? std::vector<int>{c.seg_channels} : sweep.seg_channels;
  for (const std::vector<int64_t>& shape : sweep.shapes)
    for (int batch : sweep.batches)
      for (int channels = c.min_channels; channels <= sweep.max_channels; ++channels)
        for (int seg_channels : segs)
          for (int rep = 0; rep < sweep.reps; ++rep) {
            std::string label = c.kind + " " + c.config.dump() + ShapeLabel(shape) + " B=" + std::to_string(batch) +
                                " C=" + std::to_string(channels);
            if (!sweep.seg_channels.empty() || seg_channels > 0) label += " S=" + std::to_string(seg_channels);
            BatchSpec spec = sweep.sample;
            spec.shape = shape;
            spec.batch = batch;
            spec.channels = channels;
            spec.seg_channels = seg_channels;
            spec.seed = seed++;
            const Mismatches m =
                CompareStageBatch(*k.transform, *k.stage, arena, ws, spec, c.tol, sweep.labels, stream, label);
            EXPECT_EQ(m.image, 0) << label << ": image elements out of tolerance";
            if (sweep.labels != LabelCheck::kCount) {
              EXPECT_EQ(m.labels, 0) << label << ": label elements differ";
            }
            totals.labels += m.labels;
            totals.label_voxels += m.label_voxels;
            totals.changed += m.changed;
          }
  return totals;
}

void SweepCases(const std::vector<StageCase>& cases, const Sweep& sweep, uint64_t seed) {
  TestStream stream;
  if (!stream.ok()) return;  // the failure is recorded
  for (const StageCase& c : cases) SweepCase(c, sweep, seed, stream.get());
}

}  // namespace augmentd::testing
