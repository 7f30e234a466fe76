// carveout_probe: when may a kernel's blocks join a multiprocessor that still runs the kernel before it? (issue 27,
// NOTES.md s53 / s54.) Two synthetic kernels stand in for the pipeline's boundary between the spatial kernel and the
// blur:
//   A  "spatial": four blocks a multiprocessor, filling either its 2,048 threads (512 threads a block, few registers)
//      or its register file (256 threads at 64 registers, as the spatial kernel's blocks do), `a_smem` bytes of
//      dynamic shared memory, each block busy for a spin of 15-25 µs (a hash of its index), so that the grid of 16
//      blocks a multiprocessor drains in a tail; it triggers the next launch at entry, as the chain's kernels do.
//   B  "blur": 256 threads, few registers or ≈ 56 (the narrow blur's), `b_smem` bytes of shared memory, launched
//      right after A with programmatic stream serialization (the chain's launch), so its blocks may be dispatched
//      into A's tail; each spins 5 µs.
// Both record every block's multiprocessor and %globaltimer at entry and exit. A B block is "beside" A when it
// entered its multiprocessor before A's last block there left. Each case sets the two kernels' preferred carveouts
// (cudaFuncAttributePreferredSharedMemoryCarveout, percent; -1 leaves the driver's choice) on kernels of their own,
// so no case inherits another's setting. A's `__launch_bounds__(threads, 4)` caps it at 64 registers a thread (256
// threads) or 32 (512). One table row per case: A's threads, registers and blocks a multiprocessor
// (cudaOccupancyMaxActiveBlocksPerMultiprocessor), B's registers and blocks, the two carveouts and shared-memory
// sizes, cudaFuncSetAttribute's results, the share of B's blocks beside A (median, min and max of 5 runs after a
// warm-up) and the median of B's first entry minus A's last exit. Exits 1 if a CUDA call fails.
//
// Build and run on a GPU machine (not in CI; it needs a device):
//   cmake --build BUILD --target carveout_probe && BUILD/augment/kernels/cuda/carveout_probe
// or alone: nvcc -arch=sm_90 -O3 -std=c++17 bench/carveout_probe.cu -o /tmp/carveout_probe && /tmp/carveout_probe
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <vector>

namespace {

constexpr int kThreadsB = 256;

struct BlockMark {
  unsigned int smid;
  unsigned long long entry_ns, exit_ns;
};

__device__ unsigned long long Now() {
  unsigned long long ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  return ns;
}

__device__ unsigned int SmId() {
  unsigned int id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  return id;
}

// Busy for `ns` (not sleeping: the block holds its slot) with kLive values live in registers across the loop, so
// that a block holds as many registers as a pipeline kernel does (kLive 0: one). The result goes to shared memory, so
// the shared memory is allocated and the loop kept.
template <int kLive>
__device__ void Spin(unsigned long long ns, float* smem, int n) {
  constexpr int kValues = kLive > 0 ? kLive : 1;
  float r[kValues];
#pragma unroll
  for (int i = 0; i < kValues; ++i) r[i] = threadIdx.x * (i + 1.f);
  const unsigned long long t0 = Now();
  while (Now() - t0 < ns) {
#pragma unroll
    for (int i = 0; i < kValues; ++i) r[i] = r[i] * 0.999f + r[(i + 1) % kValues];
  }
  float acc = 0.f;
#pragma unroll
  for (int i = 0; i < kValues; ++i) acc += r[i];
  if (n > 0) smem[threadIdx.x % n] = acc;
}

// kCase keeps each case's kernels distinct: a carveout set on one never reaches another case. kThreads /
// kLive: A's block size and live registers (512 / 0: four blocks fill a multiprocessor's threads; 256 / 52: four fill
// its register file at 64 registers a thread, as the spatial kernel's do).
template <int kCase, int kThreads, int kLive>
__global__ void __launch_bounds__(kThreads, 4) KernelA(BlockMark* marks, int smem_floats) {
  extern __shared__ float smem[];
  const unsigned long long entry = Now();
  cudaTriggerProgrammaticLaunchCompletion();
  const unsigned int h = blockIdx.x * 2654435761u;
  Spin<kLive>(15000ull + (((h >> 16) * 10000ull) >> 16), smem, smem_floats);  // 15-25 µs
  __syncthreads();
  if (threadIdx.x == 0) marks[blockIdx.x] = {SmId(), entry, Now()};
}

// kLive 44: ≈ 56 registers a thread, as the narrow blur's.
template <int kCase, int kLive>
__global__ void __launch_bounds__(kThreadsB, 4) KernelB(BlockMark* marks, int smem_floats) {
  extern __shared__ float smem[];
  const unsigned long long entry = Now();
  Spin<kLive>(5000ull, smem, smem_floats);
  __syncthreads();
  if (threadIdx.x == 0) marks[blockIdx.x] = {SmId(), entry, Now()};
}

struct Case {
  int a_pct, b_pct;   // preferred carveouts, percent (-1: the driver's)
  int a_smem, b_smem; // bytes of shared memory a block
};

// Whether `e` is cudaSuccess; else says which call failed.
bool Ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) std::fprintf(stderr, "carveout_probe: %s: %s\n", what, cudaGetErrorString(e));
  return e == cudaSuccess;
}

