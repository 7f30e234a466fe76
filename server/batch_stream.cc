#include "server/batch_stream.h"

#include <atomic>
#include <cstdint>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "server/delivery.h"
#include "server/log.h"
#include "server/request_limits.h"
#include "server/service.h"
#include "server/session.h"
#include "server/status.h"

namespace augmentd {
namespace {

using Request = v1::StreamBatchesRequest;
using Response = v1::StreamBatchesResponse;
using Reactor = grpc::ServerBidiReactor<Request, Response>;

constexpr uint64_t kNoEnd = std::numeric_limits<uint64_t>::max();

// What a caller must do after releasing the state lock.
struct Action {
  Reactor* reactor = nullptr;
  bool write = false;
  bool finish = false;
  grpc::Status status;
  std::vector<std::pair<uint64_t, std::optional<v1::SlotLease>>> produce;  // (batch index, its slot) to submit
};

std::atomic<uint64_t> next_stream_id{1};

// Shared by the reactor and the executor tasks (which may outlive the reactor).
struct StreamState {
  explicit StreamState(AugmentServiceImpl* s) : service(s) {}
  AugmentServiceImpl* const service;

  std::mutex mu;
  Reactor* reactor = nullptr;  // valid until `finished` is set (then OnDone may delete it)
  bool finished = false;       // Finish was called (or is being called by the holder of the Action)
  bool writing = false;        // a StartWrite is outstanding
  bool started = false;
  bool reads_done = false;     // the client half-closed (or the call broke)
  bool session_closed = false;
  bool end_written = false;    // the StreamEnd message was written
  bool write_is_batch = false;
  std::optional<grpc::Status> error;  // finish with this once no write is outstanding
  std::shared_ptr<Session> session;
  std::shared_ptr<SlotRing> slots;  // the session's output slots (HOST_SHM / CUDA_IPC); null for inline
  const uint64_t stream_id = next_stream_id.fetch_add(1);  // slot owner id
  uint64_t next_produce = 0, next_send = 0, end_index = kNoEnd;
  uint32_t in_production = 0;
  uint64_t credits = 0;
  std::map<uint64_t, Response> ready;  // produced, waiting for their turn and a credit (slot: Batch.lease)
  std::map<uint64_t, absl::Time> produced_at;
  Response write_msg;
  uint64_t write_index = 0;
  std::string end_reason;
};

void EndMessage(StreamState& st, const std::string& reason) {
  st.write_msg.Clear();
  st.write_msg.mutable_end()->set_next_batch_index(st.next_send);
  st.write_msg.mutable_end()->set_reason(reason);
  st.end_reason = reason;
  st.end_written = true;
  st.write_is_batch = false;
  st.writing = true;
}

// Decides the next steps; called with st.mu held.
Action Pump(StreamState& st) {
  Action a;
  a.reactor = st.reactor;
  if (st.finished) return a;
  if (st.error.has_value()) {
    if (!st.writing) {
      st.finished = true;
      a.finish = true;
      a.status = *st.error;
    }
    return a;
  }
  if (!st.started) {
    if (st.reads_done && !st.writing) {  // the client left without starting
      st.finished = true;
      a.finish = true;
      a.status = grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "start: the stream ended before a start message");
    }
    return a;
  }
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
  if (!st.writing) {
    auto next = st.ready.find(st.next_send);
    if (st.end_written) {
      st.finished = true;
      a.finish = true;
      a.status = grpc::Status::OK;
    } else if (st.credits > 0 && next != st.ready.end() && !st.session_closed) {
      st.write_msg = std::move(next->second);
      st.ready.erase(next);
      if (st.slots != nullptr && st.write_msg.batch().has_lease()) st.slots->Lease(st.write_msg.batch().lease().slot());
      st.write_index = st.next_send++;
      st.write_msg.mutable_batch()->mutable_timing()->set_sent_unix_ns(absl::ToUnixNanos(absl::Now()));
      --st.credits;
      st.writing = true;
      st.write_is_batch = true;
      a.write = true;
    } else if (st.next_send >= st.end_index) {
      EndMessage(st, "max_batches reached");
      a.write = true;
    } else if (st.session_closed) {
      EndMessage(st, "session closed");
      a.write = true;
    } else if (st.reads_done && st.credits == 0) {
      EndMessage(st, "client finished");
      a.write = true;
    }
  }
  st.session->credits.store(static_cast<uint32_t>(std::min<uint64_t>(st.credits, UINT32_MAX)));
  st.session->queued_batches.store(static_cast<uint32_t>(st.ready.size() + st.in_production));
  return a;
}

void Perform(const std::shared_ptr<StreamState>& state, Action a);

// Runs on an executor thread: produce batch `index` and hand it to the stream.
void ProduceTask(const std::shared_ptr<StreamState>& state, uint64_t index, const std::optional<v1::SlotLease>& lease,
                 const WorkerInfo& worker) {
  std::shared_ptr<Session> session;
  // A slot that will not be sent goes back to the ring.
  auto abandon = [&] {
    if (lease.has_value() && state->slots != nullptr) state->slots->Abandon(lease->slot());
  };
  {
    std::lock_guard<std::mutex> lock(state->mu);
    if (state->finished || state->session_closed) {
      --state->in_production;
      abandon();
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
  Action a;
  {
    std::lock_guard<std::mutex> lock(state->mu);
    --state->in_production;
    if (state->finished || !proto.ok()) abandon();
    if (state->finished) return;
    if (!proto.ok()) {
      LogWarning("session=", session->id(), " batch=", index, " failed: ", proto.status().ToString());
      if (!state->error.has_value()) {
        state->error = ToGrpcStatus(absl::Status(
            proto.status().code(), absl::StrCat("batch ", index, ": ", proto.status().message())));
      }
    } else {
      *state->ready[index].mutable_batch() = *std::move(proto);
      state->produced_at[index] = start;
    }
    a = Pump(*state);
  }
  Perform(state, std::move(a));
}

void Perform(const std::shared_ptr<StreamState>& state, Action a) {
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
  if (a.write) a.reactor->StartWrite(&state->write_msg);
  if (a.finish) a.reactor->Finish(a.status);
}

class BatchStream final : public Reactor {
 public:
  explicit BatchStream(AugmentServiceImpl* service) : state_(std::make_shared<StreamState>(service)) {
    state_->reactor = this;
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    Action a;
    bool read_more = false;
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      if (!ok) {
        state_->reads_done = true;
      } else if (absl::Status s = Handle(request_); !s.ok()) {
        if (!state_->error.has_value()) state_->error = ToGrpcStatus(s);
        state_->service->CountRejected();
      } else {
        read_more = !state_->finished;
      }
      a = Pump(*state_);
    }
    // Inside a reaction OnDone cannot run, so StartRead is safe even if another thread finishes now.
    if (read_more) StartRead(&request_);
    Perform(state_, std::move(a));
  }

  void OnWriteDone(bool ok) override {
    Action a;
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      state_->writing = false;
      if (!ok) {
        if (!state_->error.has_value()) {
          state_->error = grpc::Status(grpc::StatusCode::CANCELLED, "the client went away");
        }
      } else if (state_->write_is_batch) {
        absl::Time produced = absl::Now();
        if (auto it = state_->produced_at.find(state_->write_index); it != state_->produced_at.end()) {
          produced = it->second;
          state_->produced_at.erase(it);
        }
        state_->session->RecordDelivered(
            state_->write_index, state_->write_msg.ByteSizeLong() + SlotPayloadBytes(state_->write_msg.batch()),
            absl::Now() - produced);
        state_->service->CountBatch();
      }
      a = Pump(*state_);
    }
    Perform(state_, std::move(a));
  }

  void OnCancel() override {
    Action a;
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      if (!state_->error.has_value()) state_->error = grpc::Status(grpc::StatusCode::CANCELLED, "cancelled");
      a = Pump(*state_);
    }
    Perform(state_, std::move(a));
  }

