// bench/dataset_bench.cc — dataset-mode loading throughput (issue 6): samples/s cold from disk with T threads,
// hot from the host case cache, hot from the GPU case cache (crop kernel into device buffers), and memory per
// case per tier. Prints a markdown table. Run with --help.
//
//   dataset_bench --generate /tmp/dsbench --cases 16 --shape 256,256,256 --threads 16     # synthetic dataset
//   dataset_bench --dataset /data/nnUNet_preprocessed/Dataset003_Liver --threads 16      # a real one
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <string>
#include <thread>
#include <sys/resource.h>
#include <unistd.h>
#include <vector>

#ifdef AUGMENTD_BENCH_CUDA
#include <cuda_runtime.h>
#endif

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "augment/dataset/b2nd_blocks.h"
#include "augment/dataset/batch_loader.h"
#include "augment/dataset/case_cache.h"
#include "augment/dataset/host_allocator.h"
#include "augment/dataset/nnunet_plans.h"
#include "augment/dataset/region_copy.h"
#include "bench/dataset_bench_synth.h"

namespace ds = augmentd::dataset;

namespace {

constexpr char kUsage[] = R"(dataset_bench — dataset-mode loading throughput (augmentd issue 6)

Measures samples/s of BatchLoader (nnU-Net's sampler + crop: data float32 pad 0, seg int16 pad -1) for:
  cold   from disk (.b2nd decode per box, no cache), T threads, after a 1 s warm-up; the note gives the time per
         sample in block decoding, row writes and the rest; an A/B row repeats it with streaming (non-temporal)
         output stores (region_copy.h)
  host   hot from the host case cache (whole decoded cases, pinned when a GPU is present), T threads
  gpu    hot from the GPU case cache: LoadBatchToDevice, CUDA crop kernel into device buffers (CUDA builds)
and the memory per case on disk, in the host tier and in the GPU tier. Prints a markdown table.

Data (one of):
  --dataset DIR        nnU-Net preprocessed dataset folder (with dataset.json)
    --plans NAME       plans name (default nnUNetPlans)   --configuration NAME (default 3d_fullres)
  --generate DIR       write (or reuse) a synthetic .b2nd dataset under DIR (default: /tmp/augmentd-dataset-bench)
    --cases N          cases (default 8)                   --shape X,Y,Z  case size (default 256,256,256)
Sampling:
  --patch X,Y,Z        final patch (default: plans patch size); the box is nnU-Net's initial patch (205^3 for 128^3)
  --batch B            batch size (default 2)              --seed S (default 1)
Run:
  --threads T          CPU threads (default: hardware threads)
  --gpu-threads G      host threads issuing GPU batches, one stream each (default 4)
  --seconds S          time per measurement (default 10)
  --skip cold,ab,latency,host,gpu  measurements to skip (ab: the cold A/B row with the other kind of stores;
                       latency: one batch at a time with 1 and B load threads)
  --machine TEXT       machine description for the table (default: hostname)
  --huge-pages 0|1     output buffers on transparent huge pages (default 1; host_allocator.h)
  --stream-threshold B box reads of >= B output bytes use non-temporal stores (default: the library's, 4 MiB);
                       the A/B row uses the other kind (streaming from 4 MiB, or ordinary stores)
  --help
)";

struct Args {
  std::string dataset, generate = "/tmp/augmentd-dataset-bench", plans = "nnUNetPlans", configuration = "3d_fullres";
  int cases = 8;
  std::vector<int64_t> shape = {256, 256, 256}, patch;
  int64_t batch = 2;
  uint64_t seed = 1;
  int threads = static_cast<int>(std::thread::hardware_concurrency());
  int gpu_threads = 4;
  double seconds = 10;
  std::string skip, machine;
  int64_t stream_threshold = -1;  // -1: the library default
  bool huge_pages = true;
};

bool ParseList(const std::string& text, std::vector<int64_t>* out) {
  out->clear();
  for (absl::string_view p : absl::StrSplit(text, ',')) {
    int64_t v = 0;
    if (!absl::SimpleAtoi(p, &v) || v <= 0) return false;
    out->push_back(v);
  }
  return out->size() == 3;
}

bool ParseArgs(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--help" || k == "-h") {
      std::cout << kUsage;
      std::exit(0);
    }
    if (i + 1 >= argc) {
      std::cerr << "missing value for " << k << "\n";
      return false;
    }
    const std::string v = argv[++i];
    bool ok = true;
    if (k == "--dataset") a->dataset = v;
    else if (k == "--generate") a->generate = v;
    else if (k == "--plans") a->plans = v;
    else if (k == "--configuration") a->configuration = v;
    else if (k == "--cases") ok = absl::SimpleAtoi(v, &a->cases) && a->cases > 0;
    else if (k == "--shape") ok = ParseList(v, &a->shape);
    else if (k == "--patch") ok = ParseList(v, &a->patch);
    else if (k == "--batch") ok = absl::SimpleAtoi(v, &a->batch) && a->batch > 0;
    else if (k == "--seed") ok = absl::SimpleAtoi(v, &a->seed);
    else if (k == "--threads") ok = absl::SimpleAtoi(v, &a->threads) && a->threads > 0;
    else if (k == "--gpu-threads") ok = absl::SimpleAtoi(v, &a->gpu_threads) && a->gpu_threads > 0;
    else if (k == "--seconds") ok = absl::SimpleAtod(v, &a->seconds) && a->seconds > 0;
    else if (k == "--skip") a->skip = v;
    else if (k == "--machine") a->machine = v;
    else if (k == "--huge-pages") a->huge_pages = v != "0";
    else if (k == "--stream-threshold") ok = absl::SimpleAtoi(v, &a->stream_threshold) && a->stream_threshold >= 0;
    else ok = false;
    if (!ok) {
      std::cerr << "bad argument " << k << " " << v << " (see --help)\n";
      return false;
    }
  }
  return true;
}

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Runs `batch(thread, batch_index)` on `threads` threads until `seconds` passed; returns batches per second.
struct Rate {
  double batches_per_s = 0;
  uint64_t batches = 0;
  double cpu_s = 0;   // user + system CPU of the whole process during the measurement
  double wall_s = 0;  // duration of the measurement
  std::string error;
};

