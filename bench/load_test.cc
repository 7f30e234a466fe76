// bench/load_test.cc — load client for a running augmentd (issue 9): N concurrent sessions streaming batches
// over loopback, bounded by --duration and --max_batches, with error / mix-up checks, latency percentiles,
// per-session throughput and the server's RSS sampled from /proc/<pid>/status.
//
//   load_test --target=127.0.0.1:50051 --server_pid=1234 --sessions=16 --duration=120 --mode=mixed
//             --dataset=/data/nnUNet_preprocessed/Dataset001_X     (one command line)
//   load_test --make_dataset=/tmp/load_root      # writes a small b2nd dataset, prints its folder, exits
//
// Modes: patch — each session calls Augment with inline (B, C, *initial_patch_size) tensors, batch index
// 0, 1, 2, ...; dataset — each session runs one StreamBatches call granting one credit per batch received
// (latency = credit sent → batch read); mixed — even sessions patch, odd sessions dataset.
// Checks per batch: the session id is the session's own and batch indices are consecutive from 0 (nothing
// lost, repeated or mixed); any failed RPC counts as an error. RSS: sampled every --rss_interval seconds;
// drift = last sample − the first sample after the warm-up (--warmup seconds, default 20 % of the run).
// Exit status: 0 if no errors, no mix-ups and |drift| ≤ --max_rss_drift_mib (when a pid is given); 1 otherwise;
// 2 for a bad command line.
#include <grpcpp/client_context.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/session_tokens.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "augment/dataset/test_util.h"
#include "augmentd/v1/service.grpc.pb.h"
#include "client/client.h"

namespace augmentd {
namespace {

struct Options {
  std::string target = "127.0.0.1:50051";
  int server_pid = 0;
  int sessions = 16;
  double duration_s = 20;
  uint64_t max_batches = 0;  // per session; 0 = until the duration ends
  std::string mode = "mixed";
  std::string dataset;       // dataset folder (dataset / mixed modes)
  uint32_t batch_size = 2;
  int64_t patch = 16;        // trainer patch size (cubic) in patch mode
  double rss_interval_s = 1;
  double warmup_s = -1;      // -1: 20 % of the duration
  double max_rss_drift_mib = 64;
  std::string make_dataset;  // write a dataset under this root and exit
  int64_t case_size = 40;    // --make_dataset: cubic case size
  int cases = 4;
};

struct SessionResult {
  std::string id;
  bool dataset_mode = false;
  uint64_t batches = 0;
  uint64_t errors = 0;
  uint64_t mixups = 0;
  std::string first_error;
  double seconds = 0;
  std::vector<double> latency_ms;
};

double Seconds(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

std::unique_ptr<grpc::ClientContext> Ctx(absl::Duration deadline) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(absl::ToChronoTime(absl::Now() + deadline));
  return ctx;
}

void Fail(SessionResult& r, const std::string& what) {
  ++r.errors;
  if (r.first_error.empty()) r.first_error = what;
}

v1::Tensor RandomTensor(v1::DType dtype, const std::vector<int64_t>& shape, uint32_t seed) {
  v1::Tensor t;
  t.set_dtype(dtype);
  int64_t n = 1;
  for (int64_t d : shape) {
    t.add_shape(d);
    n *= d;
  }
  std::mt19937 rng(seed);
  if (dtype == v1::DTYPE_FLOAT32) {
    std::vector<float> v(static_cast<size_t>(n));
    std::normal_distribution<float> normal;
    for (float& x : v) x = normal(rng);
    t.set_inline_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)));
  } else {
    std::vector<int16_t> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<int16_t>((i / 61 + seed) % 3);
    t.set_inline_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(int16_t)));
  }
  return t;
}

// Checks one received batch: own session, expected index. Returns false on a mix-up.
bool CheckBatch(const v1::Batch& b, const std::string& id, uint64_t expected_index, SessionResult& r) {
  if (b.session_id() != id || b.batch_index() != expected_index) {
    ++r.mixups;
    if (r.first_error.empty()) {
      r.first_error = absl::StrCat("mix-up: got session ", b.session_id(), " batch ", b.batch_index(), ", expected ", id,
                                   " batch ", expected_index);
    }
    return false;
  }
  return true;
}

void CloseSession(Client& client, SessionResult& r) {
  v1::CloseSessionRequest close;
  close.set_session_id(r.id);
  close.set_session_token(TokenOf(r.id));
  v1::CloseSessionResponse closed;
  const grpc::Status s = client.stub().CloseSession(Ctx(absl::Seconds(30)).get(), close, &closed);
  if (!s.ok()) Fail(r, "CloseSession: " + s.error_message());
}

