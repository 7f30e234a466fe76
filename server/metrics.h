// server/metrics.h — Prometheus metrics of augmentd: per-session batch latency histograms recorded by the
// batch producers, plus the text exposition (format 0.0.4) of everything /metrics shows.
//
//   service.metrics().ObserveBatch(session_id, info.queued, load, compute);   // per produced batch
//   std::string text = RenderMetrics(service);                                // GET /metrics
//
// Counters and gauges that live elsewhere (sessions' delivered batches/bytes, credits, queue depth, slot
// occupancy and device memory from Session::Stats(); the executor's pools) are read at scrape time, so
// they cannot drift from GetStats. Histograms of sessions that are no longer open are dropped at the next
// scrape. Thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace augmentd {

class AugmentServiceImpl;

// A cumulative latency histogram in seconds (Prometheus `_bucket{le=...}`, `_sum`, `_count`).
class LatencyHistogram {
 public:
  // Upper bounds in seconds, 100 µs .. 10 s; +Inf is implicit.
  static constexpr std::array<double, 14> kBounds = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                                     0.025,  0.05,    0.1,    0.25,  0.5,    1,     10};
  void Observe(absl::Duration d);
  // counts[i]: observations ≤ kBounds[i] (cumulative); the last element is +Inf (= count).
  std::vector<uint64_t> CumulativeCounts() const;
  double sum_seconds() const { return sum_; }
  uint64_t count() const { return count_; }

 private:
  std::array<uint64_t, kBounds.size() + 1> buckets_{};  // non-cumulative
  double sum_ = 0;
  uint64_t count_ = 0;
};

// One batch's phases: queue (submission → a worker starts it), load (dataset read), compute (augmentation).
enum class BatchPhase { kQueue = 0, kLoad = 1, kCompute = 2 };
const char* BatchPhaseName(BatchPhase phase);

class ServerMetrics {
 public:
  void ObserveBatch(const std::string& session_id, absl::Duration queue, absl::Duration load,
                    absl::Duration compute);
  // Snapshot of one session's histograms (empty histograms when none were recorded).
  std::array<LatencyHistogram, 3> SessionHistograms(const std::string& session_id) const;
  // Drops the histograms of every session not in `open_ids`.
  void Retain(const std::vector<std::string>& open_ids);

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::array<LatencyHistogram, 3>> sessions_;  // guarded by mu_
};

// Appends one metric family in the text exposition format: `# HELP`, `# TYPE`, then samples.
struct MetricSample {
  std::vector<std::pair<std::string, std::string>> labels;
  double value = 0;
};
void AppendFamily(std::string* out, const std::string& name, const std::string& type, const std::string& help,
                  const std::vector<MetricSample>& samples);
// Escapes a label value (backslash, double quote, newline).
std::string EscapeLabelValue(const std::string& value);

// The whole /metrics page of a running service; `serving` is the health state (false while draining).
std::string RenderMetrics(AugmentServiceImpl& service, bool serving);

}  // namespace augmentd