// Device memory for one case's marks, freed on every return.
struct Marks {
  BlockMark* d = nullptr;
  ~Marks() { cudaFree(d); }
};

// B's blocks beside A in one run, in percent, and B's first entry minus A's last exit (µs).
void Beside(const std::vector<BlockMark>& a, const std::vector<BlockMark>& b, double* beside, double* gap_us) {
  std::map<unsigned int, unsigned long long> last_exit;  // A's last exit per multiprocessor
  unsigned long long a_end = 0, first_b = ~0ull;
  for (const auto& m : a) {
    last_exit[m.smid] = std::max(last_exit[m.smid], m.exit_ns);
    a_end = std::max(a_end, m.exit_ns);
  }
  int n = 0;
  for (const auto& m : b) {
    const auto it = last_exit.find(m.smid);
    n += it != last_exit.end() && m.entry_ns < it->second;
    first_b = std::min(first_b, m.entry_ns);
  }
  *beside = 100.0 * n / static_cast<double>(b.size());
  *gap_us = (static_cast<double>(first_b) - static_cast<double>(a_end)) / 1e3;
}

// One case: prints its table row; false (after saying why) if a CUDA call failed.
template <int kCase, int kThreadsA = 512, int kLiveA = 0, int kLiveB = 0>
bool RunCase(const Case& c, int sms) {
  const int blocks_a = 16 * sms, blocks_b = 4 * sms;
  const auto kernel_a = KernelA<kCase, kThreadsA, kLiveA>;
  const auto kernel_b = KernelB<kCase, kLiveB>;
  cudaError_t ea = cudaSuccess, eb = cudaSuccess;  // the carveouts' results, printed
  if (c.a_pct >= 0) ea = cudaFuncSetAttribute(kernel_a, cudaFuncAttributePreferredSharedMemoryCarveout, c.a_pct);
  if (c.b_pct >= 0) eb = cudaFuncSetAttribute(kernel_b, cudaFuncAttributePreferredSharedMemoryCarveout, c.b_pct);
  cudaFuncAttributes fa{}, fb{};
  int occ_a = 0, occ_b = 0;
  Marks d_a, d_b;
  if (!Ok(cudaFuncGetAttributes(&fa, kernel_a), "cudaFuncGetAttributes A") ||
      !Ok(cudaFuncGetAttributes(&fb, kernel_b), "cudaFuncGetAttributes B") ||
      !Ok(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ_a, kernel_a, kThreadsA, c.a_smem), "occupancy A") ||
      !Ok(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ_b, kernel_b, kThreadsB, c.b_smem), "occupancy B") ||
      !Ok(cudaMalloc(&d_a.d, blocks_a * sizeof(BlockMark)), "cudaMalloc") ||
      !Ok(cudaMalloc(&d_b.d, blocks_b * sizeof(BlockMark)), "cudaMalloc")) {
    return false;
  }
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(blocks_b);
  cfg.blockDim = dim3(kThreadsB);
  cfg.dynamicSmemBytes = c.b_smem;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  std::vector<double> beside, gap_us;
  std::vector<BlockMark> a(blocks_a), b(blocks_b);
  for (int run = 0; run < 6; ++run) {  // run 0 warms up
    kernel_a<<<blocks_a, kThreadsA, c.a_smem>>>(d_a.d, c.a_smem / 4);
    if (!Ok(cudaGetLastError(), "launch A") ||
        !Ok(cudaLaunchKernelEx(&cfg, kernel_b, d_b.d, c.b_smem / 4), "launch B") ||
        !Ok(cudaDeviceSynchronize(), "the kernels")) {
      return false;
    }
    if (run == 0) continue;
    if (!Ok(cudaMemcpy(a.data(), d_a.d, a.size() * sizeof(BlockMark), cudaMemcpyDeviceToHost), "copy A's marks") ||
        !Ok(cudaMemcpy(b.data(), d_b.d, b.size() * sizeof(BlockMark), cudaMemcpyDeviceToHost), "copy B's marks")) {
      return false;
    }
    Beside(a, b, &beside.emplace_back(), &gap_us.emplace_back());
  }
  std::sort(beside.begin(), beside.end());
  std::sort(gap_us.begin(), gap_us.end());
  std::printf("| %d × %d r, %d / SM | %d r, %d / SM | %3d | %3d | %6d | %6d | %s / %s | %5.1f %% (%.1f … %.1f) | "
              "%+.1f |\n",
              kThreadsA, fa.numRegs, occ_a, fb.numRegs, occ_b, c.a_pct, c.b_pct, c.a_smem, c.b_smem,
              cudaGetErrorName(ea), cudaGetErrorName(eb), beside[beside.size() / 2], beside.front(), beside.back(),
              gap_us[gap_us.size() / 2]);
  return true;
}

}  // namespace

