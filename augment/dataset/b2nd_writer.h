// augment/dataset/b2nd_writer.h — writes a contiguous-frame `.b2nd` file (blosc2 NDim) from a C-order buffer,
// the way nnU-Net ≥ 2.6 stores preprocessed cases. Used by the tests' miniature datasets and by
// bench/dataset_bench.cc to generate a synthetic dataset (no Python needed).
//
//   B2ndWriteOptions w;  w.chunks = {1, 64, 64, 64};  w.blocks = {1, 16, 16, 16};
//   RETURN_IF_ERROR(WriteB2ndFile("/tmp/x/case_000.b2nd", DType::kFloat32, {1, 96, 96, 96}, data, bytes, w));
//
// Errors: INVALID_ARGUMENT for a buffer whose size is not prod(shape)·DTypeSize(dtype) or chunk/block ranks
// that differ from the shape's; INTERNAL naming the file when c-blosc2 fails to create or write it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "augment/dataset/case_array.h"
#include "augment/dataset/dtype.h"

namespace augmentd::dataset {

enum class B2ndCodecKind { kLz4hc, kZstd };

struct B2ndWriteOptions {
  std::vector<int32_t> chunks;  // chunk shape (rank of the array)
  std::vector<int32_t> blocks;  // block shape (rank of the array)
  B2ndCodecKind codec = B2ndCodecKind::kLz4hc;
  int clevel = -1;              // -1: 5 for LZ4HC, 8 for ZSTD
  bool shuffle = true;
  bool delta = false;           // DELTA before the shuffle slot (not an nnU-Net setting; tests use it)
  int nthreads = 1;             // c-blosc2 compression threads
};

// Replaces `path` with the array (any DType; the numpy descr is written accordingly).
absl::Status WriteB2ndFile(const std::string& path, DType dtype, const Shape& shape, const void* data, size_t bytes,
                           const B2ndWriteOptions& options);

}  // namespace augmentd::dataset