void RunPatchSession(Client& client, const Options& o, int index, std::chrono::steady_clock::time_point end,
                     SessionResult& r) {
  v1::OpenSessionRequest open;
  v1::SessionConfig* c = open.mutable_config();
  c->set_name(absl::StrCat("load-patch-", index));
  c->mutable_pipeline()->set_preset(v1::PRESET_NNUNET_DEFAULT);
  for (int i = 0; i < 3; ++i) c->mutable_pipeline()->mutable_trainer()->add_patch_size(o.patch);
  c->mutable_patch()->set_num_image_channels(1);
  c->set_batch_size(o.batch_size);
  c->set_seed(1000 + static_cast<uint64_t>(index));
  v1::OpenSessionResponse opened;
  grpc::Status s = client.stub().OpenSession(Ctx(absl::Seconds(60)).get(), open, &opened);
  if (!s.ok()) return Fail(r, "OpenSession: " + s.error_message());
  RememberToken(opened);
  r.id = opened.session_id();
  std::vector<int64_t> shape = {static_cast<int64_t>(o.batch_size), 1};
  for (int64_t p : opened.initial_patch_size()) shape.push_back(p);
  v1::AugmentRequest request;
  request.set_session_id(r.id);
  request.set_session_token(TokenOf(r.id));
  *request.mutable_image() = RandomTensor(v1::DTYPE_FLOAT32, shape, static_cast<uint32_t>(index));
  *request.mutable_segmentation() = RandomTensor(v1::DTYPE_INT16, shape, static_cast<uint32_t>(index));
  const auto start = std::chrono::steady_clock::now();
  for (uint64_t i = 0; std::chrono::steady_clock::now() < end && (o.max_batches == 0 || i < o.max_batches); ++i) {
    request.set_batch_index(i);
    v1::AugmentResponse response;
    const auto t0 = std::chrono::steady_clock::now();
    s = client.stub().Augment(Ctx(absl::Seconds(120)).get(), request, &response);
    const auto t1 = std::chrono::steady_clock::now();
    if (!s.ok()) {
      Fail(r, absl::StrCat("Augment ", i, ": ", s.error_message()));
      continue;
    }
    r.latency_ms.push_back(Seconds(t0, t1) * 1e3);
    if (CheckBatch(response.batch(), r.id, i, r)) ++r.batches;
  }
  r.seconds = Seconds(start, std::chrono::steady_clock::now());
  CloseSession(client, r);
}

void RunDatasetSession(Client& client, const Options& o, int index, std::chrono::steady_clock::time_point end,
                       SessionResult& r) {
  r.dataset_mode = true;
  v1::OpenSessionRequest open;
  v1::SessionConfig* c = open.mutable_config();
  c->set_name(absl::StrCat("load-dataset-", index));
  c->mutable_pipeline()->set_preset(v1::PRESET_NNUNET_DEFAULT);
  c->mutable_dataset()->set_dataset_path(o.dataset);
  c->set_batch_size(o.batch_size);
  c->set_seed(2000 + static_cast<uint64_t>(index));
  c->set_prefetch_depth(2);
  v1::OpenSessionResponse opened;
  grpc::Status s = client.stub().OpenSession(Ctx(absl::Seconds(60)).get(), open, &opened);
  if (!s.ok()) return Fail(r, "OpenSession: " + s.error_message());
  RememberToken(opened);
  r.id = opened.session_id();
  grpc::ClientContext ctx;  // no deadline: the stream lives as long as the run
  auto stream = client.stub().StreamBatches(&ctx);
  v1::StreamBatchesRequest req;
  req.mutable_start()->set_session_id(r.id);
  req.mutable_start()->set_session_token(TokenOf(r.id));
  req.mutable_start()->set_initial_credits(1);
  const auto start = std::chrono::steady_clock::now();
  auto t0 = start;
  if (!stream->Write(req)) return Fail(r, "StreamBatches: start not written");
  v1::StreamBatchesResponse response;
  uint64_t expected = 0;
  bool done = false;
  while (stream->Read(&response)) {
    if (response.has_end()) break;
    if (!response.has_batch()) continue;
    r.latency_ms.push_back(Seconds(t0, std::chrono::steady_clock::now()) * 1e3);
    if (CheckBatch(response.batch(), r.id, expected, r)) ++r.batches;
    expected = response.batch().batch_index() + 1;
    if (done) continue;
    if (std::chrono::steady_clock::now() >= end || (o.max_batches != 0 && expected >= o.max_batches)) {
      stream->WritesDone();  // no credit left: the server ends the stream
      done = true;
      continue;
    }
    req.Clear();
    req.mutable_credit()->set_credits(1);
    t0 = std::chrono::steady_clock::now();
    if (!stream->Write(req)) break;
  }
  r.seconds = Seconds(start, std::chrono::steady_clock::now());
  s = stream->Finish();
  if (!s.ok()) Fail(r, "StreamBatches: " + s.error_message());
  CloseSession(client, r);
}

