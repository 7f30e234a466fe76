// augment/dataset/b2nd_reader.h — `.b2nd` case arrays (blosc2 NDim, nnU-Net ≥ 2.6) through c-blosc2's b2nd API.
//
//   ASSIGN_OR_RETURN(std::unique_ptr<CaseArray> a, OpenB2nd(".../nnUNetPlans_3d_fullres/case_000.b2nd"));
//   RETURN_IF_ERROR(a->ReadBox(box, 0.0, DType::kFloat32, out, bytes));   // decodes only the blocks touched
//
// Opening reads the frame header and the b2nd metalayer (shape, chunk/block shape, dtype) and maps the file
// (MappedFile::OpenShared). A box read decodes only the nd-blocks its in-bounds part touches, from the mapping
// straight into the caller's output box (b2nd_blocks.h; LZ4HC or ZSTD, SHUFFLE or no filter — whatever the frame
// says; all codecs are built into c-blosc2; all-zero chunks are filled without decoding); chunks that path does
// not handle (other filters or special values, uninitialised chunks, a frame the mapping cannot be opened as)
// go through b2nd_get_slice_cbuffer on the file-backed handle. Nothing is decoded ahead of need.
// Errors: missing file NOT_FOUND; a file b2nd_open rejects, a non-numpy or unsupported dtype, or a chunk that
// fails to decode DATA_LOSS (UNIMPLEMENTED for a valid but unsupported dtype), always naming the file.
// Resources: an open handle holds the file-backed b2nd handle (one file descriptor; after a whole-chunk read,
// c-blosc2's cache of the last decoded chunk, ≤ 6 MiB with nnU-Net ≥ 2.8 chunking) and a reference to the
// file's mapping (address space, page cache pages); each reading thread keeps a block-sized buffer and a
// decompression context (b2nd_blocks.h), and a region-sized buffer once it used the whole-chunk path. A cache
// layer should keep handles for the cases in flight (an LRU), not for every case of a large dataset.
// Thread-safety: block-path reads of one handle run in parallel (only the chunk lookup is serialised);
// whole-chunk reads of one handle are serialised by a mutex (c-blosc2 keeps a one-chunk cache and a
// decompression context in the array); different handles read in parallel.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "augment/dataset/case_array.h"

namespace augmentd::dataset {

// How a box is decoded. kBlocks (default): only the nd-blocks the box touches (b2nd_blocks.h), falling back
// to kSlice per read where that path does not apply. kSlice: b2nd_get_slice_cbuffer (c-blosc2's own path).
enum class B2ndReadMode { kBlocks, kSlice };

// kSlice when the environment sets AUGMENTD_B2ND_READ=slice (for comparisons), else kBlocks.
B2ndReadMode DefaultB2ndReadMode();

absl::StatusOr<std::unique_ptr<CaseArray>> OpenB2nd(const std::string& path,
                                                    B2ndReadMode mode = DefaultB2ndReadMode());

// Calls blosc2_init() once per process (idempotent, thread-safe). OpenB2nd calls it; exposed for tests that
// write .b2nd files with the C API.
void EnsureBlosc2Initialized();

}  // namespace augmentd::dataset
