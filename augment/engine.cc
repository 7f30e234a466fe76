// Batch engine: validates the batch, runs every sample through the pipeline on the thread pool (one sample per
// task, single-threaded inside), then packs the per-sample results into batch tensors.
#include "augment/engine.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <new>

#include "absl/strings/str_cat.h"
#include "augment/cuda/engine.h"
#include "augment/json_util.h"
#include "augment/kernels/cpu_half.h"
#include "augment/status_macros.h"
#include "augment/thread_pool.h"

namespace augmentd {
namespace ju = json_util;

namespace {
constexpr int64_t kMaxDim = 4096;
constexpr int64_t kMaxVoxels = int64_t{1} << 28;

absl::Status CheckSpatial(const std::vector<int64_t>& shape, size_t first, const std::string& field) {
  int64_t vox = 1;
  for (size_t d = first; d < shape.size(); ++d) {
    if (shape[d] < 1 || shape[d] > kMaxDim) {
      return ju::Invalid(
          field, absl::StrCat("spatial size ", shape[d], " not in [1, ", kMaxDim, "] (", ShapeString(shape), ")"));
    }
    vox *= shape[d];
  }
  if (vox > kMaxVoxels) return ju::Invalid(field, absl::StrCat("sample larger than allowed (", vox, " voxels > 2^28)"));
  return absl::OkStatus();
}

void ConvertImage(const void* src, DType dtype, int64_t n, float* dst) {
  switch (dtype) {
    case DType::kFloat32:
      std::memcpy(dst, src, n * sizeof(float));
      break;
    case DType::kFloat16: {
      const auto* h = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = kernels::HalfBitsToFloat(h[i]);
      break;
    }
    case DType::kBFloat16: {
      const auto* h = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = kernels::BFloat16BitsToFloat(h[i]);
      break;
    }
    default:
      break;
  }
}

void StoreImage(const float* src, int64_t n, DType dtype, void* dst) {
  switch (dtype) {
    case DType::kFloat32:
      std::memcpy(dst, src, n * sizeof(float));
      break;
    case DType::kFloat16: {
      auto* h = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) h[i] = kernels::FloatToHalfBits(src[i]);
      break;
    }
    case DType::kBFloat16: {
      auto* h = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) h[i] = kernels::FloatToBFloat16Bits(src[i]);
      break;
    }
    default:
      break;
  }
}

void StoreLabels(const int16_t* src, int64_t n, DType dtype, void* dst) {
  if (dtype == DType::kBool) {
    auto* b = static_cast<uint8_t*>(dst);
    for (int64_t i = 0; i < n; ++i) b[i] = src[i] != 0 ? 1 : 0;
  } else {
    std::memcpy(dst, src, n * sizeof(int16_t));
  }
}

}  // namespace

absl::StatusOr<SampleData> SampleFromViews(const TensorView& image, const TensorView& seg, bool borrow) {
  if (image.data == nullptr) return ju::Invalid("image.data", "is null");
  if (!IsFloatingDType(image.dtype))
    return ju::Invalid("image.dtype",
                       absl::StrCat("must be float32/float16/bfloat16, got ", std::string(DTypeName(image.dtype))));
  if (image.shape.size() != 3 && image.shape.size() != 4) {
    return ju::Invalid("image.shape", absl::StrCat("expected (C, X, Y[, Z]), got ", ShapeString(image.shape)));
  }
  if (image.shape[0] < 1 || image.shape[0] > 4096) return ju::Invalid("image.shape", "channel count not in [1, 4096]");
  RETURN_IF_ERROR(CheckSpatial(image.shape, 1, "image.shape"));
  if (image.numel() > (int64_t{1} << 31))
    return ju::Invalid("image.shape", "sample larger than allowed (2^31 elements)");
  SampleData s;
  s.channels = image.shape[0];
  s.shape.assign(image.shape.begin() + 1, image.shape.end());
  if (borrow && image.dtype == DType::kFloat32) {
    s.external_image = static_cast<const float*>(image.data);
  } else {
    s.image.resize(static_cast<size_t>(image.numel()));
    ConvertImage(image.data, image.dtype, image.numel(), s.image.data());
  }
  if (seg.data != nullptr) {
    if (seg.dtype != DType::kInt8 && seg.dtype != DType::kInt16) {
      return ju::Invalid("seg.dtype", absl::StrCat("must be int8 or int16, got ", std::string(DTypeName(seg.dtype))));
    }
    if (seg.shape.size() != image.shape.size() ||
        !std::equal(seg.shape.begin() + 1, seg.shape.end(), image.shape.begin() + 1)) {
      return ju::Invalid("seg.shape",
                         absl::StrCat(ShapeString(seg.shape), " does not match image ", ShapeString(image.shape)));
    }
    if (seg.shape[0] < 1 || seg.shape[0] > 64) return ju::Invalid("seg.shape", "seg channel count not in [1, 64]");
    s.seg_channels = seg.shape[0];
    if (borrow && seg.dtype == DType::kInt16) {
      s.external_seg = static_cast<const int16_t*>(seg.data);
      return s;
    }
    s.seg.resize(static_cast<size_t>(seg.numel()));
    if (seg.dtype == DType::kInt16) {
      std::memcpy(s.seg.data(), seg.data, seg.numel() * sizeof(int16_t));
    } else {
      const auto* p = static_cast<const int8_t*>(seg.data);
      for (int64_t i = 0; i < seg.numel(); ++i) s.seg[i] = p[i];
    }
  }
  return s;
}

