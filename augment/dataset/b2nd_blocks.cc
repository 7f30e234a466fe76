#include "augment/dataset/b2nd_blocks.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace augmentd::dataset {
namespace {

// Advances the multi-index `idx` over [lo, hi) per axis in C order; false after the last position.
bool Next(int n, const int64_t* lo, const int64_t* hi, int64_t* idx) {
  for (int d = n - 1; d >= 0; --d) {
    if (++idx[d] < hi[d]) return true;
    idx[d] = lo[d];
  }
  return false;
}

// C-order linear index of `idx` in a grid of extents `grid`.
int64_t Linear(int n, const int64_t* grid, const int64_t* idx) {
  int64_t i = 0;
  for (int d = 0; d < n; ++d) i = i * grid[d] + idx[d];
  return i;
}

bool FiltersArePerBlock(const blosc2_schunk* sc) {
  for (int i = 0; i < BLOSC2_MAX_FILTERS; ++i) {
    const uint8_t f = sc->filters[i];
    if (f != BLOSC_NOFILTER && f != BLOSC_SHUFFLE && f != BLOSC_BITSHUFFLE) return false;
  }
  return true;
}

// A decompression context per thread (contexts are not thread-safe; chunks of an in-memory frame need no
// super-chunk), freed when the thread ends.
blosc2_context* ThreadDecompressionContext() {
  struct Holder {
    blosc2_context* ctx = nullptr;
    ~Holder() {
      if (ctx != nullptr) blosc2_free_ctx(ctx);
    }
  };
  thread_local Holder holder;
  if (holder.ctx == nullptr) {
    blosc2_dparams dparams = BLOSC2_DPARAMS_DEFAULTS;
    dparams.nthreads = 1;
    holder.ctx = blosc2_create_dctx(dparams);
  }
  return holder.ctx;
}

}  // namespace

b2nd_array_t* B2ndArrayOverMapping(const MappedFile& file) {
  if (file.data() == nullptr) return nullptr;
  b2nd_array_t* array = nullptr;
  // copy=false: the frame points into the mapping (c-blosc2's API takes a non-const buffer but only reads it).
  if (b2nd_from_cframe(const_cast<uint8_t*>(file.data()), static_cast<int64_t>(file.size()), false, &array) < 0 ||
      array == nullptr) {
    return nullptr;
  }
  blosc2_schunk_avoid_cframe_free(array->sc, true);
  return array;
}

std::unique_ptr<B2ndBlockReader> B2ndBlockReader::Create(b2nd_array_t* array, DType dtype) {
  if (array == nullptr || array->sc == nullptr || array->ndim < 1 || array->ndim > B2ND_MAX_DIM ||
      array->sc->frame == nullptr || !FiltersArePerBlock(array->sc) || array->blocknitems <= 0 ||
      array->extchunknitems <= 0 || array->extchunknitems % array->blocknitems != 0 ||
      array->extchunknitems * array->sc->typesize > (int64_t{1} << 30) ||
      static_cast<size_t>(array->sc->typesize) != DTypeSize(dtype)) {
    return nullptr;
  }
  return std::unique_ptr<B2ndBlockReader>(new B2ndBlockReader(array, dtype));
}

absl::Status B2ndBlockReader::Read(const int64_t* start, const int64_t* stop, const RegionTarget& dst,
                                   ChunkFallback fallback) const {
  const int n = array_->ndim;
  int64_t grid[B2ND_MAX_DIM], lo[B2ND_MAX_DIM], hi[B2ND_MAX_DIM], idx[B2ND_MAX_DIM];
  for (int d = 0; d < n; ++d) {
    if (stop[d] <= start[d]) return absl::OkStatus();  // empty region
    grid[d] = array_->extshape[d] / array_->chunkshape[d];
    lo[d] = idx[d] = start[d] / array_->chunkshape[d];
    hi[d] = (stop[d] - 1) / array_->chunkshape[d] + 1;
  }
  do {
    if (absl::Status st = ReadChunk(Linear(n, grid, idx), idx, start, stop, dst, fallback); !st.ok()) return st;
  } while (Next(n, lo, hi, idx));
  return absl::OkStatus();
}

