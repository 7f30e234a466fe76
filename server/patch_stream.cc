#include "server/patch_stream.h"

#include <atomic>
#include <cstdint>
#include <deque>
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
#include "server/input_slots.h"
#include "server/log.h"
#include "server/service.h"
#include "server/session.h"
#include "server/status.h"

namespace augmentd {
namespace {

using Request = v1::StreamBatchesRequest;
using Response = v1::StreamBatchesResponse;
using Reactor = grpc::ServerBidiReactor<Request, Response>;

// One patches message, resolved on the gRPC thread (cheap: no data access) and augmented on the executor.
struct PendingPatch {
  uint64_t seq = 0;                                // request order = delivery order
  std::shared_ptr<v1::AugmentRequest> request;     // owns the inline bytes the views point into
  InputTensor image, seg;
  std::optional<uint32_t> input_slot;              // the server input slot handed over, if any
  int64_t received_unix_ns = 0;                    // BatchTiming.received_unix_ns
};
using PendingPtr = std::shared_ptr<PendingPatch>;

struct Action {
  Reactor* reactor = nullptr;
  bool write = false;
  bool finish = false;
  grpc::Status status;
  std::vector<std::pair<PendingPtr, std::optional<v1::SlotLease>>> produce;  // (request, its output slot)
};

std::atomic<uint64_t> next_stream_id{uint64_t{1} << 62};  // apart from StreamBatches' owner ids

struct PatchState {
  explicit PatchState(AugmentServiceImpl* s) : service(s) {}
  AugmentServiceImpl* const service;

  std::mutex mu;
  Reactor* reactor = nullptr;  // valid until `finished` is set
  bool finished = false, writing = false, started = false, reads_done = false, session_closed = false;
  bool end_written = false, write_is_batch = false;
  std::optional<grpc::Status> error;
  std::shared_ptr<Session> session;
  std::shared_ptr<SlotRing> slots;        // output slots; null for inline delivery
  std::shared_ptr<InputSlots> inputs;     // server input slots; null when the session has none
  const uint64_t stream_id = next_stream_id.fetch_add(1);
  uint64_t next_seq = 0, next_send = 0;
  uint32_t in_production = 0;
  uint64_t credits = 0;
  std::deque<PendingPtr> pending;         // waiting for a production place / an output slot
  std::map<uint64_t, Response> ready;     // produced, by seq
  std::map<uint64_t, absl::Time> produced_at;
  std::optional<Response> control;        // the input_slots message, written first
  Response write_msg;
  uint64_t write_seq = 0;
  std::string end_reason;
};

void EndMessage(PatchState& st, const std::string& reason) {
  st.write_msg.Clear();
  st.write_msg.mutable_end()->set_next_batch_index(st.next_send);
  st.write_msg.mutable_end()->set_reason(reason);
  st.end_reason = reason;
  st.end_written = true;
  st.write_is_batch = false;
  st.writing = true;
}

// Decides the next steps; st.mu held.
Action Pump(PatchState& st) {
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
    if (st.reads_done && !st.writing) {
      st.finished = true;
      a.finish = true;
      a.status = grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "start: the stream ended before a start message");
    }
    return a;
  }
  if (!st.session_closed) {
    while (!st.pending.empty() && st.in_production < st.session->settings().prefetch_depth) {
      std::optional<v1::SlotLease> lease;
      if (st.slots != nullptr) {
        lease = st.slots->Acquire(st.stream_id);
        if (!lease.has_value()) break;  // every output slot is leased or in use: wait for a release
      }
      a.produce.emplace_back(std::move(st.pending.front()), std::move(lease));
      st.pending.pop_front();
      ++st.in_production;
    }
  }
  if (!st.writing) {
    auto next = st.ready.find(st.next_send);
    const bool idle = st.pending.empty() && st.in_production == 0 && st.ready.empty();
    if (st.end_written) {
      st.finished = true;
      a.finish = true;
      a.status = grpc::Status::OK;
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
      st.write_seq = st.next_send++;
      st.write_msg.mutable_batch()->mutable_timing()->set_sent_unix_ns(absl::ToUnixNanos(absl::Now()));
      --st.credits;
      st.writing = true;
      st.write_is_batch = true;
      a.write = true;
    } else if (st.session_closed) {
      EndMessage(st, "session closed");
      a.write = true;
    } else if (st.reads_done && (st.credits == 0 || idle)) {
      EndMessage(st, "client finished");
      a.write = true;
    }
  }
  st.session->credits.store(static_cast<uint32_t>(std::min<uint64_t>(st.credits, UINT32_MAX)));
  st.session->queued_batches.store(
      static_cast<uint32_t>(st.ready.size() + st.in_production + st.pending.size()));
  return a;
}

