#include "augment/dataset/b2nd_blocks.h"

#include <algorithm>
#include <atomic>
#include <chrono>
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

std::atomic<bool> timing_on{false};
std::atomic<uint64_t> decode_ns{0}, write_ns{0}, decoded_blocks{0};

uint64_t NowNs() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

// Adds a column's decode / write times to the totals (when timing is on).
struct ColumnTimer {
  bool on = timing_on.load(std::memory_order_relaxed);
  uint64_t decode = 0, write = 0, blocks = 0, mark = 0;
  void Start() {
    if (on) mark = NowNs();
  }
  void Stop(uint64_t* into) {
    if (on) *into += NowNs() - mark;
  }
  ~ColumnTimer() {
    if (!on) return;
    decode_ns.fetch_add(decode, std::memory_order_relaxed);
    write_ns.fetch_add(write, std::memory_order_relaxed);
    decoded_blocks.fetch_add(blocks, std::memory_order_relaxed);
  }
};

}  // namespace

void SetB2ndBlockTiming(bool enabled) { timing_on.store(enabled, std::memory_order_relaxed); }

B2ndBlockTiming B2ndBlockTimingTotals() {
  B2ndBlockTiming t;
  t.decode_ns = decode_ns.load(std::memory_order_relaxed);
  t.write_ns = write_ns.load(std::memory_order_relaxed);
  t.blocks = decoded_blocks.load(std::memory_order_relaxed);
  return t;
}

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
  const int n = array_->ndim, z = n - 1;
  int64_t grid[B2ND_MAX_DIM], lo[B2ND_MAX_DIM], hi[B2ND_MAX_DIM], idx[B2ND_MAX_DIM];
  for (int d = 0; d < n; ++d) {
    if (stop[d] <= start[d]) return absl::OkStatus();  // empty region
    grid[d] = array_->extshape[d] / array_->chunkshape[d];
    lo[d] = idx[d] = start[d] / array_->chunkshape[d];
    hi[d] = (stop[d] - 1) / array_->chunkshape[d] + 1;
  }
  RowWriter writer(dtype_, dst);
  // One column of chunks along the last axis at a time (Next over the z leading axes).
  do {
    if (absl::Status st = ReadColumn(grid, idx, lo[z], hi[z], start, stop, dst, fallback, writer); !st.ok()) {
      return st;
    }
  } while (Next(z, lo, hi, idx));
  return absl::OkStatus();
}

absl::Status B2ndBlockReader::ReadColumn(const int64_t* grid, const int64_t* column, int64_t first, int64_t last,
                                         const int64_t* start, const int64_t* stop, const RegionTarget& dst,
                                         ChunkFallback fallback, RowWriter& writer) const {
  const int n = array_->ndim, z = n - 1;
  // The column's part of the region: [clo, chi) on the leading axes (shared by its chunks), per chunk on z.
  int64_t idx[B2ND_MAX_DIM], corigin[B2ND_MAX_DIM], clo[B2ND_MAX_DIM], chi[B2ND_MAX_DIM];
  for (int d = 0; d < n; ++d) {
    idx[d] = column[d];
    corigin[d] = column[d] * array_->chunkshape[d];
    clo[d] = std::max(start[d], corigin[d]);
    chi[d] = std::min(stop[d], corigin[d] + array_->chunkshape[d]);
  }
  // The column's chunks that decode block by block; the others are filled or handed to the fallback now.
  thread_local std::vector<ColumnChunk> chunks;
  chunks.clear();
  blosc2_context* dctx = ThreadDecompressionContext();
  const int64_t block_bytes = static_cast<int64_t>(array_->blocknitems) * typesize_;
  for (int64_t c = first; c < last; ++c) {
    idx[z] = c;
    corigin[z] = c * array_->chunkshape[z];
    clo[z] = std::max(start[z], corigin[z]);
    chi[z] = std::min(stop[z], corigin[z] + array_->chunkshape[z]);
    const int64_t nchunk = Linear(n, grid, idx);
    uint8_t* src = nullptr;
    bool needs_free = false;
    int srcsize;
    {
      std::lock_guard<std::mutex> lock(chunk_mu_);
      srcsize = blosc2_schunk_get_lazychunk(array_->sc, nchunk, &src, &needs_free);
    }
    // Special values are read before a lazy copy is freed: the frame synthesises special chunks (all-zero ones
    // too) in fresh memory, so needs_free is set for them as well.
    const int special = src == nullptr || srcsize < BLOSC_EXTENDED_HEADER_LENGTH
                            ? -1  // uninitialised (or an error, reported below)
                            : (src[BLOSC2_CHUNK_BLOSC2_FLAGS] >> 4) & BLOSC2_SPECIAL_MASK;
    if (special == BLOSC2_SPECIAL_ZERO) {
      // An all-zero chunk (nnU-Net segmentations have many): filled, nothing decoded, no file read.
      if (needs_free) std::free(src);
      FillRegion(dst, clo, chi, 0.0);
      continue;
    }
    if (needs_free) {  // a lazy copy from a file-backed frame: read through the frame's shared file state
      std::free(src);
      if (srcsize >= 0) {
        if (absl::Status st = fallback(clo, chi); !st.ok()) return st;
        continue;
      }
    }
    if (srcsize < 0) {
      return absl::DataLossError(absl::StrCat("cannot load chunk ", nchunk, ": ", print_error(srcsize),
                                              " (blosc2 error ", srcsize, ")"));
    }
    absl::Status st;
    int32_t nbytes = 0, cbytes = 0, blocksize = 0;
    if (special != 0 || dctx == nullptr || blosc2_cbuffer_sizes(src, &nbytes, &cbytes, &blocksize) < 0 ||
               blocksize != block_bytes || nbytes != array_->extchunknitems * typesize_) {
      st = fallback(clo, chi);  // uninitialised, other special values, or a layout this path does not know
    } else {
      chunks.push_back(ColumnChunk{src, srcsize, nchunk, corigin[z], clo[z], chi[z]});
    }
    if (!st.ok()) return st;
  }
  if (chunks.empty()) return absl::OkStatus();
  return DecodeColumn(chunks, corigin, clo, chi, dctx, dst, writer);
}