absl::Status B2ndBlockReader::ReadChunk(int64_t nchunk, const int64_t* chunk, const int64_t* start,
                                        const int64_t* stop, const RegionTarget& dst, ChunkFallback fallback) const {
  const int n = array_->ndim;
  // The chunk's part of the region, [clo, chi).
  int64_t chunk_origin[B2ND_MAX_DIM], clo[B2ND_MAX_DIM], chi[B2ND_MAX_DIM];
  for (int d = 0; d < n; ++d) {
    chunk_origin[d] = chunk[d] * array_->chunkshape[d];
    clo[d] = std::max(start[d], chunk_origin[d]);
    chi[d] = std::min(stop[d], chunk_origin[d] + array_->chunkshape[d]);
  }
  uint8_t* src = nullptr;
  bool needs_free = false;
  int srcsize;
  {
    std::lock_guard<std::mutex> lock(chunk_mu_);
    srcsize = blosc2_schunk_get_lazychunk(array_->sc, nchunk, &src, &needs_free);
  }
  struct Free {
    uint8_t* p;
    bool owned;
    ~Free() {
      if (owned) std::free(p);
    }
  } release{src, needs_free};
  if (srcsize < 0) {
    return absl::DataLossError(absl::StrCat("cannot load chunk ", nchunk, ": ", print_error(srcsize), " (blosc2 error ",
                                            srcsize, ")"));
  }
  if (srcsize < BLOSC_EXTENDED_HEADER_LENGTH || src == nullptr) return fallback(clo, chi);  // uninitialised
  // An all-zero chunk (nnU-Net segmentations have many): the frame synthesises a header-only chunk.
  const int special = (src[BLOSC2_CHUNK_BLOSC2_FLAGS] >> 4) & BLOSC2_SPECIAL_MASK;
  if (special == BLOSC2_SPECIAL_ZERO) {
    FillRegion(dst, clo, chi, 0.0);
    return absl::OkStatus();
  }
  // A lazy copy from a file-backed frame: its blocks would be read through the frame's shared file state.
  blosc2_context* dctx = ThreadDecompressionContext();
  if (needs_free || dctx == nullptr) return fallback(clo, chi);
  int32_t nbytes = 0, cbytes = 0, blocksize = 0;
  const int64_t block_bytes = static_cast<int64_t>(array_->blocknitems) * typesize_;
  if (special != 0 || blosc2_cbuffer_sizes(src, &nbytes, &cbytes, &blocksize) < 0 || blocksize != block_bytes ||
      nbytes != array_->extchunknitems * typesize_) {
    return fallback(clo, chi);  // other special values, or a layout this path does not know
  }
  int64_t bgrid[B2ND_MAX_DIM], blo[B2ND_MAX_DIM], bhi[B2ND_MAX_DIM], b[B2ND_MAX_DIM];
  int64_t block_shape[B2ND_MAX_DIM], block_origin[B2ND_MAX_DIM], lo[B2ND_MAX_DIM], hi[B2ND_MAX_DIM];
  for (int d = 0; d < n; ++d) {
    block_shape[d] = array_->blockshape[d];
    bgrid[d] = array_->extchunkshape[d] / block_shape[d];
    blo[d] = b[d] = (clo[d] - chunk_origin[d]) / block_shape[d];
    bhi[d] = (chi[d] - chunk_origin[d] - 1) / block_shape[d] + 1;
  }
  // One touched block at a time: decode it into a block-sized per-thread buffer (it stays in the core's cache)
  // and copy its part of the region to the output right away. The other blocks are neither read nor decoded.
  thread_local std::vector<uint8_t> block_buffer;
  if (block_buffer.size() < static_cast<size_t>(block_bytes)) block_buffer.resize(static_cast<size_t>(block_bytes));
  do {
    const int64_t index = Linear(n, bgrid, b);
    const int rc = blosc2_getitem_bytes_ctx(dctx, src, srcsize, static_cast<int32_t>(index * block_bytes),
                                            static_cast<int32_t>(block_bytes), block_buffer.data(),
                                            static_cast<int32_t>(block_bytes));
    if (rc != block_bytes) {
      return absl::DataLossError(absl::StrCat("cannot decode block ", index, " of chunk ", nchunk, ": ",
                                              rc < 0 ? print_error(rc) : "short output", " (blosc2 error ", rc, ")"));
    }
    // The block's voxels inside both the chunk's part of the region and the chunk (the rest is padding).
    for (int d = 0; d < n; ++d) {
      block_origin[d] = chunk_origin[d] + b[d] * block_shape[d];
      lo[d] = std::max(clo[d], block_origin[d]);
      hi[d] = std::min(chi[d], block_origin[d] + block_shape[d]);
    }
    CopyRegion(dtype_, block_buffer.data(), block_origin, block_shape, dst, lo, hi);
  } while (Next(n, blo, bhi, b));
  return absl::OkStatus();
}

}  // namespace augmentd::dataset
