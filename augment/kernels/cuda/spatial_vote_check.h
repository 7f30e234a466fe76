// augment/kernels/cuda/spatial_vote_check.h — test support (spatial_vote_test.cc): the fused spatial kernel's 0.3.5
// and 0.3.6 votes (spatial_math.h) on the device.
#pragma once

#include <cuda_runtime.h>

#include <climits>

#include "augment/kernels/cuda/vote036_cases.h"

namespace augmentd::cuda {

// For i < n: h_new[i] = LabelVote035, h_branch_free[i] = LabelVote035BranchFree (given kVoteOutOfBounds where h_lab
// has INT32_MIN) and h_old[i] = TriangularVote035 of corners h_lab[8i..8i+7] (INT32_MIN out of bounds), weights
// h_x1000[8i..8i+7] (>= +0, +0 out of bounds) and lowest label h_lowest[i], computed on the current device. Host
// arrays; synchronous.
cudaError_t RunVotesOnDevice(const int* h_lab, const float* h_x1000, const int* h_lowest, int n, int* h_new,
                             int* h_branch_free, int* h_old);

// The pad_decide FewLabelVote036 gets for case i: even cases every corner in bounds (the kernel's form with
// -DAUGMENTD_PF_FEW_OOB=0), odd ones true (its default), so that both forms run on the device.
__host__ __device__ inline bool FewPadDecide(const Vote036Case& c, int i) { return c.all_in || (i & 1) != 0; }

// For i < n: h_plain[i] = PadFirstVote and h_keys[i] = PadFirstVoteKeys of h_cases[i], and h_few[i] FewLabelVote036's
// label of its raw corners (pad_decide: FewPadDecide) where it decides, kFewUndecided where not; computed on the
// current device. Host arrays; synchronous.
inline constexpr int kFewUndecided = INT32_MIN + 1;
cudaError_t RunPadFirstVotesOnDevice(const Vote036Case* h_cases, int n, int* h_plain, int* h_keys, int* h_few);

}  // namespace augmentd::cuda
