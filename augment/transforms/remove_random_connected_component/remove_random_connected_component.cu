// remove_random_connected_component's kernels (cc_cuda_types.h; the stage: remove_random_connected_component_cuda.cc).
// Per launch set, all enqueued on the stream (no host round trip, a fixed number of launches). A set covers one
// round or, when the rounds are independent (no fill channel, distinct channels per sample: the stage decides), all
// of them at once: slot s = round · B + b of the grid's slot axis works on sample s % B with its own scratch.
//   CcLocal    one block per tile of kLocalVoxels voxels (8 × 8 × 8; 1 × 16 × 32 for a unit leading axis): the mask,
//              then union-find in shared memory over the tile's own voxel pairs (below), labels[i] = the tile-local
//              root's voxel index (its smallest: local raster order is global raster order inside a tile), sizes 0
//              (foreground only: finds start at foreground voxels and unions link foreground voxels);
//   CcBorder   the pairs that cross a tile border, in global memory by atomicMin union-find: a root only ever links to
//              a smaller index, so a tree's root is its component's smallest voxel index. Finds split paths (each
//              visited node ← its grandparent, plain L2 stores, as ECL-CC). Most unions and all the deep chains of a
//              large component now stay in shared memory; the global trees start one level deep.
//   The pairs: every foreground voxel unites with its foreground neighbours that precede it in raster order (the 13
//   of the 26-neighbourhood the CPU's Label visits; when the voxel before it in the row is foreground, only that one
//   and the 4 of dc = +1: the others are its neighbours too and it unites with them), each pair in CcLocal when both
//   voxels lie in one tile, else in CcBorder;
//   CcCompress labels[i] = root, sizes[root] += 1 (one add per warp and root: __match_any_sync; the block's first
//              root summed in shared memory, one global atomic per block for it);
//   CcCount    valid roots (size < limit) per tile of kTile voxels, coalesced, one block per tile;
//   CcPick     one block per sample: scans the tile counts, k = min(⌊u_c · V⌋, V − 1) in double as the CPU's Pick, then
//              the k-th valid root in raster order inside its tile (valid components in raster order of their first
//              voxel: the CPU's / skimage's numbering);
//   CcApply    x[a] ← 0 on the chosen component, x[fill] ← 1 when set.
#include <cstdint>

#include "augment/kernels/cuda/chain_common.cuh"
#include "augment/transforms/remove_random_connected_component/cc_cuda_types.h"
#include "augment/transforms/remove_random_connected_component/cc_pairs.h"