double ProcessCpuSeconds() {
  rusage u;
  if (getrusage(RUSAGE_SELF, &u) != 0) return 0.0;
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}
Rate Measure(int threads, double seconds, const std::function<absl::Status(int, uint64_t)>& batch,
             uint64_t first_batch) {
  std::atomic<uint64_t> next{first_batch}, done{0};
  std::atomic<bool> failed{false};
  std::string error;
  std::mutex mu;
  const double start = Now(), cpu0 = ProcessCpuSeconds();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      while (!failed && Now() - start < seconds) {
        const absl::Status st = batch(t, next++);
        if (!st.ok()) {
          std::lock_guard<std::mutex> lock(mu);
          error = st.ToString();
          failed = true;
          return;
        }
        ++done;
      }
    });
  }
  for (std::thread& t : pool) t.join();
  Rate r;
  r.batches = done.load();
  r.wall_s = Now() - start;
  r.batches_per_s = static_cast<double>(r.batches) / r.wall_s;
  r.cpu_s = ProcessCpuSeconds() - cpu0;
  r.error = error;
  return r;
}

std::string FirstLineOf(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return line.empty() ? "unknown" : line;
}

// The rest of the first line of `path` that starts with `key`, trimmed ("unknown" if none).
std::string ValueInFile(const std::string& path, const std::string& key) {
  std::ifstream f(path);
  for (std::string line; std::getline(f, line);) {
    if (absl::StartsWith(line, key)) return std::string(absl::StripAsciiWhitespace(line.substr(key.size())));
  }
  return "unknown";
}

