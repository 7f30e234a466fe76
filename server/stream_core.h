// server/stream_core.h — the reactor plumbing StreamBatches (server/batch_stream.cc, dataset mode) and
// StreamPatches (server/patch_stream.cc, patch mode) share: one state core, the parts of Pump that decide what to
// write and when to finish, the gRPC reactor callbacks, the session hook-up at the start message and the hand-over
// of a produced batch to its stream. The modes add only what differs: what is produced and when (batch indices
// from a start index / the client's patches requests), which messages the client may send, their cleanup.
//
// Threading (both modes): every field of a StreamCore is guarded by its `mu`; the reactor and executor tasks (which
// may outlive the reactor: they hold the state by shared_ptr) decide under the lock (Pump → an Action) and act
// after releasing it (Perform: submit production, StartWrite, Finish). Exactly one write is outstanding at a time;
// batches go out in key order (the batch index / the request's sequence number), one per credit.
//
// A mode `M` is a struct with
//   using State = ...;   // derives from StreamCore
//   using Item = ...;    // one unit of production (Action::produce)
//   static constexpr const char* kName;                              // "stream" / "patch stream" (logs)
//   static Action<Item> Pump(State&);                                // st.mu held
//   static void Perform(const std::shared_ptr<State>&, Action<Item>);
// and a reactor `class R : public StreamReactor<M, R>` with `absl::Status Handle(Request&)` (st.mu held) and
// `void Cleanup()` (OnDone, st.mu held, before the common slot and session cleanup).
#pragma once

#include <grpcpp/support/server_callback.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "augmentd/v1/batch.pb.h"
#include "server/delivery.h"
#include "server/log.h"
#include "server/request_limits.h"
#include "server/service.h"
#include "server/session.h"
#include "server/status.h"

namespace augmentd::stream {

using Request = v1::StreamBatchesRequest;
using Response = v1::StreamBatchesResponse;
using Reactor = grpc::ServerBidiReactor<Request, Response>;

// What a caller must do after releasing the state lock.
template <typename Item>
struct Action {
  Reactor* reactor = nullptr;
  bool write = false;
  bool finish = false;
  grpc::Status status;
  std::vector<Item> produce;  // to submit to the executor
};

// The state both modes keep; guarded by `mu`.
struct StreamCore {
  StreamCore(AugmentServiceImpl* s, uint64_t id) : service(s), stream_id(id) {}
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
  bool counted = false;        // holds one of the session's active_streams (AttachSession) until Finish is called
  std::optional<grpc::Status> error;  // finish with this once no write is outstanding
  std::shared_ptr<Session> session;
  std::shared_ptr<SlotRing> slots;  // the session's output slots (HOST_SHM / CUDA_IPC); null for inline
  const uint64_t stream_id;         // slot owner id
  uint64_t next_send = 0;           // key of the next batch to write
  uint32_t in_production = 0;
  uint64_t credits = 0;
  std::map<uint64_t, Response> ready;  // produced, by key, waiting for their turn and a credit (slot: Batch.lease)
  std::map<uint64_t, absl::Time> produced_at;
  std::optional<Response> control;  // written before any batch (StreamPatches' input_slots message)
  Response write_msg;
  uint64_t write_key = 0;
  std::string end_reason;
};

// Puts the StreamEnd message in write_msg.
inline void EndMessage(StreamCore& st, const std::string& reason) {
  st.write_msg.Clear();
  st.write_msg.mutable_end()->set_next_batch_index(st.next_send);
  st.write_msg.mutable_end()->set_reason(reason);
  st.end_reason = reason;
  st.end_written = true;
  st.write_is_batch = false;
  st.writing = true;
}

// Marks the stream finished and asks the Action's holder to Finish with `status`. The stream stops counting against
// max_streams_per_session here, before the client can see the status, not in OnDone (which gRPC runs later): a
// client that starts a new stream the moment one ended is never refused for the one that ended.
template <typename A>
void FinishWith(StreamCore& st, A& a, grpc::Status status) {
  st.finished = true;
  a.finish = true;
  a.status = std::move(status);
  if (st.counted) {
    st.session->active_streams.fetch_sub(1);
    st.counted = false;
  }
}

// Pump's first part: a finished stream does nothing; an error finishes once no write is outstanding; before the
// start message only a client that left is finished (INVALID_ARGUMENT). True when Pump must return `a` now.
template <typename A>
bool PumpPreamble(StreamCore& st, A& a) {
  a.reactor = st.reactor;
  if (st.finished) return true;
  if (st.error.has_value()) {
    if (!st.writing) FinishWith(st, a, *st.error);
    return true;
  }
  if (!st.started) {
    if (st.reads_done && !st.writing) {  // the client left without starting
      FinishWith(st, a,
                 grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "start: the stream ended before a start message"));
    }
    return true;
  }
  return false;
}