void Perform(const std::shared_ptr<PatchState>& state, Action a);

// Gives a request's input slot back to its stream (or frees it, when the stream is gone).
void ReturnInput(const PatchState& st, const PendingPatch& p) {
  if (p.input_slot.has_value() && st.inputs != nullptr) st.inputs->Renew(*p.input_slot);
}

// Executor thread: augment one request into its output slot (or for inline delivery) and hand it to the stream.
void ProduceTask(const std::shared_ptr<PatchState>& state, const PendingPtr& p,
                 const std::optional<v1::SlotLease>& lease, const WorkerInfo& worker) {
  std::shared_ptr<Session> session;
  auto abandon = [&] {
    if (lease.has_value() && state->slots != nullptr) state->slots->Abandon(lease->slot());
  };
  {
    std::lock_guard<std::mutex> lock(state->mu);
    if (state->finished || state->session_closed) {
      --state->in_production;
      abandon();
      ReturnInput(*state, *p);
      return;
    }
    session = state->session;
  }
  const absl::Time start = absl::Now();
  const int64_t started_unix_ns = absl::ToUnixNanos(start);
  const v1::SlotLease* slot = lease.has_value() ? &*lease : nullptr;
  const uint64_t index = p->request->batch_index();
  absl::StatusOr<ProducedBatch> batch = session->AugmentStreamPatches(index, p->image, p->seg, slot);
  // The engine has read the inputs (the CPU engine returned; a CUDA worker synchronised its stream): the input slot
  // goes back to the client with this batch.
  std::optional<v1::SlotLease> input_lease;
  if (p->input_slot.has_value() && state->inputs != nullptr) input_lease = state->inputs->Renew(*p->input_slot);
  if (batch.ok()) {
    state->service->metrics().ObserveBatch(session->id(), worker.queued, absl::Microseconds(batch->load_us),
                                           absl::Microseconds(batch->compute_us));
    session->RecordProduced(absl::Microseconds(batch->load_us), absl::Microseconds(batch->compute_us));
  }
  absl::StatusOr<v1::Batch> proto = batch.ok() ? session->MakeBatchProto(*batch, slot) : batch.status();
  if (proto.ok()) {
    proto->mutable_timing()->set_queue_us(absl::ToInt64Microseconds(worker.queued));
    proto->mutable_timing()->set_received_unix_ns(p->received_unix_ns);
    proto->mutable_timing()->set_started_unix_ns(started_unix_ns);
    if (input_lease.has_value()) *proto->mutable_input_lease() = *input_lease;
  }
  Action a;
  {
    std::lock_guard<std::mutex> lock(state->mu);
    --state->in_production;
    if (state->finished || !proto.ok()) abandon();
    if (state->finished) return;
    if (!proto.ok()) {
      LogWarning("session=", session->id(), " batch=", index, " patches failed: ", proto.status().ToString());
      if (!state->error.has_value()) {
        state->error = ToGrpcStatus(
            absl::Status(proto.status().code(), absl::StrCat("batch ", index, ": ", proto.status().message())));
      }
    } else {
      *state->ready[p->seq].mutable_batch() = *std::move(proto);
      state->produced_at[p->seq] = start;
    }
    a = Pump(*state);
  }
  Perform(state, std::move(a));
}

void Perform(const std::shared_ptr<PatchState>& state, Action a) {
  if (!a.produce.empty()) {
    std::shared_ptr<Session> session;
    {
      std::lock_guard<std::mutex> lock(state->mu);
      session = state->session;
    }
    for (auto& [p, lease] : a.produce) {
      // Weighted fair queuing on the session's device pool; bounded by the prefetch depth, so never refused.
      state->service->executor().Submit(
          state->service->BatchTask(*session, p->request->ByteSizeLong()),
          [state, p = p, lease = lease](const WorkerInfo& w) { ProduceTask(state, p, lease, w); });
    }
  }
  if (a.write) a.reactor->StartWrite(&state->write_msg);
  if (a.finish) a.reactor->Finish(a.status);
}