std::string Mb(double bytes) { return absl::StrFormat("%.1f MB", bytes / 1e6); }

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!ParseArgs(argc, argv, &a)) return 2;
  auto skipped = [&](const char* what) { return absl::StrContains(a.skip, what); };
  std::string dir = a.dataset;
  double setup_s = 0;
  if (dir.empty()) {
    const double t0 = Now();
    augmentd::bench::SynthOptions so;
    so.root = a.generate;
    so.cases = a.cases;
    so.shape = a.shape;
    so.patch = a.patch.empty() ? std::vector<int64_t>{128, 128, 128} : a.patch;
    so.threads = a.threads;
    std::filesystem::create_directories(a.generate);
    absl::StatusOr<std::string> written = augmentd::bench::WriteSyntheticDataset(so);
    if (!written.ok()) {
      std::cerr << "generating the dataset failed: " << written.status() << "\n";
      return 1;
    }
    dir = *written;
    setup_s = Now() - t0;
  }
  ds::DatasetOptions dopt;
  dopt.dataset_dir = dir;
  dopt.plans_name = a.plans;
  dopt.configuration = a.configuration;
  absl::StatusOr<std::shared_ptr<ds::NnunetDataset>> opened = ds::NnunetDataset::Open(dopt);
  if (!opened.ok()) {
    std::cerr << opened.status() << "\n";
    return 1;
  }
  std::shared_ptr<ds::NnunetDataset> dataset = *opened;
  const std::vector<int64_t> patch = a.patch.empty() ? dataset->plans().patch_size : a.patch;
  const ds::TrainerDefaults td = ds::DefaultTrainerSettings(patch);
  const ds::SamplerOptions so = ds::SamplerOptions::ForTraining(patch, td.initial_patch_size, a.batch,
                                                                dataset->labels().ignore_label.has_value());
  auto make_sampler = [&] { return *ds::PatchSampler::Create(so, dataset->case_ids(), a.seed); };
  // Foreground locations are computed once per case and kept by the dataset (not part of any tier's cost).
  const double t_loc = Now();
  uint64_t disk_bytes = 0, voxels = 0;
  for (const std::string& id : dataset->case_ids()) {
    absl::StatusOr<std::shared_ptr<const ds::CaseHandle>> c = dataset->OpenCase(id);
    if (!c.ok() || !dataset->GetClassLocations(**c).ok()) {
      std::cerr << "case " << id << ": " << (c.ok() ? dataset->GetClassLocations(**c).status() : c.status()) << "\n";
      return 1;
    }
    for (const std::string& p : {(*c)->data().path(), (*c)->seg().path()}) {
      std::error_code ec;
      disk_bytes += std::filesystem::file_size(p.substr(0, p.find(':')), ec);
    }
    voxels += static_cast<uint64_t>(ds::NumElements((*c)->spatial_shape()));
  }
  const double locations_s = Now() - t_loc;
  const size_t n_cases = dataset->case_ids().size();
  const std::string box = absl::StrJoin(td.initial_patch_size, "x");
  std::vector<std::vector<std::string>> rows;  // tier, threads, samples/s, GB/s out, note
  const double sample_bytes = static_cast<double>(ds::NumElements(td.initial_patch_size)) *
                              (4.0 * static_cast<double>(dataset->channel_names().size()) + 2.0);
  auto add_row = [&](const std::string& tier, int threads, const Rate& r, const std::string& note) {
    const double sps = r.batches_per_s * static_cast<double>(a.batch);
    rows.push_back({tier, absl::StrCat(threads), r.error.empty() ? absl::StrFormat("%.0f", sps) : "error",
                    absl::StrFormat("%.2f", sps * sample_bytes / 1e9),
                    r.error.empty() ? note : r.error});
    std::cerr << tier << ": " << rows.back()[2] << " samples/s (" << r.batches << " batches) " << r.error << "\n";
  };

  // Per-thread output buffers, touched before timing (a server worker reuses its staging / slot buffers), on
  // transparent huge pages unless --huge-pages 0 (host_allocator.h: 4-KiB pages cost TLB misses on every plane).
  const size_t batch_image = static_cast<size_t>(a.batch * ds::NumElements(td.initial_patch_size)) *
                             dataset->channel_names().size();
  const size_t batch_seg = static_cast<size_t>(a.batch * ds::NumElements(td.initial_patch_size));
  const std::shared_ptr<ds::HostAllocator> out_alloc =
      a.huge_pages ? ds::HugePageHostAllocator() : ds::PlainHostAllocator();
  std::vector<ds::HostBuffer> out_data, out_seg;
  for (int t = 0; t < a.threads; ++t) {
    for (auto [list, bytes] : {std::pair{&out_data, batch_image * sizeof(float)}, {&out_seg, batch_seg * 2}}) {
      absl::StatusOr<ds::HostBuffer> b = ds::HostBuffer::Allocate(out_alloc, bytes);
      if (!b.ok()) {
        std::cerr << b.status() << "\n";
        return 1;
      }
      std::memset(b->data(), 0, bytes);
      list->push_back(*std::move(b));
    }
  }
  auto load_into = [&](const ds::BatchLoader& loader) {
    return [&](int t, uint64_t b) {
      const ds::HostBuffer& d = out_data[static_cast<size_t>(t)];
      const ds::HostBuffer& g = out_seg[static_cast<size_t>(t)];
      return loader.LoadBatchInto(b, static_cast<float*>(d.data()), batch_image, static_cast<int16_t*>(g.data()),
                                  batch_seg).status();
    };
  };
  // A cache holding every case (host tier unbounded; GPU tier `device_budget`), filled by its prefetch threads.
  auto warm_cache = [&](uint64_t device_budget, double* seconds) {
    ds::CaseCacheOptions co;
    co.host_budget_bytes = ~0ull;
    co.device_budget_bytes = device_budget;
    co.prefetch_threads = a.threads;
    std::shared_ptr<ds::CaseCache> cache = *ds::CaseCache::Create(dataset, co);
    const double t0 = Now();
    cache->Prefetch(dataset->case_ids());
    cache->WaitForPrefetches();
    *seconds = Now() - t0;
    return cache;
  };
  if (!skipped("cold")) {
    ds::BatchLoader loader(dataset, make_sampler());
    const size_t threshold = a.stream_threshold < 0 ? ds::kDefaultStreamingStoreBytes
                                                    : static_cast<size_t>(a.stream_threshold);
    auto stores = [](size_t bytes) {
      return bytes == ~size_t{0} ? std::string("ordinary stores")
                                 : absl::StrCat("streaming stores for outputs >= ", bytes >> 10, " KiB");
    };
    // Warm-up (not reported): the first reads of each file fault its pages into the shared mappings.
    Measure(a.threads, std::min(1.0, a.seconds), load_into(loader), 1u << 30);
    // Per sample: thread time (threads x wall) in block decoding, row writes and the rest (padding, zero chunks,
    // chunk lookups, sampling); process CPU time. On dedicated cores the two agree.
    auto stages = [&](const Rate& r, const ds::B2ndBlockTiming& t0) {
      const ds::B2ndBlockTiming t1 = ds::B2ndBlockTimingTotals();
      const double samples = std::max(1.0, static_cast<double>(r.batches * static_cast<uint64_t>(a.batch)));
      const double decode = static_cast<double>(t1.decode_ns - t0.decode_ns) / 1e6 / samples;
      const double write = static_cast<double>(t1.write_ns - t0.write_ns) / 1e6 / samples;
      const double thread_ms = a.threads * r.wall_s * 1e3 / samples;
      return absl::StrFormat("%.1f samples per CPU-second; per sample %.1f ms thread time: decode %.1f (%.0f blocks), "
                             "row writes %.1f, rest %.1f; %.1f ms CPU",
                             samples / std::max(r.cpu_s, 1e-9), thread_ms, decode,
                             static_cast<double>(t1.blocks - t0.blocks) / samples, write, thread_ms - decode - write,
                             r.cpu_s * 1e3 / samples);
    };
    auto run = [&](size_t bytes, uint64_t first_batch, ds::B2ndBlockTiming* t0) {
      ds::SetStreamingStoreThreshold(bytes);
      *t0 = ds::B2ndBlockTimingTotals();
      return Measure(a.threads, a.seconds, load_into(loader), first_batch);
    };
    ds::SetB2ndBlockTiming(true);
    ds::B2ndBlockTiming t0;
    const Rate r = run(threshold, 0, &t0);
    add_row("cold (disk, .b2nd decode per box)", a.threads, r,
            absl::StrCat("page cache warm; no augmentd cache; ", stores(threshold), "; ", stages(r, t0)));
    if (!skipped("ab")) {  // A/B: the same reads with the other kind of stores for the output box
      const size_t other = threshold == ~size_t{0} ? size_t{4} << 20 : ~size_t{0};
      const Rate ab = run(other, 1u << 29, &t0);
      add_row(absl::StrCat("cold, ", stores(other), " (A/B)"), a.threads, ab, stages(ab, t0));
    }
    ds::SetStreamingStoreThreshold(ds::kDefaultStreamingStoreBytes);
    ds::SetB2ndBlockTiming(false);
    if (!skipped("latency") && a.batch > 1) {  // one batch at a time (a trainer's session): LoaderOptions::load_threads
      for (int lt : {1, static_cast<int>(a.batch)}) {
        ds::LoaderOptions lo;
        lo.load_threads = lt;
        ds::BatchLoader one_at_a_time(dataset, make_sampler(), lo);
        const Rate l = Measure(1, a.seconds, load_into(one_at_a_time), (2u << 29) + static_cast<uint64_t>(lt));
        add_row(absl::StrCat("cold, one batch at a time, load_threads ", lt), 1, l,
                absl::StrFormat("%.1f ms per batch of %d", l.wall_s * 1e3 / std::max<double>(1, l.batches),
                                static_cast<int>(a.batch)));
      }
    }
  }
  ds::CaseCacheStats host_stats;
  double host_case_bytes = 0;
  if (!skipped("host")) {
    double warm_s = 0;
    std::shared_ptr<ds::CaseCache> cache = warm_cache(0, &warm_s);
    ds::LoaderOptions lo;
    lo.cache = cache;
    ds::BatchLoader loader(dataset, make_sampler(), lo);
    const Rate r = Measure(a.threads, a.seconds, load_into(loader), 0);
    host_stats = cache->Stats();
    host_case_bytes = static_cast<double>(host_stats.host.resident_bytes) / static_cast<double>(n_cases);
    add_row(absl::StrCat("host cache (", host_stats.host_allocator, ")"), a.threads, r,
            absl::StrFormat("warm-up %.1f s for %d cases; hits %d misses %d", warm_s, n_cases, host_stats.host.hits,
                            host_stats.host.misses));
  }
  double device_case_bytes = 0;
  std::string gpu_name = "none";
