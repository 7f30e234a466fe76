// augment/kernels/cuda/spatial_vote_check.cu — test support for spatial_vote_test.cc: the label votes of the fused
// spatial kernel (spatial_math.h: LabelVote035 and LabelVote035BranchFree, what the kernel runs, and TriangularVote035,
// the s9 kernel's vote; bgv2 0.3.6's PadFirstVote, PadFirstVoteKeys and FewLabelVote036) evaluated on the device, one
// corner set per thread, so the test can compare them with each other and with the host build of the same functions.
// Not part of the kernel library.
#include "augment/kernels/cuda/spatial_vote_check.h"

#include <climits>

#include "augment/kernels/cuda/spatial_math.h"

namespace augmentd::cuda {
namespace {

__global__ void VotesKernel(const int* lab, const float* x1000, const int* lowest, int n, int* out_new,
                            int* out_branch_free, int* out_old) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int l[8], l_sentinel[8];  // l_sentinel: LabelVote035BranchFree's out-of-bounds label
  float x[8];
#pragma unroll
  for (int m = 0; m < 8; ++m) {
    l[m] = lab[8 * i + m];
    x[m] = x1000[8 * i + m];
  }
  BranchFreeVoteLabels(l, l_sentinel);
  out_new[i] = LabelVote035(l, x, lowest[i]);
  out_branch_free[i] = LabelVote035BranchFree(l_sentinel, x, lowest[i]);
  out_old[i] = TriangularVote035(l, x, lowest[i]);
}

__global__ void PadFirstVotesKernel(const Vote036Case* cases, int n, int* out_plain, int* out_keys, int* out_few) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const Vote036Case c = cases[i];
  out_plain[i] = PadFirstVote(c.lab, c.x1000, c.nn_m, c.pad, c.votes, c.tiebreak, c.lowest);
  out_keys[i] = PadFirstVoteKeys(c.lab, c.x1000, c.nn_m, c.pad, c.votes, c.tiebreak, c.lowest);
  int few;
  const bool decided =
      FewLabelVote036(c.raw, c.x1000, c.pad, c.votes, FewPadDecide(c, i), c.none_in, c.tiebreak, c.lowest, few);
  out_few[i] = decided ? few : kFewUndecided;
}

}  // namespace

cudaError_t RunVotesOnDevice(const int* h_lab, const float* h_x1000, const int* h_lowest, int n, int* h_new,
                             int* h_branch_free, int* h_old) {
  int *d_lab = nullptr, *d_lowest = nullptr, *d_new = nullptr, *d_bf = nullptr, *d_old = nullptr;
  float* d_x = nullptr;
  const size_t n8 = static_cast<size_t>(n) * 8;
  cudaError_t e = cudaMalloc(&d_lab, n8 * sizeof(int));  // every buffer freed below, whichever step failed
  if (e == cudaSuccess) e = cudaMalloc(&d_x, n8 * sizeof(float));
  if (e == cudaSuccess) e = cudaMalloc(&d_lowest, n * sizeof(int));
  if (e == cudaSuccess) e = cudaMalloc(&d_new, n * sizeof(int));
  if (e == cudaSuccess) e = cudaMalloc(&d_bf, n * sizeof(int));
  if (e == cudaSuccess) e = cudaMalloc(&d_old, n * sizeof(int));
  if (e == cudaSuccess) e = cudaMemcpy(d_lab, h_lab, n8 * sizeof(int), cudaMemcpyHostToDevice);
  if (e == cudaSuccess) e = cudaMemcpy(d_x, h_x1000, n8 * sizeof(float), cudaMemcpyHostToDevice);
  if (e == cudaSuccess) e = cudaMemcpy(d_lowest, h_lowest, n * sizeof(int), cudaMemcpyHostToDevice);
  if (e == cudaSuccess) {
    VotesKernel<<<(n + 255) / 256, 256>>>(d_lab, d_x, d_lowest, n, d_new, d_bf, d_old);
    e = cudaGetLastError();
  }
  if (e == cudaSuccess) e = cudaMemcpy(h_new, d_new, n * sizeof(int), cudaMemcpyDeviceToHost);
  if (e == cudaSuccess) e = cudaMemcpy(h_branch_free, d_bf, n * sizeof(int), cudaMemcpyDeviceToHost);
  if (e == cudaSuccess) e = cudaMemcpy(h_old, d_old, n * sizeof(int), cudaMemcpyDeviceToHost);
  cudaFree(d_lab);
  cudaFree(d_x);
  cudaFree(d_lowest);
  cudaFree(d_new);
  cudaFree(d_bf);
  cudaFree(d_old);
  return e;
}

cudaError_t RunPadFirstVotesOnDevice(const Vote036Case* h_cases, int n, int* h_plain, int* h_keys, int* h_few) {
  if (n <= 0) return cudaSuccess;
  Vote036Case* d_cases = nullptr;
  int *d_plain = nullptr, *d_keys = nullptr, *d_few = nullptr;
  cudaError_t e = cudaMalloc(&d_cases, static_cast<size_t>(n) * sizeof(Vote036Case));
  if (e == cudaSuccess) e = cudaMalloc(&d_plain, static_cast<size_t>(n) * sizeof(int));
  if (e == cudaSuccess) e = cudaMalloc(&d_keys, static_cast<size_t>(n) * sizeof(int));
  if (e == cudaSuccess) e = cudaMalloc(&d_few, static_cast<size_t>(n) * sizeof(int));
  if (e == cudaSuccess) {
    e = cudaMemcpy(d_cases, h_cases, static_cast<size_t>(n) * sizeof(Vote036Case), cudaMemcpyHostToDevice);
  }
  if (e == cudaSuccess) {
    PadFirstVotesKernel<<<(n + 255) / 256, 256>>>(d_cases, n, d_plain, d_keys, d_few);
    e = cudaGetLastError();
  }
  if (e == cudaSuccess) e = cudaMemcpy(h_plain, d_plain, static_cast<size_t>(n) * sizeof(int), cudaMemcpyDeviceToHost);
  if (e == cudaSuccess) e = cudaMemcpy(h_keys, d_keys, static_cast<size_t>(n) * sizeof(int), cudaMemcpyDeviceToHost);
  if (e == cudaSuccess) e = cudaMemcpy(h_few, d_few, static_cast<size_t>(n) * sizeof(int), cudaMemcpyDeviceToHost);
  cudaFree(d_cases);
  cudaFree(d_plain);
  cudaFree(d_keys);
  cudaFree(d_few);
  return e;
}

}  // namespace augmentd::cuda