// Pump's writing part, when no write is outstanding: finish after the end message; else the control message;
// else the next batch in key order if a credit allows (its slot marked leased, sent_unix_ns stamped); else the end
// message with `end_reason()` (a const char*, nullptr: not yet). Then publishes the session's stream counters
// (`queued`: batches pending, in production and ready).
template <typename A, typename EndReason>
void PumpWrite(StreamCore& st, A& a, uint64_t queued, EndReason end_reason) {
  if (!st.writing) {
    auto next = st.ready.find(st.next_send);
    if (st.end_written) {
      FinishWith(st, a, grpc::Status::OK);
    } else if (st.control.has_value()) {
      st.write_msg = *std::move(st.control);
      st.control.reset();
      st.writing = true;
      st.write_is_batch = false;
      a.write = true;
    } else if (st.credits > 0 && next != st.ready.end() && !st.session_closed) {
      st.write_msg = std::move(next->second);
      st.ready.erase(next);
      if (st.slots != nullptr && st.write_msg.batch().has_lease()) st.slots->Lease(st.write_msg.batch().lease().slot());
      st.write_key = st.next_send++;
      st.write_msg.mutable_batch()->mutable_timing()->set_sent_unix_ns(absl::ToUnixNanos(absl::Now()));
      --st.credits;
      st.writing = true;
      st.write_is_batch = true;
      a.write = true;
    } else if (const char* reason = end_reason(); reason != nullptr) {
      EndMessage(st, reason);
      a.write = true;
    }
  }
  st.session->credits.store(static_cast<uint32_t>(std::min<uint64_t>(st.credits, UINT32_MAX)));
  st.session->queued_batches.store(static_cast<uint32_t>(std::min<uint64_t>(queued, UINT32_MAX)));
}

// Perform's last part: the write and the finish the Action asks for.
template <typename State, typename A>
void WriteOrFinish(const std::shared_ptr<State>& state, const A& a) {
  if (a.write) a.reactor->StartWrite(&state->write_msg);
  if (a.finish) a.reactor->Finish(a.status);
}

// Pumps `state` under its lock and performs the result (a slot freed elsewhere, the session closed, ...).
template <typename M>
void PumpAndPerform(const std::shared_ptr<typename M::State>& state) {
  decltype(M::Pump(*state)) a;
  {
    std::lock_guard<std::mutex> lock(state->mu);
    a = M::Pump(*state);
  }
  M::Perform(state, std::move(a));
}

// The start message's session hook-up (st.mu held): the owner's credential (server/session_lease.h: a stranger
// sees NOT_FOUND), `check_mode` (the session's mode fits this RPC), max_streams_per_session; then st.session /
// st.slots and st.started. Errors name `start.` fields.
inline absl::Status AttachSession(StreamCore& st, const v1::StreamStart& start,
                                  const std::function<absl::Status(const Session&)>& check_mode) {
  if (st.started) return absl::InvalidArgumentError("start: sent twice on one stream");
  if (absl::Status s = CheckRequestStrings(start); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("start.", s.message()));
  }
  absl::StatusOr<std::shared_ptr<Session>> session = st.service->OwnedSession(start.session_id(), start.session_token());
  if (!session.ok()) return absl::Status(session.status().code(), absl::StrCat("start.", session.status().message()));
  if (absl::Status s = check_mode(**session); !s.ok()) return s;
  const uint32_t max_streams = st.service->context().options.limits.max_streams_per_session;
  if ((*session)->active_streams.fetch_add(1) >= static_cast<int>(max_streams)) {
    (*session)->active_streams.fetch_sub(1);
    return absl::ResourceExhaustedError(absl::StrCat("max_streams_per_session: session ", start.session_id(),
                                                     " already has ", max_streams, " streams"));
  }
  st.session = *session;
  st.counted = true;
  st.slots = st.session->slots();
  st.started = true;
  st.credits = start.initial_credits();
  return absl::OkStatus();
}

// After AttachSession (st.mu held): a slot freed elsewhere (a release, another stream ending) pumps the stream on
// the executor; the session's close pumps it too (registered on the executor: the listener runs inline when the
// session is closed already, and takes st.mu).
template <typename M>
void WatchSlotsAndClose(const std::shared_ptr<typename M::State>& state) {
  using State = typename M::State;
  StreamCore& st = *state;
  AugmentServiceImpl* service = st.service;
  if (st.slots != nullptr) {
    std::weak_ptr<State> weak_waiter = state;
    st.slots->AddWaiter(st.stream_id, [weak_waiter, service, key = st.session->id()] {
      service->executor().Submit(key, [weak_waiter] {
        if (std::shared_ptr<State> s = weak_waiter.lock()) PumpAndPerform<M>(s);
      });
    });
  }
  std::weak_ptr<State> weak = state;
  service->executor().Submit(st.session->id(), [weak, session = st.session] {
    session->AddCloseListener([weak] {
      std::shared_ptr<State> s = weak.lock();
      if (s == nullptr) return;
      decltype(M::Pump(*s)) a;
      {
        std::lock_guard<std::mutex> lock(s->mu);
        s->session_closed = true;
        a = M::Pump(*s);
      }
      M::Perform(s, std::move(a));
    });
  });
}