namespace augmentd::cuda::chain {
namespace {

constexpr int kSelectThreads = 1024;
constexpr int kTile = kCcTile;  // voxels per tile of CcCount; CcPick scans one tile, 4 per thread
static_assert(kTile == 4 * kSelectThreads, "CcPick scans a tile with 4 voxels per thread");
constexpr int kCountThreads = 256;
constexpr int kLocalVoxels = kCcLocalVoxels;

// Root of x: follows parents (always to smaller indices) until a self-loop, pointing every visited node at its
// grandparent on the way (path splitting). Safe beside concurrent unions: a node is only re-pointed when it was seen
// as a non-root, always to one of its ancestors (same tree, smaller index, so the forest stays acyclic); a link it
// overwrites was made by a stale atomicMin whose thread goes on to unite the same two trees (CcUnion). Loads and
// stores go to L2 (other blocks relink).
__device__ int32_t CcFind(int32_t* labels, int32_t x) {
  int32_t curr = __ldcg(labels + x);
  if (curr == x) return x;
  int32_t prev = x, next;
  while (curr > (next = __ldcg(labels + curr))) {
    __stcg(labels + prev, next);
    prev = curr;
    curr = next;
  }
  return curr;
}

__device__ void CcUnion(int32_t* labels, int32_t a, int32_t b) {
  while (true) {
    a = CcFind(labels, a);
    b = CcFind(labels, b);
    if (a == b) return;
    if (a > b) {
      const int32_t s = a;
      a = b;
      b = s;
    }
    // Link the larger root b under a; when b stopped being a root meanwhile, retry from its new parent.
    const int32_t old = atomicMin(labels + b, a);
    if (old == b) return;
    b = old;
  }
}

// Union-find on one tile's parents in shared memory (indices local to the tile), the same lock-free scheme as
// CcFind / CcUnion above (volatile: other threads of the block relink).
__device__ int32_t LocalFind(volatile int32_t* p, int32_t x) {
  int32_t curr = p[x];
  if (curr == x) return x;
  int32_t prev = x, next;
  while (curr > (next = p[curr])) {
    p[prev] = next;
    prev = curr;
    curr = next;
  }
  return curr;
}

__device__ void LocalUnion(int32_t* p, int32_t a, int32_t b) {
  volatile int32_t* vp = p;
  while (true) {
    a = LocalFind(vp, a);
    b = LocalFind(vp, b);
    if (a == b) return;
    if (a > b) {
      const int32_t s = a;
      a = b;
      b = s;
    }
    const int32_t old = atomicMin(p + b, a);
    if (old == b) return;
    b = old;
  }
}

// Grid (tiles of the sample, slots), kLocalVoxels threads: thread t is voxel (la, lb, lc) of the tile.
__global__ void __launch_bounds__(kLocalVoxels)
    CcLocalKernel(const CcSample* __restrict__ recs, int32_t batch, int32_t channels, CcTileGeom g,
                  const float* __restrict__ x, uint8_t* __restrict__ mask, int32_t* __restrict__ labels,
                  int32_t* __restrict__ sizes) {
  __shared__ int32_t parent[kLocalVoxels];
  __shared__ uint8_t fg[kLocalVoxels];
  const int32_t slot = static_cast<int32_t>(blockIdx.y), b = slot % batch;
  const CcSample r = recs[slot];
  if (!r.on) return;  // the whole block
  const int64_t n = int64_t{g.d[0]} * g.d[1] * g.d[2];
  const float* xa = x + (static_cast<int64_t>(b) * channels + r.channel) * n;
  const uint32_t tile = blockIdx.x;
  const int32_t tc_count = g.tiles[2], tb_count = g.tiles[1];
  const int32_t t0 = static_cast<int32_t>(tile / static_cast<uint32_t>(tb_count * tc_count));
  const int32_t t1 = static_cast<int32_t>((tile / static_cast<uint32_t>(tc_count)) % static_cast<uint32_t>(tb_count));
  const int32_t t2 = static_cast<int32_t>(tile % static_cast<uint32_t>(tc_count));
  const int32_t t = static_cast<int32_t>(threadIdx.x);
  const int32_t la = t / (g.t[1] * g.t[2]), lb = (t / g.t[2]) % g.t[1], lc = t % g.t[2];
  const int32_t a = t0 * g.t[0] + la, y = t1 * g.t[1] + lb, z = t2 * g.t[2] + lc;
  const bool inside = a < g.d[0] && y < g.d[1] && z < g.d[2];
  const int64_t i = inside ? (int64_t{a} * g.d[1] + y) * g.d[2] + z : 0;
  const bool f = inside && xa[i] != 0.0f;
  fg[t] = f;
  parent[t] = t;
  if (inside) mask[static_cast<int64_t>(slot) * n + i] = f;
  __syncthreads();
  if (f) {
    const bool left = z > 0 && (lc > 0 ? fg[t - 1] != 0 : xa[i - 1] != 0.0f);
    CcForPairs(left, [&](int32_t da, int32_t db, int32_t dc) {
      if (!CcPairInTile(g, la, lb, lc, da, db, dc)) return;  // another tile's pair (CcBorder)
      const int32_t u = ((la + da) * g.t[1] + (lb + db)) * g.t[2] + (lc + dc);
      if (fg[u]) LocalUnion(parent, t, u);  // a voxel outside the volume is not foreground
    });
  }
  __syncthreads();
  if (!f) return;
  const int32_t root = LocalFind(parent, t);
  const int32_t ra = root / (g.t[1] * g.t[2]), rb = (root / g.t[2]) % g.t[1], rc = root % g.t[2];
  const int64_t gr = (int64_t{t0 * g.t[0] + ra} * g.d[1] + (t1 * g.t[1] + rb)) * g.d[2] + (t2 * g.t[2] + rc);
  labels[static_cast<int64_t>(slot) * n + i] = static_cast<int32_t>(gr);
  sizes[static_cast<int64_t>(slot) * n + i] = 0;
}

// The pairs across tile borders (grid (·, slots), every voxel of the slot).
__global__ void CcBorderKernel(const CcSample* __restrict__ recs, CcTileGeom g, const uint8_t* __restrict__ mask,
                               int32_t* labels) {
  const int32_t slot = static_cast<int32_t>(blockIdx.y);
  if (!recs[slot].on) return;
  const int32_t d1 = g.d[1], d2 = g.d[2];
  const int64_t n = int64_t{g.d[0]} * d1 * d2;
  const uint8_t* m = mask + static_cast<int64_t>(slot) * n;
  int32_t* l = labels + static_cast<int64_t>(slot) * n;
  AUGMENTD_CHAIN_FOR_VOXELS(i, n) {
    if (!m[i]) continue;
    const uint32_t ui = static_cast<uint32_t>(i), row = ui / static_cast<uint32_t>(d2);  // n < 2^31 (the stage)
    const int32_t c = static_cast<int32_t>(ui - row * static_cast<uint32_t>(d2));
    const uint32_t a32 = row / static_cast<uint32_t>(d1);
    const int32_t bb = static_cast<int32_t>(row - a32 * static_cast<uint32_t>(d1)), a = static_cast<int32_t>(a32);
    const int32_t la = a % g.t[0], lb = bb % g.t[1], lc = c % g.t[2];
    if (!CcOnTileFace(g, la, lb, lc)) continue;  // no pair across a tile border
    const bool left = c > 0 && m[i - 1];
    CcForPairs(left, [&](int32_t da, int32_t db, int32_t dc) {
      if (CcPairInTile(g, la, lb, lc, da, db, dc)) return;  // CcLocal's pair
      const int32_t xa = a + da, y = bb + db, z = c + dc;
      if (xa < 0 || y < 0 || z < 0 || y >= d1 || z >= d2) return;
      const int64_t j = (int64_t{xa} * d1 + y) * d2 + z;
      if (m[j]) CcUnion(l, static_cast<int32_t>(i), static_cast<int32_t>(j));
    });
  }
}

__global__ void CcCompressKernel(const CcSample* __restrict__ recs, int64_t n, const uint8_t* __restrict__ mask,
                                 int32_t* labels, int32_t* sizes) {
  // The first root a block meets (in a large component, the one most of its voxels share) is counted in shared
  // memory and added to sizes once at the end; other roots go to sizes directly.
  __shared__ int32_t block_root, block_count;
  const int32_t b = static_cast<int32_t>(blockIdx.y);  // the slot
  if (!recs[b].on) return;                             // the whole block
  if (threadIdx.x == 0) {
    block_root = -1;
    block_count = 0;
  }
  __syncthreads();
  const uint8_t* m = mask + static_cast<int64_t>(b) * n;
  int32_t* l = labels + static_cast<int64_t>(b) * n;
  int32_t* s = sizes + static_cast<int64_t>(b) * n;
  AUGMENTD_CHAIN_FOR_VOXELS(i, n) {
    int32_t root = -1;
    if (m[i]) {
      root = CcFind(l, static_cast<int32_t>(i));
      __stcg(l + i, root);
    }
    // One add per root among the lanes here, and the block's own root in shared memory: the giant component of a
    // dense channel otherwise serialises ≈ one global atomic per warp on one address.
    const unsigned peers = __match_any_sync(__activemask(), root);
    if (root >= 0 && static_cast<int>(threadIdx.x % 32) == __ffs(peers) - 1) {
      int32_t mine = *static_cast<volatile int32_t*>(&block_root);
      if (mine < 0) {
        mine = atomicCAS(&block_root, -1, root);
        if (mine < 0) mine = root;
      }
      if (mine == root) atomicAdd(&block_count, __popc(peers));
      else atomicAdd(s + root, __popc(peers));
    }
  }
  __syncthreads();
  if (threadIdx.x == 0 && block_count > 0) atomicAdd(s + block_root, block_count);
}

__device__ bool CcValidRoot(const uint8_t* m, const int32_t* l, const int32_t* s, int64_t i, double limit) {
  return m[i] && l[i] == i && static_cast<double>(s[i]) < limit;
}

// Grid (tiles, B): tile_counts[b · tiles + t] = valid roots among voxels [t · kTile, (t + 1) · kTile).
__global__ void __launch_bounds__(kCountThreads) CcCountKernel(const CcSample* __restrict__ recs, int64_t n,
                                                               int32_t tiles, const uint8_t* __restrict__ mask,
                                                               const int32_t* __restrict__ labels,
                                                               const int32_t* __restrict__ sizes,
                                                               int32_t* __restrict__ tile_counts) {
  __shared__ int32_t warp_sums[kCountThreads / 32];
  const int32_t b = static_cast<int32_t>(blockIdx.y), t = static_cast<int32_t>(blockIdx.x);  // b: the slot
  const CcSample r = recs[b];
  if (!r.on) return;
  const uint8_t* m = mask + static_cast<int64_t>(b) * n;
  const int32_t* l = labels + static_cast<int64_t>(b) * n;
  const int32_t* s = sizes + static_cast<int64_t>(b) * n;
  const int64_t lo = int64_t{t} * kTile, hi = min(n, lo + kTile);
  int32_t count = 0;
  for (int64_t i = lo + threadIdx.x; i < hi; i += kCountThreads) count += CcValidRoot(m, l, s, i, r.limit);
  for (int off = 16; off > 0; off >>= 1) count += __shfl_down_sync(0xffffffffu, count, off);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = count;
  __syncthreads();
  if (threadIdx.x == 0) {
    int32_t total = 0;
    for (int w = 0; w < kCountThreads / 32; ++w) total += warp_sums[w];
    tile_counts[static_cast<int64_t>(b) * tiles + t] = total;
  }
}

// Inclusive Hillis–Steele scan of scan[0 .. kSelectThreads) (every thread of the block calls it).
__device__ void BlockScan(int32_t* scan) {
  __syncthreads();
  for (int off = 1; off < kSelectThreads; off <<= 1) {
    const int32_t v = threadIdx.x >= static_cast<unsigned>(off) ? scan[threadIdx.x - off] : 0;
    __syncthreads();
    scan[threadIdx.x] += v;
    __syncthreads();
  }
}

// One block per sample: chosen[b] = the k-th valid root in raster order (−1: none or not on).
__global__ void __launch_bounds__(kSelectThreads) CcPickKernel(const CcSample* __restrict__ recs, int64_t n,
                                                               int32_t tiles, const uint8_t* __restrict__ mask,
                                                               const int32_t* __restrict__ labels,
                                                               const int32_t* __restrict__ sizes,
                                                               const int32_t* __restrict__ tile_counts,
                                                               int32_t* __restrict__ chosen) {
  __shared__ int32_t scan[kSelectThreads];
  __shared__ int32_t pick_tile, pick_rank;
  const int32_t b = static_cast<int32_t>(blockIdx.x);  // the slot
  const CcSample r = recs[b];
  if (!r.on) {
    if (threadIdx.x == 0) chosen[b] = -1;
    return;
  }
  const int32_t* tc = tile_counts + static_cast<int64_t>(b) * tiles;
  const int32_t chunk = (tiles + kSelectThreads - 1) / kSelectThreads;
  const int32_t tlo = min(tiles, static_cast<int32_t>(threadIdx.x) * chunk), thi = min(tiles, tlo + chunk);
  int32_t count = 0;
  for (int32_t t = tlo; t < thi; ++t) count += tc[t];
  scan[threadIdx.x] = count;
  BlockScan(scan);
  const int32_t total = scan[kSelectThreads - 1];
  if (total == 0) {  // the same for every thread
    if (threadIdx.x == 0) chosen[b] = -1;
    return;
  }
  const int64_t pick = static_cast<int64_t>(r.component_draw * static_cast<double>(total));
  const int32_t k = static_cast<int32_t>(pick < total - 1 ? pick : int64_t{total} - 1);
  const int32_t before = scan[threadIdx.x] - count;
  if (k >= before && k < before + count) {  // exactly one thread
    int32_t seen = before;
    for (int32_t t = tlo; t < thi; ++t) {
      if (k < seen + tc[t]) {
        pick_tile = t;
        pick_rank = k - seen;
        break;
      }
      seen += tc[t];
    }
  }
  __syncthreads();
  const int32_t tile = pick_tile, rank = pick_rank;
  const uint8_t* m = mask + static_cast<int64_t>(b) * n;
  const int32_t* l = labels + static_cast<int64_t>(b) * n;
  const int32_t* s = sizes + static_cast<int64_t>(b) * n;
  const int64_t vlo = min(n, int64_t{tile} * kTile + 4 * static_cast<int64_t>(threadIdx.x)), vhi = min(n, vlo + 4);
  int32_t cnt = 0;
  for (int64_t i = vlo; i < vhi; ++i) cnt += CcValidRoot(m, l, s, i, r.limit);
  __syncthreads();  // every thread has read scan[] above
  scan[threadIdx.x] = cnt;
  BlockScan(scan);
  const int32_t before2 = scan[threadIdx.x] - cnt;
  if (rank < before2 || rank >= before2 + cnt) return;
  int32_t seen = before2;
  for (int64_t i = vlo; i < vhi; ++i) {
    if (!CcValidRoot(m, l, s, i, r.limit)) continue;
    if (seen == rank) {
      chosen[b] = static_cast<int32_t>(i);
      return;
    }
    ++seen;
  }
}

__global__ void CcApplyKernel(const CcSample* __restrict__ recs, int32_t batch, int32_t channels, int64_t n,
                              const uint8_t* __restrict__ mask, const int32_t* __restrict__ labels,
                              const int32_t* __restrict__ chosen, float* __restrict__ x) {
  const int32_t slot = static_cast<int32_t>(blockIdx.y), b = slot % batch;
  const CcSample r = recs[slot];
  const int32_t root = chosen[slot];
  if (!r.on || root < 0) return;
  const uint8_t* m = mask + static_cast<int64_t>(slot) * n;
  const int32_t* l = labels + static_cast<int64_t>(slot) * n;
  float* xb = x + static_cast<int64_t>(b) * channels * n;
  AUGMENTD_CHAIN_FOR_VOXELS(i, n) {
    if (!m[i] || l[i] != root) continue;
    xb[int64_t{r.channel} * n + i] = 0.0f;
    if (r.fill_channel >= 0) xb[int64_t{r.fill_channel} * n + i] = 1.0f;
  }
}

}  // namespace

cudaError_t LaunchRemoveComponentRound(int32_t batch, int32_t rounds, int32_t channels, const int32_t shape[3],
                                       float* x, const CcSample* recs, uint8_t* mask, int32_t* labels, int32_t* sizes,
                                       int32_t* chosen, int32_t* tile_counts, cudaStream_t stream,
                                       const cudaEvent_t* kernel_marks) {
  const int64_t n = int64_t{shape[0]} * shape[1] * shape[2];
  if (n >= (int64_t{1} << 31) || rounds < 1 || int64_t{batch} * rounds > 65535) return cudaErrorInvalidValue;
  const int32_t tiles = CcTiles(n), slots = batch * rounds;
  const dim3 grid = SliceGrid(n, slots);
  const int threads = internal::kThreads;
  const CcTileGeom g = MakeCcTileGeom(shape);
  const int64_t local_tiles = int64_t{g.tiles[0]} * g.tiles[1] * g.tiles[2];
  if (local_tiles >= (int64_t{1} << 31)) return cudaErrorInvalidValue;
  int marks = 0;
  const auto mark = [&] {
    if (kernel_marks != nullptr) cudaEventRecord(kernel_marks[marks++], stream);
  };
  mark();
  CcLocalKernel<<<dim3(static_cast<unsigned>(local_tiles), static_cast<unsigned>(slots)), kLocalVoxels, 0, stream>>>(
      recs, batch, channels, g, x, mask, labels, sizes);
  mark();
  CcBorderKernel<<<grid, threads, 0, stream>>>(recs, g, mask, labels);
  mark();
  CcCompressKernel<<<grid, threads, 0, stream>>>(recs, n, mask, labels, sizes);
  mark();
  CcCountKernel<<<dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(slots)), kCountThreads, 0, stream>>>(
      recs, n, tiles, mask, labels, sizes, tile_counts);
  mark();
  CcPickKernel<<<slots, kSelectThreads, 0, stream>>>(recs, n, tiles, mask, labels, sizes, tile_counts, chosen);
  mark();
  CcApplyKernel<<<grid, threads, 0, stream>>>(recs, batch, channels, n, mask, labels, chosen, x);
  mark();
  return cudaGetLastError();
}

}  // namespace augmentd::cuda::chain