class PatchStream final : public Reactor {
 public:
  explicit PatchStream(AugmentServiceImpl* service) : state_(std::make_shared<PatchState>(service)) {
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
        if (state_->session != nullptr) LogWarning("session=", state_->session->id(), " StreamPatches: ", s.ToString());
      } else {
        read_more = !state_->finished;
      }
      a = Pump(*state_);
    }
    if (read_more) StartRead(&request_);
    Perform(state_, std::move(a));
  }

  void OnWriteDone(bool ok) override {
    Action a;
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      state_->writing = false;
      if (!ok) {
        if (!state_->error.has_value()) state_->error = grpc::Status(grpc::StatusCode::CANCELLED, "the client went away");
      } else if (state_->write_is_batch) {
        absl::Time produced = absl::Now();
        if (auto it = state_->produced_at.find(state_->write_seq); it != state_->produced_at.end()) {
          produced = it->second;
          state_->produced_at.erase(it);
        }
        const v1::Batch& b = state_->write_msg.batch();
        state_->session->RecordDelivered(b.batch_index(), state_->write_msg.ByteSizeLong() + SlotPayloadBytes(b),
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
      PatchState& st = *state_;
      st.finished = true;
      st.reactor = nullptr;
      for (const PendingPtr& p : st.pending) ReturnInput(st, *p);
      st.pending.clear();
      if (st.slots != nullptr) {
        for (const auto& [seq, response] : st.ready) st.slots->Abandon(response.batch().lease().slot());
        st.slots->ReclaimOwner(st.stream_id);
        st.slots->RemoveWaiter(st.stream_id);
      }
      if (st.inputs != nullptr) st.inputs->ReclaimOwner(st.stream_id);  // in-use ones are freed by their task
      st.ready.clear();
      if (st.session != nullptr) {
        st.session->active_streams.fetch_sub(1);
        st.session->credits.store(0);
        LogInfo("session=", st.session->id(), " patch stream done: batches=", st.next_send,
                st.end_reason.empty() ? "" : " reason='" + st.end_reason + "'",
                st.error.has_value() ? " error='" + st.error->error_message() + "'" : "");
      }
    }
    delete this;
  }

 private:
  absl::Status Start(const v1::StreamStart& start) {
    PatchState& st = *state_;
    if (st.started) return absl::InvalidArgumentError("start: sent twice on one stream");
    // The owner's credential, as StreamBatches checks it (server/session_lease.h): a stranger sees NOT_FOUND.
    absl::StatusOr<std::shared_ptr<Session>> session =
        st.service->OwnedSession(start.session_id(), start.session_token());
    if (!session.ok()) return absl::Status(session.status().code(), absl::StrCat("start.", session.status().message()));
    if ((*session)->dataset_mode()) {
      return absl::FailedPreconditionError(absl::StrCat("start.session_id: session ", start.session_id(),
                                                        " is in dataset mode: use StreamBatches"));
    }
    const uint32_t max_streams = st.service->context().options.limits.max_streams_per_session;
    if ((*session)->active_streams.fetch_add(1) >= static_cast<int>(max_streams)) {
      (*session)->active_streams.fetch_sub(1);
      return absl::ResourceExhaustedError(absl::StrCat("max_streams_per_session: session ", start.session_id(),
                                                       " already has ", max_streams, " streams"));
    }
    st.session = *session;
    st.slots = st.session->slots();
    st.inputs = st.session->input_slots();
    st.started = true;
    st.credits = start.initial_credits();
    if (st.slots != nullptr) {
      std::weak_ptr<PatchState> weak_waiter = state_;
      AugmentServiceImpl* service = st.service;
      st.slots->AddWaiter(st.stream_id, [weak_waiter, service, key = st.session->id()] {
        service->executor().Submit(key, [weak_waiter] {
          std::shared_ptr<PatchState> state = weak_waiter.lock();
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
    if (st.inputs != nullptr) {
      st.control.emplace();
      st.control->mutable_input_slots();  // sent even when empty (another stream holds every slot)
      for (const v1::SlotLease& lease : st.inputs->LeaseFree(st.stream_id)) {
        *st.control->mutable_input_slots()->add_leases() = lease;
      }
    }
    LogInfo("session=", st.session->id(), " patch stream start: credits=", st.credits,
            " input_slots=", st.control.has_value() ? st.control->input_slots().leases_size() : 0);
    std::weak_ptr<PatchState> weak = state_;
    st.service->executor().Submit(st.session->id(), [weak, session = st.session] {
      session->AddCloseListener([weak] {
        std::shared_ptr<PatchState> state = weak.lock();
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

  absl::Status Patches(v1::AugmentRequest* message) {
    PatchState& st = *state_;
    if (!st.started) return absl::InvalidArgumentError("patches: the first message must be start");
    const uint32_t limit = st.service->context().options.limits.max_inflight_batches_per_session;
    const size_t outstanding = st.pending.size() + st.in_production + st.ready.size();
    if (limit > 0 && outstanding >= limit) {
      return absl::ResourceExhaustedError(absl::StrCat("max_inflight_batches_per_session: ", outstanding,
                                                       " patch batches of this stream wait already (limit ", limit,
                                                       "); wait for batches before sending more"));
    }
    auto p = std::make_shared<PendingPatch>();
    p->received_unix_ns = absl::ToUnixNanos(absl::Now());
    p->request = std::make_shared<v1::AugmentRequest>();
    p->request->Swap(message);  // O(1): the inline bytes move, not copied
    const v1::AugmentRequest& r = *p->request;
    if (!r.session_id().empty() && r.session_id() != st.session->id()) {
      return absl::InvalidArgumentError(absl::StrCat("patches.session_id: '", r.session_id(),
                                                     "' is not this stream's session"));
    }
    if (r.has_input_slot()) {
      if (st.inputs == nullptr) {
        return absl::FailedPreconditionError(
            "patches.input_slot: the session has no input slots (open it with config.patch.input_slots > 0)");
      }
      absl::StatusOr<SlotBuffer*> buffer = st.inputs->Take(st.stream_id, r.input_slot(), "patches.input_slot");
      if (!buffer.ok()) return buffer.status();
      p->input_slot = r.input_slot().slot();
      const std::string region = InputSlotRegionName(*p->input_slot);
      absl::StatusOr<InputTensor> image = ResolveSlotTensor(r.image(), "patches.image", st.inputs->kind(), region, **buffer);
      absl::StatusOr<InputTensor> seg =
          image.ok() ? ResolveSlotTensor(r.segmentation(), "patches.segmentation", st.inputs->kind(), region, **buffer)
                     : image.status();
      if (!seg.ok()) {
        ReturnInput(st, *p);
        return seg.status();
      }
      p->image = *std::move(image);
      p->seg = *std::move(seg);
    } else {
      absl::StatusOr<InputTensor> image = ResolveInputTensor(r.image(), "patches.image", st.session->input_regions());
      if (!image.ok()) return image.status();
      absl::StatusOr<InputTensor> seg =
          ResolveInputTensor(r.segmentation(), "patches.segmentation", st.session->input_regions());
      if (!seg.ok()) return seg.status();
      p->image = *std::move(image);
      p->seg = *std::move(seg);
    }
    p->seq = st.next_seq++;
    st.pending.push_back(std::move(p));
    return absl::OkStatus();
  }

  // Output leases back from the client; unlike StreamBatches a lease this stream does not hold is an error here.
  absl::Status ReleaseLeases(const google::protobuf::RepeatedPtrField<v1::SlotLease>& leases, const char* field) {
    if (state_->slots == nullptr) return absl::OkStatus();  // inline delivery: nothing is leased
    for (int i = 0; i < leases.size(); ++i) {
      if (!state_->slots->Release(state_->stream_id, leases[i])) {
        return absl::FailedPreconditionError(absl::StrCat(
            field, "[", i, "]: output slot ", leases[i].slot(), " generation ", leases[i].generation(),
            " is not leased to this stream (released twice, or a lease of another stream or session)"));
      }
    }
    return absl::OkStatus();
  }

  absl::Status Handle(Request& r) {
    switch (r.msg_case()) {
      case Request::kStart:
        return Start(r.start());
      case Request::kCredit:
        if (!state_->started) return absl::InvalidArgumentError("credit: the first message must be start");
        state_->credits = std::min<uint64_t>(state_->credits + r.credit().credits(), uint64_t{1} << 32);
        return ReleaseLeases(r.credit().releases(), "credit.releases");
      case Request::kRelease:
        if (!state_->started) return absl::InvalidArgumentError("release: the first message must be start");
        return ReleaseLeases(r.release().leases(), "release.leases");
      case Request::kPatches:
        return Patches(r.mutable_patches());
      default:
        return absl::InvalidArgumentError("msg: empty request (set start, patches, credit or release)");
    }
  }

  std::shared_ptr<PatchState> state_;
  Request request_;
};

}  // namespace

Reactor* NewPatchStream(AugmentServiceImpl* service) { return new PatchStream(service); }

}  // namespace augmentd
