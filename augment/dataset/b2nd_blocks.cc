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

// Copies the box [lo, hi) (global coordinates) from a C-order array of shape `src_shape` placed at `src_origin`
// into one of shape `dst_shape` placed at `dst_origin`, row by row (item size ts).
void CopyBox(int n, size_t ts, const uint8_t* src, const int64_t* src_origin, const int64_t* src_shape,
             uint8_t* dst, const int64_t* dst_origin, const int64_t* dst_shape, const int64_t* lo, const int64_t* hi) {
  int64_t ss[B2ND_MAX_DIM], ds[B2ND_MAX_DIM], ext[B2ND_MAX_DIM], idx[B2ND_MAX_DIM] = {0};
  ss[n - 1] = ds[n - 1] = static_cast<int64_t>(ts);
  for (int d = n - 2; d >= 0; --d) {
    ss[d] = ss[d + 1] * src_shape[d + 1];
    ds[d] = ds[d + 1] * dst_shape[d + 1];
  }
  for (int d = 0; d < n; ++d) {
    src += (lo[d] - src_origin[d]) * ss[d];
    dst += (lo[d] - dst_origin[d]) * ds[d];
    ext[d] = hi[d] - lo[d];
  }
  const size_t row_bytes = static_cast<size_t>(ext[n - 1]) * ts;
  for (;;) {
    std::memcpy(dst, src, row_bytes);
    int d = n - 2;
    for (; d >= 0; --d) {  // next row: odometer over the outer axes, moving both pointers
      src += ss[d];
      dst += ds[d];
      if (++idx[d] < ext[d]) break;
      src -= ss[d] * ext[d];
      dst -= ds[d] * ext[d];
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

bool FiltersArePerBlock(const blosc2_schunk* sc) {
  for (int i = 0; i < BLOSC2_MAX_FILTERS; ++i) {
    const uint8_t f = sc->filters[i];
    if (f != BLOSC_NOFILTER && f != BLOSC_SHUFFLE && f != BLOSC_BITSHUFFLE) return false;
  }
  return true;
}

}  // namespace

std::unique_ptr<B2ndBlockReader> B2ndBlockReader::Create(b2nd_array_t* array) {
  if (array == nullptr || array->sc == nullptr || array->ndim < 1 || array->ndim > B2ND_MAX_DIM ||
      array->sc->frame == nullptr || !FiltersArePerBlock(array->sc) || array->blocknitems <= 0 ||
      array->extchunknitems <= 0 || array->extchunknitems % array->blocknitems != 0 ||
      array->extchunknitems * array->sc->typesize > (int64_t{1} << 30)) {
    return nullptr;
  }
  blosc2_dparams dparams = BLOSC2_DPARAMS_DEFAULTS;
  dparams.nthreads = 1;
  dparams.schunk = array->sc;  // lazy chunks read their blocks through the super-chunk's frame
  blosc2_context* dctx = blosc2_create_dctx(dparams);
  if (dctx == nullptr) return nullptr;
  return std::unique_ptr<B2ndBlockReader>(new B2ndBlockReader(array, dctx));
}

B2ndBlockReader::B2ndBlockReader(b2nd_array_t* array, blosc2_context* dctx)
    : array_(array),
      dctx_(dctx),
      typesize_(array->sc->typesize),
      nblocks_(static_cast<int>(array->extchunknitems / array->blocknitems)),
      mask_(new bool[static_cast<size_t>(nblocks_)]) {}

B2ndBlockReader::~B2ndBlockReader() { blosc2_free_ctx(dctx_); }

absl::StatusOr<bool> B2ndBlockReader::Read(const int64_t* start, const int64_t* stop, void* dst) {
  const int n = array_->ndim;
  int64_t grid[B2ND_MAX_DIM], lo[B2ND_MAX_DIM], hi[B2ND_MAX_DIM], idx[B2ND_MAX_DIM];
  for (int d = 0; d < n; ++d) {
    if (stop[d] <= start[d]) return true;  // empty region
    grid[d] = array_->extshape[d] / array_->chunkshape[d];
    lo[d] = idx[d] = start[d] / array_->chunkshape[d];
    hi[d] = (stop[d] - 1) / array_->chunkshape[d] + 1;
  }
  do {
    absl::StatusOr<bool> done = ReadChunk(Linear(n, grid, idx), idx, start, stop, static_cast<uint8_t*>(dst));
    if (!done.ok() || !*done) return done;
  } while (Next(n, lo, hi, idx));
  return true;
}

absl::StatusOr<bool> B2ndBlockReader::ReadChunk(int64_t nchunk, const int64_t* chunk, const int64_t* start,
                                                const int64_t* stop, uint8_t* dst) {
  const int n = array_->ndim;
  uint8_t* src = nullptr;
  bool needs_free = false;
  const int srcsize = blosc2_schunk_get_lazychunk(array_->sc, nchunk, &src, &needs_free);
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
  if (srcsize == 0 || src == nullptr) return false;  // uninitialised chunk: the slice path defines it
  int32_t nbytes = 0, cbytes = 0, blocksize = 0;
  const int64_t block_bytes = static_cast<int64_t>(array_->blocknitems) * typesize_;
  if (blosc2_cbuffer_sizes(src, &nbytes, &cbytes, &blocksize) < 0 || blocksize != block_bytes ||
      nbytes != array_->extchunknitems * typesize_) {
    return false;  // special-value chunk or a layout this path does not know
  }
  int64_t chunk_origin[B2ND_MAX_DIM], bgrid[B2ND_MAX_DIM], blo[B2ND_MAX_DIM], bhi[B2ND_MAX_DIM], b[B2ND_MAX_DIM];
  int64_t block_shape[B2ND_MAX_DIM], block_origin[B2ND_MAX_DIM], lo[B2ND_MAX_DIM], hi[B2ND_MAX_DIM];
  int64_t region_shape[B2ND_MAX_DIM];
  for (int d = 0; d < n; ++d) {
    chunk_origin[d] = chunk[d] * array_->chunkshape[d];
    const int64_t from = std::max(start[d], chunk_origin[d]) - chunk_origin[d];
    const int64_t to = std::min(stop[d], chunk_origin[d] + array_->chunkshape[d]) - chunk_origin[d];
    block_shape[d] = array_->blockshape[d];
    bgrid[d] = array_->extchunkshape[d] / block_shape[d];
    blo[d] = b[d] = from / block_shape[d];
    bhi[d] = (to - 1) / block_shape[d] + 1;
    region_shape[d] = stop[d] - start[d];
  }
  // Decode only the touched blocks, each straight to its place in a chunk-sized buffer (the other blocks are
  // neither read from the file nor decompressed).
  std::fill(mask_.get(), mask_.get() + nblocks_, true);
  int64_t touched = 0;
  do {
    mask_[static_cast<size_t>(Linear(n, bgrid, b))] = false;
    ++touched;
  } while (Next(n, blo, bhi, b));
  thread_local std::vector<uint8_t> chunk_buffer;
  if (chunk_buffer.size() < static_cast<size_t>(nbytes)) chunk_buffer.resize(static_cast<size_t>(nbytes));
  if (blosc2_set_maskout(dctx_, mask_.get(), nblocks_) < 0) return false;
  const int rc = blosc2_decompress_ctx(dctx_, src, srcsize, chunk_buffer.data(), nbytes);
  // c-blosc2 reports the bytes decoded without the masked blocks, but may count some skipped ones too (seen for an
  // edge chunk's padding blocks): accept anything from the touched blocks up to the whole chunk.
  if (rc < touched * block_bytes || rc > nbytes) {
    return absl::DataLossError(absl::StrCat("cannot decode ", touched, " blocks of chunk ", nchunk, ": ",
                                            rc < 0 ? print_error(rc) : "short output", " (blosc2 error ", rc, ")"));
  }
  std::copy(blo, blo + n, b);
  do {
    const uint8_t* block = chunk_buffer.data() + Linear(n, bgrid, b) * block_bytes;
    // The block's voxels inside both the region and its own chunk (the rest of the block is padding).
    for (int d = 0; d < n; ++d) {
      block_origin[d] = chunk_origin[d] + b[d] * block_shape[d];
      lo[d] = std::max(start[d], block_origin[d]);
      hi[d] = std::min({stop[d], block_origin[d] + block_shape[d], chunk_origin[d] + array_->chunkshape[d]});
    }
    CopyBox(n, static_cast<size_t>(typesize_), block, block_origin, block_shape, dst, start, region_shape, lo, hi);
  } while (Next(n, blo, bhi, b));
  return true;
}

}  // namespace augmentd::dataset