absl::Status B2ndBlockReader::DecodeColumn(const std::vector<ColumnChunk>& chunks, const int64_t* corigin,
                                           const int64_t* clo, const int64_t* chi, blosc2_context* dctx,
                                           const RegionTarget& dst, RowWriter& writer) const {
  const int n = array_->ndim, z = n - 1;
  const int64_t block_bytes = static_cast<int64_t>(array_->blocknitems) * typesize_;
  const int64_t out_item = static_cast<int64_t>(DTypeSize(dst.dtype));
  // Block grid of a chunk, the touched blocks on the leading axes, element strides of a block and of dst.
  int64_t bshape[B2ND_MAX_DIM], bgrid[B2ND_MAX_DIM], blo[B2ND_MAX_DIM], bhi[B2ND_MAX_DIM], b[B2ND_MAX_DIM];
  int64_t bstride[B2ND_MAX_DIM], dstride[B2ND_MAX_DIM];
  for (int d = 0; d < n; ++d) {
    bshape[d] = array_->blockshape[d];
    bgrid[d] = array_->extchunkshape[d] / bshape[d];
  }
  bstride[z] = dstride[z] = 1;
  for (int d = z - 1; d >= 0; --d) {
    bstride[d] = bstride[d + 1] * bshape[d + 1];
    dstride[d] = dstride[d + 1] * dst.shape[d + 1];
  }
  for (int d = 0; d < z; ++d) {
    blo[d] = b[d] = (clo[d] - corigin[d]) / bshape[d];
    bhi[d] = (chi[d] - corigin[d] - 1) / bshape[d] + 1;
  }
  // Blocks decoded per pass: the row of touched blocks along z (a whole box row), at most kStagingBytes.
  const int64_t max_group = std::max<int64_t>(1, kStagingBytes / block_bytes);
  thread_local std::vector<uint8_t> staging;
  Piece pieces[kMaxGroup];
  const int64_t group_cap = std::min<int64_t>(max_group, kMaxGroup);
  if (staging.size() < static_cast<size_t>(group_cap * block_bytes)) {
    staging.resize(static_cast<size_t>(group_cap * block_bytes));
  }
  ColumnTimer timer;
  do {
    // This block row's part of the region on the leading axes: [rlo, rhi).
    int64_t rlo[B2ND_MAX_DIM], rhi[B2ND_MAX_DIM];
    int64_t src_row = 0;  // element offset of row rlo inside a block
    for (int d = 0; d < z; ++d) {
      const int64_t origin = corigin[d] + b[d] * bshape[d];
      rlo[d] = std::max(clo[d], origin);
      rhi[d] = std::min(chi[d], origin + bshape[d]);
      src_row += (rlo[d] - origin) * bstride[d];
    }
    int64_t group = 0;
    for (const ColumnChunk& c : chunks) {
      const int64_t bz_lo = (c.lo - c.origin) / bshape[z], bz_hi = (c.hi - c.origin - 1) / bshape[z] + 1;
      for (int64_t bz = bz_lo; bz < bz_hi; ++bz) {
        b[z] = bz;
        const int64_t index = Linear(n, bgrid, b);
        uint8_t* slot = staging.data() + group * block_bytes;
        timer.Start();
        const int rc = blosc2_getitem_bytes_ctx(dctx, c.src, c.srcsize, static_cast<int32_t>(index * block_bytes),
                                                static_cast<int32_t>(block_bytes), slot,
                                                static_cast<int32_t>(block_bytes));
        timer.Stop(&timer.decode);
        ++timer.blocks;
        if (rc != block_bytes) {
          return absl::DataLossError(absl::StrCat("cannot decode block ", index, " of chunk ", c.nchunk, ": ",
                                                  rc < 0 ? print_error(rc) : "short output", " (blosc2 error ", rc,
                                                  ")"));
        }
        const int64_t origin = c.origin + bz * bshape[z];
        const int64_t zlo = std::max(c.lo, origin), zhi = std::min(c.hi, origin + bshape[z]);
        pieces[group++] = Piece{slot + (src_row + zlo - origin) * typesize_, zlo, zhi - zlo};
        if (group == group_cap || (&c == &chunks.back() && bz + 1 == bz_hi)) {
          timer.Start();
          WriteRows(pieces, group, rlo, rhi, bstride, dstride, out_item, dst, writer);
          timer.Stop(&timer.write);
          group = 0;
        }
      }
    }
  } while (Next(z, blo, bhi, b));
  writer.Flush();
  return absl::OkStatus();
}

