// augment/kernels/cuda/block_clocks.h — per-block clocks of the fused pipeline's kernels, for the bench only.
//
// A build with -DAUGMENTD_BLOCK_CLOCKS=1 in CMAKE_CUDA_FLAGS records, for every block of the chain's kernels (spatial,
// blur, mid, gamma statistics, final), when its thread 0 entered, came out of ChainWait, passed ChainTrigger and
// left, with the multiprocessor it ran on (NOTES.md s47: where a chained batch's passes idle). Every other build
// compiles the recording to nothing (the kernels' machine code is unchanged) and the functions below answer
// cudaErrorNotSupported. The recording adds a few instructions, shared bytes, a barrier, an atomic on shared memory a
// warp and one on global memory a block: its timeline is the instrumented kernels', read beside the plain build's batch
// time, not instead of it.
//
//   BlockClocksStart(1 << 17);            // allocates the device log; every recording kernel appends to it
//   RunPipeline(...); cudaStreamSynchronize(stream);
//   BlockClocksTake(&records, &dropped);  // copies the records out, empties the log
//   BlockClocksStop();                    // kernels record nothing again; the log is freed
//
// The log belongs to the process (one at a time, on the current device); the calls copy with cudaMemcpy on the legacy
// default stream, so call them between batches, from one thread.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace augmentd::cuda {

// The kernels that record (BlockClock::kernel).
enum BlockClockKernel : uint32_t {
  kClockSpatial = 1,
  kClockBlur = 2,
  kClockMid = 3,
  kClockGamma0 = 4,  // gamma statistics, mode 0 (slot 0; fused: slot 1's p1 too)
  kClockGamma2 = 5,  // gamma statistics, mode 2 (slot 1)
  kClockFinal = 6,
};

// Name of a BlockClockKernel ("?" for another value).
const char* BlockClockKernelName(uint32_t kernel);

// Marks of a block's thread 0, in the order it passes them; 0 where it did not (no wait, no trigger).
enum BlockClockMark { kMarkEntry = 0, kMarkWaited = 1, kMarkTriggered = 2, kMarkExit = 3, kNumMarks = 4 };

struct BlockClock {
  uint32_t kernel;             // BlockClockKernel
  uint32_t block;              // the linear block index in its grid (x fastest)
  uint32_t smid;               // %smid at entry
  uint32_t pad;                // 0 (aligns ns)
  uint64_t ns[kNumMarks];      // %globaltimer (ns, device-wide): entry, wait, trigger thread 0's; exit the last warp's
  long long cycles[kNumMarks];  // clock64() (the multiprocessor's own counter: differences within the block only)
};

// Whether this build records (-DAUGMENTD_BLOCK_CLOCKS=1).
bool BlockClocksBuilt();

// Records from now on into a fresh device log of `capacity` blocks (the records past it are counted, not kept);
// cudaErrorNotSupported in a build that does not record. Not thread-safe; call between batches.
cudaError_t BlockClocksStart(size_t capacity);

// Appends the log's records to *out in the order blocks left, empties the log and sets *dropped to the blocks past
// its capacity (nothing, and cudaSuccess, when no log was started). Call after the recorded batches have completed.
cudaError_t BlockClocksTake(std::vector<BlockClock>* out, uint64_t* dropped);

// Ends the recording: the kernels append nothing more, and the log is freed (cudaSuccess when none was started).
cudaError_t BlockClocksStop();

}  // namespace augmentd::cuda