// An executor task's hand-over of a produced batch (`proto`, made from the lease `lease` if any, production
// started at `start`) under key `key`: a failed batch ends the stream with its status ("batch <index>: ..."), a
// finished stream drops it; its slot goes back to the ring then. Pumps and performs.
template <typename M>
void DeliverProduced(const std::shared_ptr<typename M::State>& state, uint64_t key, uint64_t batch_index,
                     absl::Time start, const std::optional<v1::SlotLease>& lease, absl::StatusOr<v1::Batch> proto) {
  decltype(M::Pump(*state)) a;
  {
    std::lock_guard<std::mutex> lock(state->mu);
    --state->in_production;
    if ((state->finished || !proto.ok()) && lease.has_value() && state->slots != nullptr) {
      state->slots->Abandon(lease->slot());
    }
    if (state->finished) return;
    if (!proto.ok()) {
      LogWarning("session=", state->session->id(), " batch=", batch_index, " ", M::kName,
                 " failed: ", proto.status().ToString());
      if (!state->error.has_value()) {
        state->error = ToGrpcStatus(
            absl::Status(proto.status().code(), absl::StrCat("batch ", batch_index, ": ", proto.status().message())));
      }
    } else {
      *state->ready[key].mutable_batch() = *std::move(proto);
      state->produced_at[key] = start;
    }
    a = M::Pump(*state);
  }
  M::Perform(state, std::move(a));
}

// The gRPC reactor of both modes (see the file comment for what `Derived` adds).
template <typename M, typename Derived>
class StreamReactor : public Reactor {
 public:
  using State = typename M::State;

  void OnReadDone(bool ok) override {
    decltype(M::Pump(*state_)) a;
    bool read_more = false;
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      if (!ok) {
        state_->reads_done = true;
      } else if (absl::Status s = static_cast<Derived*>(this)->Handle(request_); !s.ok()) {
        if (!state_->error.has_value()) state_->error = ToGrpcStatus(s);
        state_->service->CountRejected();
        if (state_->session != nullptr) LogWarning("session=", state_->session->id(), " ", M::kName, ": ", s.ToString());
      } else {
        read_more = !state_->finished;
      }
      a = M::Pump(*state_);
    }
    // Inside a reaction OnDone cannot run, so StartRead is safe even if another thread finishes now.
    if (read_more) StartRead(&request_);
    M::Perform(state_, std::move(a));
  }

  void OnWriteDone(bool ok) override {
    decltype(M::Pump(*state_)) a;
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      StreamCore& st = *state_;
      st.writing = false;
      if (!ok) {
        if (!st.error.has_value()) st.error = grpc::Status(grpc::StatusCode::CANCELLED, "the client went away");
      } else if (st.write_is_batch) {
        absl::Time produced = absl::Now();
        if (auto it = st.produced_at.find(st.write_key); it != st.produced_at.end()) {
          produced = it->second;
          st.produced_at.erase(it);
        }
        const v1::Batch& b = st.write_msg.batch();
        st.session->RecordDelivered(b.batch_index(), st.write_msg.ByteSizeLong() + SlotPayloadBytes(b),
                                    absl::Now() - produced);
        st.service->CountBatch();
      }
      a = M::Pump(*state_);
    }
    M::Perform(state_, std::move(a));
  }

  void OnCancel() override {
    decltype(M::Pump(*state_)) a;
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      if (!state_->error.has_value()) state_->error = grpc::Status(grpc::StatusCode::CANCELLED, "cancelled");
      a = M::Pump(*state_);
    }
    M::Perform(state_, std::move(a));
  }

  void OnDone() override {
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      StreamCore& st = *state_;
      st.finished = true;
      st.reactor = nullptr;
      static_cast<Derived*>(this)->Cleanup();
      if (st.slots != nullptr) {
        // Batches produced but never sent, then every lease this stream's client still held (it finished, was
        // cancelled or vanished): their slots are free again. Tasks still producing abandon their own.
        for (const auto& [key, response] : st.ready) st.slots->Abandon(response.batch().lease().slot());
        const uint32_t reclaimed = st.slots->ReclaimOwner(st.stream_id);
        st.slots->RemoveWaiter(st.stream_id);
        if (reclaimed > 0) LogInfo("session=", st.session->id(), " ", M::kName, " done: reclaimed ", reclaimed,
                                   " leased slots");
      }
      st.ready.clear();
      if (st.session != nullptr) {
        if (st.counted) st.session->active_streams.fetch_sub(1);  // gRPC ended the call without our Finish
        st.counted = false;
        st.session->credits.store(0);
        LogInfo("session=", st.session->id(), " ", M::kName, " done: next_batch=", st.next_send,
                st.end_reason.empty() ? "" : " reason='" + st.end_reason + "'",
                st.error.has_value() ? " error='" + st.error->error_message() + "'" : "");
      }
    }
    delete static_cast<Derived*>(this);
  }

 protected:
  explicit StreamReactor(std::shared_ptr<State> state) : state_(std::move(state)) { state_->reactor = this; }
  // Called by Derived's constructor once it is complete.
  void Begin() { StartRead(&request_); }

  std::shared_ptr<State> state_;
  Request request_;
};

}  // namespace augmentd::stream
