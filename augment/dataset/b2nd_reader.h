// augment/dataset/b2nd_reader.h — `.b2nd` case arrays (blosc2 NDim, nnU-Net ≥ 2.6) through c-blosc2's b2nd API.
//
//   ASSIGN_OR_RETURN(std::unique_ptr<CaseArray> a, OpenB2nd(".../nnUNetPlans_3d_fullres/case_000.b2nd"));
//   RETURN_IF_ERROR(a->ReadBox(box, 0.0, DType::kFloat32, out, bytes));   // decodes only the chunks touched
//
// Opening reads the frame header and the b2nd metalayer (shape, chunk/block shape, dtype); a box read calls
// b2nd_get_slice_cbuffer for the in-bounds part, which decompresses only the chunks the box touches (LZ4HC
// or ZSTD, SHUFFLE or no filter — whatever the frame says; all codecs are built into c-blosc2). The file stays
// open through the handle; nothing is decoded ahead of need.
// Errors: missing file NOT_FOUND; a file b2nd_open rejects, a non-numpy or unsupported dtype, or a chunk that
// fails to decode DATA_LOSS (UNIMPLEMENTED for a valid but unsupported dtype), always naming the file.
// Resources: an open handle holds one file descriptor and, after a read, c-blosc2's cache of the last decoded
// chunk (up to a chunk's size, ≤ 6 MiB with nnU-Net ≥ 2.8 chunking). A cache layer should keep handles for
// the cases in flight (an LRU), not for every case of a large dataset (2 descriptors per case).
// Thread-safety: reads on one handle are serialised by a mutex (c-blosc2 keeps a one-chunk cache and a
// decompression context in the array); different handles read in parallel.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "augment/dataset/case_array.h"

namespace augmentd::dataset {

absl::StatusOr<std::unique_ptr<CaseArray>> OpenB2nd(const std::string& path);

// Calls blosc2_init() once per process (idempotent, thread-safe). OpenB2nd calls it; exposed for tests that
// write .b2nd files with the C API.
void EnsureBlosc2Initialized();

}  // namespace augmentd::dataset