  void OnDone() override {
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      state_->finished = true;
      state_->reactor = nullptr;
      if (state_->slots != nullptr) {
        // Batches produced but never sent, then every lease this stream's client still held (it finished,
        // was cancelled or vanished): their slots are free again. Tasks still producing abandon their own.
        for (const auto& [index, response] : state_->ready) state_->slots->Abandon(response.batch().lease().slot());
        const uint32_t reclaimed = state_->slots->ReclaimOwner(state_->stream_id);
        state_->slots->RemoveWaiter(state_->stream_id);
        if (reclaimed > 0) LogInfo("session=", state_->session->id(), " stream done: reclaimed ", reclaimed, " leased slots");
      }
      state_->ready.clear();
      if (state_->session != nullptr) {
        state_->session->active_streams.fetch_sub(1);
        state_->session->credits.store(0);
        LogInfo("session=", state_->session->id(), " stream done: next_batch=", state_->next_send,
                state_->end_reason.empty() ? "" : " reason='" + state_->end_reason + "'",
                state_->error.has_value() ? " error='" + state_->error->error_message() + "'" : "");
      }
    }
    delete this;
  }

 private:
  // Applies one client message; st.mu held.
  absl::Status Handle(const Request& r) {
    StreamState& st = *state_;
    switch (r.msg_case()) {
      case Request::kStart: {
        if (st.started) return absl::InvalidArgumentError("start: sent twice on one stream");
        const v1::StreamStart& start = r.start();
        if (absl::Status s = CheckRequestStrings(start); !s.ok()) {
          return absl::InvalidArgumentError(absl::StrCat("start.", s.message()));
        }
        absl::StatusOr<std::shared_ptr<Session>> session =
            st.service->OwnedSession(start.session_id(), start.session_token());
        if (!session.ok()) {
          return absl::Status(session.status().code(), absl::StrCat("start.", session.status().message()));
        }
        if (!(*session)->dataset_mode()) {
          return absl::UnimplementedError(
              "start.session_id: a patch-mode session: stream patches with StreamPatches (or call Augment)");
        }
        const uint32_t max_streams = st.service->context().options.limits.max_streams_per_session;
        if ((*session)->active_streams.fetch_add(1) >= static_cast<int>(max_streams)) {
          (*session)->active_streams.fetch_sub(1);
          return absl::ResourceExhaustedError(
              absl::StrCat("max_streams_per_session: session ", start.session_id(), " already has ", max_streams,
                           " streams"));
        }
        st.session = *session;
        st.slots = st.session->slots();
        st.started = true;
        if (st.slots != nullptr) {
          // A slot freed elsewhere (a release, another stream ending) may unblock production: pump on the executor.
          std::weak_ptr<StreamState> weak_waiter = state_;
          AugmentServiceImpl* service = st.service;
          const std::string key = st.session->id();
          st.slots->AddWaiter(st.stream_id, [weak_waiter, service, key] {
            service->executor().Submit(key, [weak_waiter] {
              std::shared_ptr<StreamState> state = weak_waiter.lock();
              if (state == nullptr) return;
              Action a;
              {
                std::lock_guard<std::mutex> lock(state->mu);
                a = Pump(*state);
              }
              Perform(state, std::move(a));
            });
          });
        }
        const uint64_t first =
            start.start_batch_index() != 0 ? start.start_batch_index() : st.session->Stats().next_batch_index();
        st.next_produce = st.next_send = first;
        st.end_index = start.max_batches() == 0 ? kNoEnd : first + start.max_batches();
        st.credits = start.initial_credits();
        std::weak_ptr<StreamState> weak = state_;
        LogInfo("session=", st.session->id(), " stream start: batch=", first, " credits=", st.credits,
                " max_batches=", start.max_batches());
        // Registered last: runs inline if the session is already closed, which takes st.mu — so defer it.
        st.service->executor().Submit(st.session->id(), [weak, session = st.session] {
          session->AddCloseListener([weak] {
            std::shared_ptr<StreamState> state = weak.lock();
            if (state == nullptr) return;
            Action a;
            {
              std::lock_guard<std::mutex> lock(state->mu);
              state->session_closed = true;
              a = Pump(*state);
            }
            Perform(state, std::move(a));
          });
        });
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

  // Returns leases (Release.leases, Credit.releases) to the ring; st.mu held. Inline streams have none: ignored.
  void ReleaseLeases(const google::protobuf::RepeatedPtrField<v1::SlotLease>& leases) {
    if (state_->slots == nullptr) return;
    for (const v1::SlotLease& lease : leases) state_->slots->Release(state_->stream_id, lease);
  }

  std::shared_ptr<StreamState> state_;
  Request request_;
};

}  // namespace

Reactor* NewBatchStream(AugmentServiceImpl* service) { return new BatchStream(service); }

}  // namespace augmentd
