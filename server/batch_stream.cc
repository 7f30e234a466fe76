#include "server/batch_stream.h"

#include <atomic>
#include <cstdint>
#include <iterator>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "server/log.h"
#include "server/service.h"
#include "server/session.h"
#include "server/stream_core.h"

namespace augmentd {
namespace {

using stream::Request;

constexpr uint64_t kNoEnd = std::numeric_limits<uint64_t>::max();

std::atomic<uint64_t> next_stream_id{1};

using BatchItem = std::pair<uint64_t, std::optional<v1::SlotLease>>;  // (batch index, its slot)
using Action = stream::Action<BatchItem>;

// Shared by the reactor and the executor tasks (which may outlive the reactor). Keys are batch indices.
struct StreamState : stream::StreamCore {
  explicit StreamState(AugmentServiceImpl* s) : StreamCore(s, next_stream_id.fetch_add(1)) {}
  uint64_t next_produce = 0, end_index = kNoEnd;
};

struct BatchMode {
  using State = StreamState;
  using Item = BatchItem;
  static constexpr const char* kName = "stream";
  static Action Pump(StreamState& st);
  static void Perform(const std::shared_ptr<StreamState>& state, Action a);
};

// Decides the next steps; called with st.mu held.
Action BatchMode::Pump(StreamState& st) {
  Action a;
  if (stream::PumpPreamble(st, a)) return a;
  if (!st.session_closed && st.slots != nullptr) {
    // Fair hand-out (server/slot_ring.h): above its share of the ring, give back unsent batches from the top
    // (re-produced later; only a contiguous top, so next_produce can step back over them).
    for (uint32_t over = st.slots->OverShare(st.stream_id); over > 0 && !st.ready.empty(); --over) {
      auto top = std::prev(st.ready.end());
      if (top->first + 1 != st.next_produce || !top->second.batch().has_lease()) break;
      st.slots->Abandon(top->second.batch().lease().slot());
      st.ready.erase(top);
      --st.next_produce;
    }
  }
  if (!st.session_closed) {
    while (st.in_production + st.ready.size() < st.session->settings().prefetch_depth && st.next_produce < st.end_index) {
      std::optional<v1::SlotLease> lease;
      if (st.slots != nullptr) {
        lease = st.slots->Acquire(st.stream_id);
        if (!lease.has_value()) break;  // every slot is leased or in use: wait for a release (RingWaiter)
      }
      a.produce.emplace_back(st.next_produce++, std::move(lease));
      ++st.in_production;
    }
  }
  stream::PumpWrite(st, a, st.ready.size() + st.in_production, [&st]() -> const char* {
    if (st.next_send >= st.end_index) return "max_batches reached";
    if (st.session_closed) return "session closed";
    if (st.reads_done && st.credits == 0) return "client finished";
    return nullptr;
  });
  return a;
}

// Runs on an executor thread: produce batch `index` and hand it to the stream.
void ProduceTask(const std::shared_ptr<StreamState>& state, uint64_t index, const std::optional<v1::SlotLease>& lease,
                 const WorkerInfo& worker) {
  std::shared_ptr<Session> session;
  {
    std::lock_guard<std::mutex> lock(state->mu);
    if (state->finished || state->session_closed) {
      --state->in_production;
      if (lease.has_value() && state->slots != nullptr) state->slots->Abandon(lease->slot());  // back to the ring
      return;
    }
    session = state->session;
  }
  const absl::Time start = absl::Now();
  const v1::SlotLease* slot = lease.has_value() ? &*lease : nullptr;
  absl::StatusOr<ProducedBatch> batch = session->ProduceDatasetBatch(index, slot);
  if (batch.ok()) {
    state->service->metrics().ObserveBatch(session->id(), worker.queued, absl::Microseconds(batch->load_us),
                                           absl::Microseconds(batch->compute_us));
    session->RecordProduced(absl::Microseconds(batch->load_us), absl::Microseconds(batch->compute_us));
  }
  absl::StatusOr<v1::Batch> proto = batch.ok() ? session->MakeBatchProto(*batch, slot) : batch.status();
  if (proto.ok()) proto->mutable_timing()->set_queue_us(absl::ToInt64Microseconds(worker.queued));
  stream::DeliverProduced<BatchMode>(state, index, index, start, lease, std::move(proto));
}

void BatchMode::Perform(const std::shared_ptr<StreamState>& state, Action a) {
  if (!a.produce.empty()) {
    std::shared_ptr<Session> session;
    {
      std::lock_guard<std::mutex> lock(state->mu);
      session = state->session;
    }
    for (auto& [index, lease] : a.produce) {
      // Weighted fair queuing on the session's device pool; bounded by the prefetch depth, so never refused.
      state->service->executor().Submit(
          state->service->BatchTask(*session),
          [state, index = index, lease = lease](const WorkerInfo& w) { ProduceTask(state, index, lease, w); });
    }
  }
  stream::WriteOrFinish(state, a);
}

class BatchStream final : public stream::StreamReactor<BatchMode, BatchStream> {
 public:
  explicit BatchStream(AugmentServiceImpl* service) : StreamReactor(std::make_shared<StreamState>(service)) {
    Begin();
  }