#ifdef AUGMENTD_BENCH_CUDA
  if (!skipped("gpu") && ds::CudaDeviceCount() > 0) {
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    gpu_name = prop.name;
    double warm_s = 0;
    std::shared_ptr<ds::CaseCache> cache = warm_cache(static_cast<uint64_t>(prop.totalGlobalMem) / 2, &warm_s);
    ds::LoaderOptions lo;
    lo.cache = cache;
    ds::BatchLoader loader(dataset, make_sampler(), lo);
    const int64_t channels = static_cast<int64_t>(dataset->channel_names().size());
    const size_t image_elems = static_cast<size_t>(a.batch * ds::NumElements(loader.SampleDataShape(channels)));
    const size_t seg_elems = static_cast<size_t>(a.batch * ds::NumElements(loader.SampleSegShape()));
    std::vector<cudaStream_t> streams(static_cast<size_t>(a.gpu_threads));
    std::vector<ds::DeviceBatchBuffers> bufs(static_cast<size_t>(a.gpu_threads));
    for (int t = 0; t < a.gpu_threads; ++t) {
      cudaStreamCreateWithFlags(&streams[static_cast<size_t>(t)], cudaStreamNonBlocking);
      ds::DeviceBatchBuffers& b = bufs[static_cast<size_t>(t)];
      cudaMalloc(&b.image, image_elems * sizeof(float));
      cudaMalloc(&b.seg, seg_elems * sizeof(int16_t));
      b.image_elems = image_elems;
      b.seg_elems = seg_elems;
    }
    auto run = [&](int t, uint64_t b) {
      return loader.LoadBatchToDevice(b, bufs[static_cast<size_t>(t)], streams[static_cast<size_t>(t)]).status();
    };
    Measure(a.gpu_threads, 0.5, run, 0);  // warm-up (kernel load)
    for (cudaStream_t s : streams) cudaStreamSynchronize(s);
    const double t1 = Now();
    Rate r = Measure(a.gpu_threads, a.seconds, run, 1u << 20);
    for (cudaStream_t s : streams) cudaStreamSynchronize(s);
    r.batches_per_s = static_cast<double>(r.batches) / (Now() - t1);  // includes draining the streams
    const ds::CaseCacheStats s = cache->Stats();
    device_case_bytes = static_cast<double>(s.device.resident_bytes) / static_cast<double>(std::max<uint64_t>(1, s.device.resident_entries));
    add_row("GPU cache (crop kernel → device buffers)", a.gpu_threads, r,
            absl::StrFormat("%s; warm-up %.1f s; device hits %d misses %d, resident %d cases", gpu_name, warm_s,
                            s.device.hits, s.device.misses, s.device.resident_entries));
    for (int t = 0; t < a.gpu_threads; ++t) {
      cudaFree(bufs[static_cast<size_t>(t)].image);
      cudaFree(bufs[static_cast<size_t>(t)].seg);
      cudaStreamDestroy(streams[static_cast<size_t>(t)]);
    }
  }