int main() {
  int dev = 0;
  cudaDeviceProp prop{};
  if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&prop, dev) != cudaSuccess) {
    std::fprintf(stderr, "carveout_probe: no CUDA device\n");
    return 1;
  }
  const int sms = prop.multiProcessorCount;
  std::printf("%s, %d SMs, %zu bytes of shared memory a multiprocessor at most\n\n", prop.name, sms,
              prop.sharedMemPerMultiprocessor);
  std::printf("| A: threads × registers, blocks / SM | B: registers, blocks / SM | A %% | B %% | A smem | B smem | "
              "set A / B | B blocks beside A (median, min … max of 5) | first B entry − A's last exit µs |\n"
              "|---|---|---|---|---|---|---|---|---|\n");
  // A as the spatial kernel (6,168 bytes), B as the narrow blur (12,400) or the wide one (47,120).
  bool ok = true;
  ok = ok && RunCase<0>({-1, -1, 6168, 12400}, sms);
  ok = ok && RunCase<1>({43, 43, 6168, 12400}, sms);
  ok = ok && RunCase<2>({100, 100, 6168, 12400}, sms);
  ok = ok && RunCase<3>({100, -1, 6168, 12400}, sms);
  ok = ok && RunCase<4>({-1, 43, 6168, 12400}, sms);
  ok = ok && RunCase<5>({-1, -1, 6168, 47120}, sms);
  ok = ok && RunCase<6>({100, -1, 6168, 47120}, sms);
  ok = ok && RunCase<7>({43, 43, 6168, 47120}, sms);
  ok = ok && RunCase<8>({-1, -1, 6168, 0}, sms);
  ok = ok && RunCase<9>({-1, -1, 0, 0}, sms);
  // A as the spatial kernel's register file (256 threads at 64 registers: four blocks fill it), B as the narrow
  // blur's 56 registers: the pipeline's own resources (session 54's pipeline clocks at 43 / 43 saw 0 %).
  ok = ok && RunCase<10, 256, 52, 44>({-1, -1, 6168, 12400}, sms);
  ok = ok && RunCase<11, 256, 52, 44>({43, 43, 6168, 12400}, sms);
  ok = ok && RunCase<12, 256, 52, 44>({100, -1, 6168, 12400}, sms);
  ok = ok && RunCase<13, 256, 52, 44>({100, 100, 6168, 12400}, sms);
  ok = ok && RunCase<14, 256, 52, 0>({43, 43, 6168, 12400}, sms);
  ok = ok && RunCase<15, 512, 0, 44>({43, 43, 6168, 12400}, sms);
  ok = ok && RunCase<16, 256, 52, 44>({-1, -1, 6168, 0}, sms);
  return ok ? 0 : 1;
}
