#include "server/metrics.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/service.h"
#include "server/session.h"

namespace augmentd {

void LatencyHistogram::Observe(absl::Duration d) {
  const double seconds = std::max(0.0, absl::ToDoubleSeconds(d));
  size_t i = 0;
  while (i < kBounds.size() && seconds > kBounds[i]) ++i;
  ++buckets_[i];
  sum_ += seconds;
  ++count_;
}

std::vector<uint64_t> LatencyHistogram::CumulativeCounts() const {
  std::vector<uint64_t> out;
  uint64_t total = 0;
  for (uint64_t n : buckets_) {
    total += n;
    out.push_back(total);
  }
  return out;
}

const char* BatchPhaseName(BatchPhase phase) {
  switch (phase) {
    case BatchPhase::kQueue:
      return "queue";
    case BatchPhase::kLoad:
      return "load";
    case BatchPhase::kCompute:
      return "compute";
  }
  return "unknown";
}

void ServerMetrics::ObserveBatch(const std::string& session_id, absl::Duration queue, absl::Duration load,
                                 absl::Duration compute) {
  std::lock_guard<std::mutex> lock(mu_);
  std::array<LatencyHistogram, 3>& h = sessions_[session_id];
  h[static_cast<int>(BatchPhase::kQueue)].Observe(queue);
  h[static_cast<int>(BatchPhase::kLoad)].Observe(load);
  h[static_cast<int>(BatchPhase::kCompute)].Observe(compute);
}

std::array<LatencyHistogram, 3> ServerMetrics::SessionHistograms(const std::string& session_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(session_id);
  return it == sessions_.end() ? std::array<LatencyHistogram, 3>{} : it->second;
}

void ServerMetrics::Retain(const std::vector<std::string>& open_ids) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    if (std::find(open_ids.begin(), open_ids.end(), it->first) == open_ids.end()) {
      it = sessions_.erase(it);
    } else {
      ++it;
    }
  }
}