#endif

  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  std::printf("## dataset_bench — %s\n\n", date);
  std::printf("- machine: %s (%u hardware threads; GPU: %s)\n", a.machine.empty() ? host : a.machine.c_str(),
              std::thread::hardware_concurrency(), gpu_name.c_str());
  std::printf("- dataset: %s (%zu cases, %s voxels/case on average, %s)\n", dir.c_str(), n_cases,
              absl::StrFormat("%.1fM", static_cast<double>(voxels) / static_cast<double>(n_cases) / 1e6).c_str(),
              DatasetFormatName(dataset->format()));
  std::printf("- box (initial patch) %s, final patch %s, batch %lld, %.0f s per measurement%s\n", box.c_str(),
              absl::StrJoin(patch, "x").c_str(), static_cast<long long>(a.batch), a.seconds,
              setup_s > 0 ? absl::StrFormat("; dataset generated in %.1f s", setup_s).c_str() : "");
  std::printf("- foreground locations (once per case, kept by the dataset): %.1f s\n", locations_s);
  std::printf("- output buffers: per thread, reused, %s allocator (THP %s; process AnonHugePages %s)\n\n",
              out_alloc->name(), FirstLineOf("/sys/kernel/mm/transparent_hugepage/enabled").c_str(),
              ValueInFile("/proc/self/smaps_rollup", "AnonHugePages:").c_str());
  std::printf("| source | threads | samples/s | output GB/s | notes |\n|---|---|---|---|---|\n");
  for (const auto& r : rows) std::printf("| %s | %s | %s | %s | %s |\n", r[0].c_str(), r[1].c_str(), r[2].c_str(), r[3].c_str(), r[4].c_str());
  std::printf("\n| memory per case | bytes |\n|---|---|\n");
  std::printf("| disk (.b2nd data + seg, compressed) | %s |\n", Mb(static_cast<double>(disk_bytes) / static_cast<double>(n_cases)).c_str());
  std::printf("| host tier (float32 data + int8/int16 seg) | %s |\n", host_case_bytes > 0 ? Mb(host_case_bytes).c_str() : "not measured");
  std::printf("| GPU tier (same layout, cudaMalloc) | %s |\n", device_case_bytes > 0 ? Mb(device_case_bytes).c_str() : "not measured");
  return 0;
}
