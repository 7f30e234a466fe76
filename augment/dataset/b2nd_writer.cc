#include "augment/dataset/b2nd_writer.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "augment/dataset/b2nd_reader.h"
#include "b2nd.h"
#include "blosc2.h"

namespace augmentd::dataset {
namespace {

const char* NumpyDescr(DType t) {
  switch (t) {
    case DType::kInt8: return "|i1";
    case DType::kUInt8: return "|u1";
    case DType::kInt16: return "<i2";
    case DType::kUInt16: return "<u2";
    case DType::kInt32: return "<i4";
    case DType::kInt64: return "<i8";
    case DType::kFloat32: return "<f4";
    case DType::kFloat64: return "<f8";
  }
  return nullptr;
}

}  // namespace

absl::Status WriteB2ndFile(const std::string& path, DType dtype, const Shape& shape, const void* data, size_t bytes,
                           const B2ndWriteOptions& options) {
  const char* descr = NumpyDescr(dtype);
  if (descr == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": writing ", DTypeName(dtype), " is not supported"));
  }
  if (bytes != static_cast<size_t>(NumElements(shape)) * DTypeSize(dtype)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": buffer holds ", bytes, " bytes, the shape needs ",
                                                   NumElements(shape) * static_cast<int64_t>(DTypeSize(dtype))));
  }
  if (options.chunks.size() != shape.size() || options.blocks.size() != shape.size()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": chunks/blocks must have rank ", shape.size()));
  }
  EnsureBlosc2Initialized();
  std::remove(path.c_str());
  blosc2_cparams cparams = BLOSC2_CPARAMS_DEFAULTS;
  const bool lz4 = options.codec == B2ndCodecKind::kLz4hc;
  cparams.compcode = lz4 ? BLOSC_LZ4HC : BLOSC_ZSTD;
  cparams.clevel = static_cast<uint8_t>(options.clevel >= 0 ? options.clevel : (lz4 ? 5 : 8));
  cparams.typesize = static_cast<int32_t>(DTypeSize(dtype));
  cparams.nthreads = static_cast<int16_t>(options.nthreads < 1 ? 1 : options.nthreads);
  for (int i = 0; i < BLOSC2_MAX_FILTERS; ++i) cparams.filters[i] = BLOSC_NOFILTER;
  cparams.filters[BLOSC2_MAX_FILTERS - 1] = options.shuffle ? BLOSC_SHUFFLE : BLOSC_NOFILTER;
  if (options.delta) cparams.filters[BLOSC2_MAX_FILTERS - 2] = BLOSC_DELTA;
  blosc2_dparams dparams = BLOSC2_DPARAMS_DEFAULTS;
  std::string url = path;
  blosc2_storage storage = BLOSC2_STORAGE_DEFAULTS;
  storage.contiguous = true;
  storage.urlpath = url.data();
  storage.cparams = &cparams;
  storage.dparams = &dparams;
  b2nd_context_t* ctx = b2nd_create_ctx(&storage, static_cast<int8_t>(shape.size()), shape.data(),
                                        options.chunks.data(), options.blocks.data(), descr, DTYPE_NUMPY_FORMAT,
                                        nullptr, 0);
  if (ctx == nullptr) return absl::InternalError(absl::StrCat(path, ": b2nd_create_ctx failed"));
  b2nd_array_t* array = nullptr;
  const int rc = b2nd_from_cbuffer(ctx, &array, data, static_cast<int64_t>(bytes));
  if (array != nullptr) b2nd_free(array);
  b2nd_free_ctx(ctx);
  if (rc < 0) return absl::InternalError(absl::StrCat(path, ": b2nd_from_cbuffer failed (", rc, ")"));
  return absl::OkStatus();
}

}  // namespace augmentd::dataset