void B2ndBlockReader::WriteRows(const Piece* pieces, int64_t count, const int64_t* rlo, const int64_t* rhi,
                                const int64_t* bstride, const int64_t* dstride, int64_t out_item,
                                const RegionTarget& dst, RowWriter& writer) const {
  const int z = array_->ndim - 1;
  // Output row of rlo (z offset added per piece) and an odometer over the leading axes in [rlo, rhi).
  int64_t out_row = 0, idx[B2ND_MAX_DIM];
  for (int d = 0; d < z; ++d) {
    out_row += (rlo[d] - dst.origin[d]) * dstride[d];
    idx[d] = rlo[d];
  }
  uint8_t* base = static_cast<uint8_t*>(dst.base);
  // Pieces that continue each other along z (the usual case) make one span of the output row.
  bool contiguous = true;
  int64_t row_elems = pieces[0].count;
  for (int64_t k = 1; k < count; ++k) {
    contiguous &= pieces[k].z == pieces[k - 1].z + pieces[k - 1].count;
    row_elems += pieces[k].count;
  }
  const size_t row_bytes = static_cast<size_t>(row_elems * out_item);
  const ConvertFn convert = writer.converter();
  int64_t src_off = 0;  // element offset of the current row from row rlo, inside a block
  for (;;) {
    uint8_t* out = base + (out_row + pieces[0].z - dst.origin[z]) * out_item;
    uint8_t* span = contiguous ? writer.Span(out, row_bytes) : nullptr;
    if (span != nullptr) {
      for (int64_t k = 0; k < count; ++k) {
        convert(pieces[k].src + src_off * typesize_, span, static_cast<size_t>(pieces[k].count));
        span += pieces[k].count * out_item;
      }
      writer.Commit(row_bytes);
    } else {
      for (int64_t k = 0; k < count; ++k) {
        const Piece& p = pieces[k];
        writer.Put(p.src + src_off * typesize_, base + (out_row + p.z - dst.origin[z]) * out_item,
                   static_cast<size_t>(p.count));
      }
    }
    int d = z - 1;
    for (; d >= 0; --d) {
      src_off += bstride[d];
      out_row += dstride[d];
      if (++idx[d] < rhi[d]) break;
      src_off -= bstride[d] * (rhi[d] - rlo[d]);
      out_row -= dstride[d] * (rhi[d] - rlo[d]);
      idx[d] = rlo[d];
    }
    if (d < 0) return;
  }
}

}  // namespace augmentd::dataset
