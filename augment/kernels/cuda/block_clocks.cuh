// augment/kernels/cuda/block_clocks.cuh — the device side of block_clocks.h (included by common.cuh).
//
// A recording kernel declares `BlockClockScope clocks(kClockX);` as its first statement: thread 0 notes the entry,
// ChainWait and ChainTrigger note thread 0's passage (ClockMark), and the scope's destructor, in the block's last warp
// to return, notes the exit and appends the block's record to the log. Kernels without a scope that call ChainWait or
// ChainTrigger (elastic, the generic chain, DA5) write the marks into shared memory nobody reads. Without
// -DAUGMENTD_BLOCK_CLOCKS=1 all of it is empty.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "augment/kernels/cuda/block_clocks.h"

#ifndef AUGMENTD_BLOCK_CLOCKS
#define AUGMENTD_BLOCK_CLOCKS 0
#endif

namespace augmentd::cuda::internal {

#if AUGMENTD_BLOCK_CLOCKS

struct BlockClockLog {  // the device log's header; BlockClock records follow it
  unsigned long long n;  // blocks that finished (records past `capacity` are not kept)
  unsigned long long capacity;
};

// Each .cu file is its own device module (no relocatable device code), so each has its own copy of the log pointer;
// BlockClocksStart sets every copy through the setters that the files register at static initialisation.
static __device__ BlockClockLog* g_block_clock_log = nullptr;

using BlockClockSetter = cudaError_t (*)(BlockClockLog*);
bool RegisterBlockClockSetter(BlockClockSetter set);  // pipeline_cuda.cu

static cudaError_t SetThisFilesBlockClockLog(BlockClockLog* log) {
  return cudaMemcpyToSymbol(g_block_clock_log, &log, sizeof log);
}
[[maybe_unused]] static const bool g_block_clock_registered = RegisterBlockClockSetter(&SetThisFilesBlockClockLog);

struct BlockClockShared {
  uint64_t ns[kNumMarks];
  long long cycles[kNumMarks];
  uint32_t smid;
  unsigned int warps_left;  // the block's warps that have passed the scope's destructor
};

__device__ __forceinline__ BlockClockShared& ClockShared() {
  __shared__ BlockClockShared s;
  return s;
}

// Notes `mark` now (the calling thread's clocks).
__device__ __forceinline__ void StampMark(BlockClockShared& s, int mark) {
  uint64_t ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  s.ns[mark] = ns;
  s.cycles[mark] = clock64();
}

__device__ __forceinline__ void ClockMark(int mark) {
  if (threadIdx.x == 0) StampMark(ClockShared(), mark);
}

class BlockClockScope {
 public:
  // The kernel's first statement: every thread passes it (the barrier orders the shared marks' reset before any
  // warp can leave).
  __device__ explicit BlockClockScope(uint32_t kernel) : kernel_(kernel) {
    if (threadIdx.x == 0) {
      BlockClockShared& s = ClockShared();
      for (int m = 0; m < kNumMarks; ++m) {
        s.ns[m] = 0;
        s.cycles[m] = 0;
      }
      s.warps_left = 0;
      asm volatile("mov.u32 %0, %%smid;" : "=r"(s.smid));
    }
    ClockMark(kMarkEntry);
    __syncthreads();
  }
  // On each thread's return: the first lane of the block's last warp to leave marks the exit (whichever thread) and
  // appends the record (the kernels return warp-uniformly).
  __device__ ~BlockClockScope() {
    BlockClockLog* log = g_block_clock_log;
    if ((threadIdx.x & 31) != 0 || log == nullptr) return;
    BlockClockShared& s = ClockShared();
    const unsigned int warps = (blockDim.x * blockDim.y * blockDim.z + 31) / 32;
    if (atomicAdd(&s.warps_left, 1u) != warps - 1) return;
    StampMark(s, kMarkExit);
    const unsigned long long i = atomicAdd(&log->n, 1ull);
    if (i >= log->capacity) return;
    BlockClock r;
    r.kernel = kernel_;
    r.block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    r.smid = s.smid;
    r.pad = 0;
    for (int m = 0; m < kNumMarks; ++m) {
      r.ns[m] = s.ns[m];
      r.cycles[m] = s.cycles[m];
    }
    reinterpret_cast<BlockClock*>(log + 1)[i] = r;
  }
  BlockClockScope(const BlockClockScope&) = delete;
  BlockClockScope& operator=(const BlockClockScope&) = delete;

 private:
  uint32_t kernel_;
};

#else

class BlockClockScope {
 public:
  __device__ explicit BlockClockScope(uint32_t) {}
};

__device__ __forceinline__ void ClockMark(int) {}

#endif

}  // namespace augmentd::cuda::internal