absl::Status AugmentSample(const PipelineSpec& spec, uint64_t seed, uint64_t sample_index,
                           const std::vector<nlohmann::json>* injected, SampleData& sample, SampleRecord& record,
                           uint64_t batch_first_index) {
  return engine_internal::Guard([&]() -> absl::Status {
    record.sample_index = sample_index;
    record.transforms.clear();
    for (size_t t = 0; t < spec.transforms.size(); ++t) {
      const TransformSpec& ts = spec.transforms[t];
      const Transform& tr = *ts.transform;
      AppliedTransform at;
      RETURN_IF_ERROR(DrawEntry(ts, t, seed, sample_index, injected, sample.layout(), at, batch_first_index));
      if (at.applied) {
        if (ts.kind != TransformKind::kSpatial) sample.Materialize();  // only spatial reads borrowed input
        // Region mode (region_mode.h): the step runs on the whole sample, then is blended with its input.
        const bool blend = at.region.mode != region_mode::kAll && !sample.seg.empty();
        std::vector<float> before;
        if (blend) before = sample.image;
        RETURN_IF_ERROR(WithSampleContext(ApplyEntry(ts, *at.params, sample), sample_index, t, tr.name()));
        if (blend) RETURN_IF_ERROR(WithSampleContext(ApplyRegion(at.region, before, sample), sample_index, t, tr.name()));
      }
      record.transforms.push_back(std::move(at));
    }
    sample.Materialize();
    return absl::OkStatus();
  });
}

