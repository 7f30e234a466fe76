// augment/kernels/cuda/blur_math.h — the tiled blur's index arithmetic (blur.cu), host and device (host tests:
// blur_math_test.cc):
//  * BlurReflect: reflect padding (mirror without repeating the edge), as bgv2's conv3d padding;
//  * PlanHaloChunk: which 16-byte chunk of a halo plane a thread copies, and where it lands, for BlurFast's 16-byte
//    copies (the bench switch AUGMENTD_BLUR_VEC_COPIES, NOTES.md s56).
#pragma once

#include "augment/kernels/cpu_half.h"  // AUGMENTD_KERNEL_HD

namespace augmentd::cuda {

// Index i of an axis of n voxels, reflected into [0, n) (i = −1 → 1, i = n → n − 2); the clamp only matters when
// n <= the radius, which PyTorch's reflect padding rejects.
AUGMENTD_KERNEL_HD int BlurReflect(int i, int n) {
  if (i < 0) i = -i;
  if (i >= n) i = 2 * (n - 1) - i;
#if defined(__CUDA_ARCH__)
  return min(max(i, 0), n - 1);
#else
  return i < 0 ? 0 : i > n - 1 ? n - 1 : i;
#endif
}

// The blur's tile (kBlurTY rows x kBlurTX columns, in blocks of kBlurThreads threads; blur.cu) and a stage row of the
// 16-byte copies: kHaloChunkRow chunks of 4 floats from column x0 − 4 (the tile and a halo of up to 4 either side).
inline constexpr int kBlurTX = 32, kBlurTY = 16, kBlurThreads = 256;
inline constexpr int kHaloChunkRow = (kBlurTX + 8) / 4;

// Thread t's copy of a halo plane with `rows` rows from row y_first (reflected) and the stage columns of the tile at
// column x0 (a multiple of 32, below P2; P2 % 4 == 0, so that a chunk lies inside the volume or wholly past an edge):
// chunk j of a stage row holds columns vc … vc + 3, vc = x0 − 4 + 4j. The chunks inside the volume, j in [jlo, jhi),
// go to threads 0 … rows·nin − 1 (one 16-byte copy from `off`), those past its x edges (`edge`: four reflected columns
// from `off − vc`) to the next rows·(10 − nin), then padding (a 16-byte copy too): three runs of threads, so that at
// most two warps mix kinds.
// `dst` is the chunk's first float in the stage (row i at 40·i); threads past rows·10 copy the plane's first chunk
// (off 0) to their own slot 4·t, past the plane's.
struct HaloChunk {
  int off;  // the chunk's offset in the plane: its row's offset plus vc (0 past the plane's chunks)
  int dst;  // its first float in the stage
  int vc;   // its first column (may be negative or past P2 for an edge chunk)
  bool edge;
};

AUGMENTD_KERNEL_HD HaloChunk PlanHaloChunk(int t, int rows, int y_first, int x0, int P1, int P2) {
  const int jlo = x0 == 0 ? 1 : 0;
  const int jhi = (P2 - x0) / 4 + 1 < kHaloChunkRow ? (P2 - x0) / 4 + 1 : kHaloChunkRow;
  const int nin = jhi - jlo, nedge = kHaloChunkRow - nin > 1 ? kHaloChunkRow - nin : 1;
  const int u = t - rows * nin;
  const bool past = u >= 0;
  const int i = past ? u / nedge : t / nin, k = past ? u % nedge : t % nin;
  const int j = !past ? jlo + k : k < jlo ? k : jhi + k - jlo;
  const int vc = x0 - 4 + 4 * j;
  const bool in = t < rows * kHaloChunkRow;
  return HaloChunk{in ? BlurReflect(y_first + i, P1) * P2 + vc : 0, 4 * (in ? i * kHaloChunkRow + j : t), vc,
                   past && in};
}

}  // namespace augmentd::cuda