// VmRSS of `pid` in KiB (-1 if unreadable).
int64_t RssKib(int pid) {
  std::ifstream f(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      int64_t kib = 0;
      if (std::sscanf(line.c_str(), "VmRSS: %ld", &kib) == 1) return kib;
    }
  }
  return -1;
}

double Percentile(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

bool ParseArgs(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const size_t eq = a.find('=');
    if (a.rfind("--", 0) != 0 || eq == std::string::npos) {
      std::fprintf(stderr, "load_test: bad argument %s (use --name=value)\n", a.c_str());
      return false;
    }
    const std::string k = a.substr(2, eq - 2), v = a.substr(eq + 1);
    bool ok = true;
    if (k == "target") o.target = v;
    else if (k == "server_pid") ok = absl::SimpleAtoi(v, &o.server_pid);
    else if (k == "sessions") ok = absl::SimpleAtoi(v, &o.sessions) && o.sessions > 0;
    else if (k == "duration") ok = absl::SimpleAtod(v, &o.duration_s) && o.duration_s > 0;
    else if (k == "max_batches") ok = absl::SimpleAtoi(v, &o.max_batches);
    else if (k == "mode") ok = (o.mode = v) == "patch" || v == "dataset" || v == "mixed";
    else if (k == "dataset") o.dataset = v;
    else if (k == "batch_size") ok = absl::SimpleAtoi(v, &o.batch_size) && o.batch_size > 0;
    else if (k == "patch") ok = absl::SimpleAtoi(v, &o.patch) && o.patch > 0;
    else if (k == "rss_interval") ok = absl::SimpleAtod(v, &o.rss_interval_s) && o.rss_interval_s > 0;
    else if (k == "warmup") ok = absl::SimpleAtod(v, &o.warmup_s);
    else if (k == "max_rss_drift_mib") ok = absl::SimpleAtod(v, &o.max_rss_drift_mib);
    else if (k == "make_dataset") o.make_dataset = v;
    else if (k == "case_size") ok = absl::SimpleAtoi(v, &o.case_size) && o.case_size > 0;
    else if (k == "cases") ok = absl::SimpleAtoi(v, &o.cases) && o.cases > 0;
    else ok = false;
    if (!ok) {
      std::fprintf(stderr, "load_test: bad value or unknown flag %s\n", a.c_str());
      return false;
    }
  }
  if (o.make_dataset.empty() && o.mode != "patch" && o.dataset.empty()) {
    std::fprintf(stderr, "load_test: --mode=%s needs --dataset=<dataset folder>\n", o.mode.c_str());
    return false;
  }
  return true;
}