absl::StatusOr<BatchResult> AugmentBatch(const PipelineSpec& spec, const BatchInput& input, const RunOptions& options) {
  if (options.device != "cpu") return AugmentBatchCuda(spec, input, options);  // cuda/engine.h
  const TensorView& image = input.image;
  if (image.shape.size() != 4 && image.shape.size() != 5) {
    return ju::Invalid("image.shape", absl::StrCat("expected (B, C, X, Y[, Z]), got ", ShapeString(image.shape)));
  }
  RETURN_IF_ERROR(spec.CheckLayoutStable(std::vector<int64_t>(image.shape.begin() + 2, image.shape.end())));
  if (image.shape[0] < 1) return ju::Invalid("image.shape", "empty batch");
  if (image.data == nullptr) return ju::Invalid("image.data", "is null");
  if (!IsFloatingDType(options.image_dtype)) return ju::Invalid("image_dtype", "must be a float dtype");
  const bool has_seg = input.seg.data != nullptr;
  if (has_seg && (input.seg.shape.size() != image.shape.size() || input.seg.shape[0] != image.shape[0])) {
    return ju::Invalid("seg.shape",
                       absl::StrCat(ShapeString(input.seg.shape), " does not match image ", ShapeString(image.shape)));
  }
  const int64_t batch = image.shape[0];
  if (options.injected != nullptr && static_cast<int64_t>(options.injected->size()) != batch) {
    return ju::Invalid(
        "params", absl::StrCat("injected parameters for ", options.injected->size(), " samples, batch has ", batch));
  }
  return [&]() -> absl::StatusOr<BatchResult> {
    try {
      const int64_t img_stride = image.numel() / batch;
      const int64_t seg_stride = has_seg ? input.seg.numel() / batch : 0;
      std::vector<SampleData> samples(batch);
      std::vector<absl::Status> status(batch);
      BatchResult result;
      result.samples.resize(batch);
      ParallelFor(batch, options.num_threads, [&](int64_t b) {
        TensorView iv{static_cast<const char*>(image.data) + b * img_stride * DTypeSize(image.dtype),
                      std::vector<int64_t>(image.shape.begin() + 1, image.shape.end()), image.dtype};
        TensorView sv;
        if (has_seg) {
          sv = TensorView{static_cast<const char*>(input.seg.data) + b * seg_stride * DTypeSize(input.seg.dtype),
                          std::vector<int64_t>(input.seg.shape.begin() + 1, input.seg.shape.end()), input.seg.dtype};
        }
        auto s = SampleFromViews(iv, sv, /*borrow=*/true);
        if (!s.ok()) {
          status[b] = s.status();
          return;
        }
        samples[b] = std::move(*s);
        status[b] = AugmentSample(spec, options.seed, options.first_sample_index + b,
                                  options.injected ? &(*options.injected)[b] : nullptr, samples[b], result.samples[b],
                                  options.first_sample_index);
      });
      for (const absl::Status& s : status) RETURN_IF_ERROR(s);
      // Pack: every sample must have the same output layout.
      const SampleData& s0 = samples[0];
      for (int64_t b = 1; b < batch; ++b) {
        const SampleData& s = samples[b];
        if (s.shape != s0.shape || s.channels != s0.channels || s.seg_channels != s0.seg_channels ||
            s.seg_pyramid.size() != s0.seg_pyramid.size()) {
          return ju::Invalid("params", absl::StrCat("samples 0 and ", b, " produced different output layouts (",
                                                    ShapeString(s0.shape), " vs ", ShapeString(s.shape),
                                                    "): injected parameters skip a shape-changing entry for some "
                                                    "samples only"));
        }
      }
      std::vector<int64_t> ishape = {batch, s0.channels};
      ishape.insert(ishape.end(), s0.shape.begin(), s0.shape.end());
      result.image = HostTensor::Empty(ishape, options.image_dtype);
      const int64_t in = s0.channels * s0.voxels();
      for (int64_t b = 0; b < batch; ++b) {
        StoreImage(samples[b].image.data(), in, options.image_dtype,
                   static_cast<char*>(result.image.raw_data()) + b * in * DTypeSize(options.image_dtype));
      }
      if (has_seg) {
        const DType ldt = s0.seg_is_bool ? DType::kBool : DType::kInt16;
        std::vector<std::pair<std::vector<int64_t>, int>> levels;  // shape, level (-1: plain seg)
        if (s0.seg_pyramid.empty()) {
          levels.push_back({s0.shape, -1});
        } else {
          for (size_t l = 0; l < s0.seg_pyramid.size(); ++l)
            levels.push_back({s0.seg_pyramid[l].shape, static_cast<int>(l)});
        }
        for (const auto& [shape, level] : levels) {
          std::vector<int64_t> full = {batch, s0.seg_channels};
          full.insert(full.end(), shape.begin(), shape.end());
          HostTensor t = HostTensor::Empty(full, ldt);
          const int64_t per = t.numel() / batch;
          for (int64_t b = 0; b < batch; ++b) {
            const std::vector<int16_t>& src = level < 0 ? samples[b].seg : samples[b].seg_pyramid[level].data;
            StoreLabels(src.data(), per, ldt, static_cast<char*>(t.raw_data()) + b * per * DTypeSize(ldt));
          }
          result.seg.push_back(std::move(t));
        }
      }
      return result;
    } catch (const std::bad_alloc&) {
      return absl::ResourceExhaustedError("out of host memory");
    } catch (const std::exception& e) {
      return absl::InternalError(absl::StrCat("engine error: ", e.what()));
    }
  }();
}

}  // namespace augmentd