  // Applies one client message; st.mu held.
  absl::Status Handle(const Request& r) {
    StreamState& st = *state_;
    switch (r.msg_case()) {
      case Request::kStart: {
        const v1::StreamStart& start = r.start();
        if (absl::Status s = stream::AttachSession(st, start, [](const Session& session) {
              return session.dataset_mode() ? absl::OkStatus()
                                            : absl::UnimplementedError("start.session_id: a patch-mode session: stream "
                                                                       "patches with StreamPatches (or call Augment)");
            });
            !s.ok()) {
          return s;
        }
        stream::WatchSlotsAndClose<BatchMode>(state_);
        const uint64_t first =
            start.start_batch_index() != 0 ? start.start_batch_index() : st.session->Stats().next_batch_index();
        st.next_produce = st.next_send = first;
        st.end_index = start.max_batches() == 0 ? kNoEnd : first + start.max_batches();
        LogInfo("session=", st.session->id(), " stream start: batch=", first, " credits=", st.credits,
                " max_batches=", start.max_batches());
        return absl::OkStatus();
      }
      case Request::kCredit:
        if (!st.started) return absl::InvalidArgumentError("credit: the first message must be start");
        st.credits = std::min<uint64_t>(st.credits + r.credit().credits(), uint64_t{1} << 32);
        ReleaseLeases(r.credit().releases());
        return absl::OkStatus();
      case Request::kRelease:
        // Inline delivery has no slot leases: releases are accepted and ignored. With slots, a release of a lease
        // this stream does not hold (stale generation, another stream's slot, unknown slot) is ignored and counted
        // (SessionStats.stale_releases); the freed slot wakes production through the ring's waiter.
        if (!st.started) return absl::InvalidArgumentError("release: the first message must be start");
        ReleaseLeases(r.release().leases());
        return absl::OkStatus();
      case Request::kPatches:
        return absl::UnimplementedError("patches: StreamBatches carries no patches; use StreamPatches or Augment");
      default:
        return absl::InvalidArgumentError("msg: empty StreamBatchesRequest (set start, credit or release)");
    }
  }

  void Cleanup() {}

 private:
  // Returns leases (Release.leases, Credit.releases) to the ring; st.mu held. Inline streams have none: ignored.
  void ReleaseLeases(const google::protobuf::RepeatedPtrField<v1::SlotLease>& leases) {
    if (state_->slots == nullptr) return;
    for (const v1::SlotLease& lease : leases) state_->slots->Release(state_->stream_id, lease);
  }
};

}  // namespace

stream::Reactor* NewBatchStream(AugmentServiceImpl* service) { return new BatchStream(service); }

}  // namespace augmentd
