// augment/transforms/remove_random_connected_component/cc_pairs.h — which voxel pairs the component labelling kernels
// unite and which kernel does it (remove_random_connected_component.cu: CcLocal in a tile's shared memory, CcBorder
// across tile borders), as __host__ __device__ functions so that a host emulation of the split is tested against the
// CPU's Label (remove_random_connected_component_test.cc). Plain C++ without nvcc.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define AUGMENTD_CC_HD __host__ __device__ __forceinline__
#else
#define AUGMENTD_CC_HD inline
#endif

namespace augmentd::cuda::chain {

inline constexpr int kCcLocalVoxels = 512;  // voxels (threads) per tile of CcLocal

// A sample's shape d, CcLocal's tile shape t (t0 · t1 · t2 = kCcLocalVoxels: 8 × 8 × 8, or 1 × 16 × 32 for a unit
// leading axis) and the tiles per axis.
struct CcTileGeom {
  int32_t d[3];
  int32_t t[3];
  int32_t tiles[3];
};

AUGMENTD_CC_HD CcTileGeom MakeCcTileGeom(const int32_t shape[3]) {
  CcTileGeom g;
  const bool flat = shape[0] == 1;
  g.t[0] = flat ? 1 : 8;
  g.t[1] = flat ? 16 : 8;
  g.t[2] = flat ? 32 : 8;
  for (int d = 0; d < 3; ++d) {
    g.d[d] = shape[d];
    g.tiles[d] = (shape[d] + g.t[d] - 1) / g.t[d];
  }
  return g;
}

// The preceding neighbours (da, db, dc) a foreground voxel unites with: the 13 of the 26-neighbourhood before it in
// raster order (the CPU's Label), or, when the voxel before it in the row is foreground (`left`), only that one and
// the 4 of dc = +1 (the others are that voxel's preceding neighbours too and it unites with them). f(da, db, dc) is
// called for each, whether or not it lies inside the volume.
template <typename F>
AUGMENTD_CC_HD void CcForPairs(bool left, F f) {
  if (left) f(0, 0, -1);
  for (int32_t da = -1; da <= 0; ++da)
    for (int32_t db = -1; db <= 1; ++db)
      for (int32_t dc = -1; dc <= 1; ++dc) {
        if (da == 0 && (db > 0 || (db == 0 && dc >= 0))) continue;  // only neighbours before the voxel
        if (left && dc <= 0) continue;
        f(da, db, dc);
      }
}

// Whether the neighbour (da, db, dc) of the voxel at tile position (la, lb, lc) lies in the same tile (da ≤ 0).
AUGMENTD_CC_HD bool CcPairInTile(const CcTileGeom& g, int32_t la, int32_t lb, int32_t lc, int32_t da, int32_t db,
                                 int32_t dc) {
  const int32_t ua = la + da, ub = lb + db, uc = lc + dc;
  return ua >= 0 && ub >= 0 && uc >= 0 && ub < g.t[1] && uc < g.t[2];
}

// Whether a voxel at tile position (la, lb, lc) can have a pair across its tile's border (CcBorder skips the others).
AUGMENTD_CC_HD bool CcOnTileFace(const CcTileGeom& g, int32_t la, int32_t lb, int32_t lc) {
  return la == 0 || lb == 0 || lb == g.t[1] - 1 || lc == 0 || lc == g.t[2] - 1;
}

}  // namespace augmentd::cuda::chain