int Main(int argc, char** argv) {
  Options o;
  if (!ParseArgs(argc, argv, o)) return 2;
  if (!o.make_dataset.empty()) {
    std::vector<dataset::testing::TinyCase> cases;
    for (int i = 0; i < o.cases; ++i) {
      cases.push_back({absl::StrCat("c", i), {o.case_size + i, o.case_size, o.case_size - i}});
    }
    std::printf("%s\n", dataset::testing::MakeTinyDataset(o.make_dataset, cases, /*b2nd=*/true,
                                                          {o.patch, o.patch, o.patch}, o.batch_size)
                            .c_str());
    return 0;
  }
  const double warmup = o.warmup_s >= 0 ? o.warmup_s : 0.2 * o.duration_s;

  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < o.sessions; ++i) {
    absl::StatusOr<std::unique_ptr<Client>> c = Client::Connect(o.target, absl::Seconds(10));
    if (!c.ok()) {
      std::fprintf(stderr, "load_test: cannot connect to %s: %s\n", o.target.c_str(), c.status().ToString().c_str());
      return 1;
    }
    clients.push_back(*std::move(c));
  }

  // RSS sampler.
  std::atomic<bool> stop{false};
  std::vector<std::pair<double, int64_t>> rss;  // (seconds since start, KiB)
  const auto start = std::chrono::steady_clock::now();
  const auto end = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                               std::chrono::duration<double>(o.duration_s));
  std::thread sampler([&] {
    while (o.server_pid > 0 && !stop.load()) {
      rss.emplace_back(Seconds(start, std::chrono::steady_clock::now()), RssKib(o.server_pid));
      std::this_thread::sleep_for(std::chrono::duration<double>(o.rss_interval_s));
    }
  });

  std::vector<SessionResult> results(static_cast<size_t>(o.sessions));
  std::vector<std::thread> threads;
  for (int i = 0; i < o.sessions; ++i) {
    const bool dataset_mode = o.mode == "dataset" || (o.mode == "mixed" && i % 2 == 1);
    threads.emplace_back([&, i, dataset_mode] {
      if (dataset_mode) {
        RunDatasetSession(*clients[static_cast<size_t>(i)], o, i, end, results[static_cast<size_t>(i)]);
      } else {
        RunPatchSession(*clients[static_cast<size_t>(i)], o, i, end, results[static_cast<size_t>(i)]);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const double elapsed = Seconds(start, std::chrono::steady_clock::now());
  stop = true;
  sampler.join();
  if (o.server_pid > 0) rss.emplace_back(elapsed, RssKib(o.server_pid));

  // Report.
  std::printf("augmentd load test: %d sessions (%s), %.1f s, batch_size %u, target %s\n", o.sessions, o.mode.c_str(),
              elapsed, o.batch_size, o.target.c_str());
  std::printf("%-8s %8s %8s %7s %7s %10s %9s %9s %9s %9s\n", "mode", "sessions", "batches", "errors", "mixups",
              "b/s/sess", "p50 ms", "p95 ms", "p99 ms", "max ms");
  uint64_t total_errors = 0, total_mixups = 0;
  for (bool ds : {false, true}) {
    std::vector<double> lat;
    uint64_t batches = 0, errors = 0, mixups = 0;
    int n = 0;
    double rate = 0, min_rate = 1e30;
    for (const SessionResult& r : results) {
      if (r.dataset_mode != ds) continue;
      ++n;
      batches += r.batches;
      errors += r.errors;
      mixups += r.mixups;
      const double sr = r.seconds > 0 ? static_cast<double>(r.batches) / r.seconds : 0;
      rate += sr;
      min_rate = std::min(min_rate, sr);
      lat.insert(lat.end(), r.latency_ms.begin(), r.latency_ms.end());
      if (!r.first_error.empty()) std::printf("  session %s: %s\n", r.id.c_str(), r.first_error.c_str());
    }
    if (n == 0) continue;
    total_errors += errors;
    total_mixups += mixups;
    std::vector<double> sorted = lat;
    const double p50 = Percentile(lat, 0.50), p95 = Percentile(lat, 0.95), p99 = Percentile(lat, 0.99);
    const double mx = sorted.empty() ? 0 : *std::max_element(sorted.begin(), sorted.end());
    std::printf("%-8s %8d %8lu %7lu %7lu %5.2f/%-4.2f %9.1f %9.1f %9.1f %9.1f\n", ds ? "dataset" : "patch", n,
                static_cast<unsigned long>(batches), static_cast<unsigned long>(errors),
                static_cast<unsigned long>(mixups), rate / n, min_rate, p50, p95, p99, mx);
  }
  std::printf("(b/s/sess: mean/min batches per second per session; latency: Augment call, or credit -> batch)\n");
  bool rss_ok = true;
  if (o.server_pid > 0 && !rss.empty()) {
    int64_t base = -1, peak = 0;
    for (const auto& [t, kib] : rss) {
      if (base < 0 && t >= warmup && kib > 0) base = kib;
      peak = std::max(peak, kib);
    }
    if (base < 0) base = rss.back().second;
    const int64_t first = rss.front().second, last = rss.back().second;
    const double drift_mib = static_cast<double>(last - base) / 1024.0;
    rss_ok = last > 0 && std::abs(drift_mib) <= o.max_rss_drift_mib;
    std::printf("server RSS (MiB): start %.1f, after %.0f s warm-up %.1f, peak %.1f, end %.1f, drift %+.1f "
                "(limit %.0f), %zu samples\n",
                first / 1024.0, warmup, base / 1024.0, peak / 1024.0, last / 1024.0, drift_mib, o.max_rss_drift_mib,
                rss.size());
  }
  const bool ok = total_errors == 0 && total_mixups == 0 && rss_ok;
  std::printf("RESULT %s: errors %lu, mixups %lu%s\n", ok ? "PASS" : "FAIL", static_cast<unsigned long>(total_errors),
              static_cast<unsigned long>(total_mixups), rss_ok ? "" : ", RSS drift over the limit");
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace augmentd

int main(int argc, char** argv) { return augmentd::Main(argc, argv); }