std::string EscapeLabelValue(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

namespace {

std::string FormatValue(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return absl::StrFormat("%.0f", v);
  return absl::StrFormat("%.9g", v);
}

std::string LabelSet(const std::vector<std::pair<std::string, std::string>>& labels) {
  if (labels.empty()) return "";
  std::string out = "{";
  for (size_t i = 0; i < labels.size(); ++i) {
    absl::StrAppend(&out, i ? "," : "", labels[i].first, "=\"", EscapeLabelValue(labels[i].second), "\"");
  }
  return out + "}";
}

}  // namespace

void AppendFamily(std::string* out, const std::string& name, const std::string& type, const std::string& help,
                  const std::vector<MetricSample>& samples) {
  absl::StrAppend(out, "# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n");
  for (const MetricSample& s : samples) absl::StrAppend(out, name, LabelSet(s.labels), " ", FormatValue(s.value), "\n");
}

namespace {

using Labels = std::vector<std::pair<std::string, std::string>>;

// The histogram family of every open session's batch phases.
void AppendLatencyHistograms(std::string* out, const ServerMetrics& metrics,
                             const std::vector<std::shared_ptr<Session>>& sessions) {
  const std::string name = "augmentd_batch_latency_seconds";
  absl::StrAppend(out, "# HELP ", name,
                  " Per-batch latency by phase: queue (submitted until a worker starts it), load (dataset read), "
                  "compute (augmentation).\n# TYPE ", name, " histogram\n");
  for (const std::shared_ptr<Session>& s : sessions) {
    const std::array<LatencyHistogram, 3> h = metrics.SessionHistograms(s->id());
    for (BatchPhase phase : {BatchPhase::kQueue, BatchPhase::kLoad, BatchPhase::kCompute}) {
      const LatencyHistogram& hist = h[static_cast<int>(phase)];
      const Labels base = {{"session", s->id()}, {"phase", BatchPhaseName(phase)}};
      const std::vector<uint64_t> counts = hist.CumulativeCounts();
      for (size_t i = 0; i < counts.size(); ++i) {
        Labels labels = base;
        labels.emplace_back("le", i < LatencyHistogram::kBounds.size() ? FormatValue(LatencyHistogram::kBounds[i])
                                                                         : "+Inf");
        absl::StrAppend(out, name, "_bucket", LabelSet(labels), " ", counts[i], "\n");
      }
      absl::StrAppend(out, name, "_sum", LabelSet(base), " ", FormatValue(hist.sum_seconds()), "\n");
      absl::StrAppend(out, name, "_count", LabelSet(base), " ", hist.count(), "\n");
    }
  }
}

}  // namespace

std::string RenderMetrics(AugmentServiceImpl& service, bool serving) {
  std::vector<std::shared_ptr<Session>> sessions = service.registry().List();
  std::vector<std::string> ids;
  for (const auto& s : sessions) ids.push_back(s->id());
  service.metrics().Retain(ids);

  std::string out;
  AppendFamily(&out, "augmentd_up", "gauge", "1 while the server is SERVING, 0 while it drains.",
               {{{}, serving ? 1.0 : 0.0}});
  AppendFamily(&out, "augmentd_sessions_open", "gauge", "Sessions open now.",
               {{{}, static_cast<double>(sessions.size())}});
  AppendFamily(&out, "augmentd_sessions_opened_total", "counter", "Sessions opened since the start.",
               {{{}, static_cast<double>(service.registry().sessions_opened())}});
  AppendFamily(&out, "augmentd_sessions_expired_total", "counter",
               "Sessions closed by the server after --session_idle_timeout without a call or stream.",
               {{{}, static_cast<double>(service.leases().expired())}});
  AppendFamily(&out, "augmentd_batches_total", "counter", "Batches delivered to clients, all sessions.",
               {{{}, static_cast<double>(service.batches_produced())}});
  AppendFamily(&out, "augmentd_requests_rejected_total", "counter", "Requests answered with an error status.",
               {{{}, static_cast<double>(service.requests_rejected())}});

  const ExecutorStats executor = service.executor().Stats();
  std::vector<MetricSample> workers, pool_queued, pool_running;
  for (const ExecutorStats::Pool& p : executor.pools) {
    workers.push_back({{{"device", p.device}}, static_cast<double>(p.workers)});
    pool_queued.push_back({{{"device", p.device}}, static_cast<double>(p.queued)});
    pool_running.push_back({{{"device", p.device}}, static_cast<double>(p.running)});
  }
  AppendFamily(&out, "augmentd_executor_workers", "gauge", "Worker threads per device pool.", workers);
  AppendFamily(&out, "augmentd_executor_queued_tasks", "gauge", "Tasks waiting for a worker, per device pool.",
               pool_queued);
  AppendFamily(&out, "augmentd_executor_running_tasks", "gauge", "Tasks running, per device pool.", pool_running);

  // Per session. Every family lists every open session (0 when there is nothing to report).
  struct Family {
    const char* name;
    const char* type;
    const char* help;
    std::vector<MetricSample> samples;
  };
  std::vector<Family> families = {
      {"augmentd_session_batches_delivered_total", "counter", "Batches delivered to the session's clients.", {}},
      {"augmentd_session_samples_delivered_total", "counter", "Samples delivered to the session's clients.", {}},
      {"augmentd_session_bytes_delivered_total", "counter", "Bytes of delivered batch messages.", {}},
      {"augmentd_session_queue_depth", "gauge", "Batches produced or in production, not yet sent.", {}},
      {"augmentd_session_executor_tasks", "gauge", "The session's tasks queued or running on the executor.", {}},
      {"augmentd_session_active_streams", "gauge", "Open StreamBatches calls of the session.", {}},
      {"augmentd_session_credits", "gauge", "Batches the client may still receive (credits).", {}},
      {"augmentd_session_leased_slots", "gauge", "Output slots the client holds and has not released.", {}},
      {"augmentd_session_output_slots", "gauge", "Output slots in the session's ring (0 for inline delivery).", {}},
      {"augmentd_session_slot_bytes", "gauge", "Bytes of the session's output slots (host shm or GPU memory).", {}},
      {"augmentd_session_device_memory_bytes", "gauge", "Device memory held by the session (slots, staging).", {}},
      {"augmentd_session_input_region_bytes", "gauge", "Client input regions mapped for the session.", {}},
      {"augmentd_session_weight", "gauge", "Fair-share weight of the session (SessionConfig.weight).", {}},
  };
  std::vector<MetricSample> info;
  for (const std::shared_ptr<Session>& s : sessions) {
    const v1::SessionStats st = s->Stats();
    const Labels labels = {{"session", s->id()}};
    info.push_back({{{"session", s->id()}, {"name", s->settings().name}, {"device", s->settings().device.name}}, 1});
    const auto flow = executor.flows.find(s->id());
    const size_t tasks = flow == executor.flows.end() ? 0 : flow->second.queued + flow->second.running;
    const double values[] = {static_cast<double>(st.batches_produced()), static_cast<double>(st.samples_produced()),
                             static_cast<double>(st.bytes_delivered()),  static_cast<double>(st.queued_batches()),
                             static_cast<double>(tasks),
                             static_cast<double>(s->active_streams.load()),
                             static_cast<double>(st.credits()),          static_cast<double>(st.leased_slots()),
                             static_cast<double>(st.output_slots()),     static_cast<double>(st.slot_bytes()),
                             static_cast<double>(st.device_memory_bytes()),
                             static_cast<double>(st.input_region_bytes()), s->settings().weight};
    for (size_t i = 0; i < families.size(); ++i) families[i].samples.push_back({labels, values[i]});
  }
  AppendFamily(&out, "augmentd_session_info", "gauge", "Open sessions: name and device (value 1).", info);
  for (const Family& f : families) AppendFamily(&out, f.name, f.type, f.help, f.samples);
  AppendLatencyHistograms(&out, service.metrics(), sessions);
  return out;
}

}  // namespace augmentd
