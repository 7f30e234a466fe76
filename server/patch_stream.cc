#include "server/patch_stream.h"

#include <algorithm>
#include <cstring>
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "server/adapter.h"
#include "server/delivery.h"
#include "server/input_slots.h"
#include "server/log.h"
#include "server/service.h"
#include "server/session.h"
#include "server/socket_buffers.h"
#include "server/status.h"
#include "server/stream_core.h"

namespace augmentd {
namespace {

using stream::Request;
using stream::Response;

// One patches message, resolved on the gRPC thread (cheap: no data access) and augmented on the executor.
struct PendingPatch {
  uint64_t seq = 0;                                // request order = delivery order (the stream's key)
  std::shared_ptr<v1::AugmentRequest> request;     // owns the inline bytes the views point into
  InputTensor image, seg;
  std::optional<uint32_t> input_slot;              // the server input slot handed over, if any
  int64_t received_unix_ns = 0;                    // BatchTiming.received_unix_ns
};
using PendingPtr = std::shared_ptr<PendingPatch>;
using PatchItem = std::pair<PendingPtr, std::optional<v1::SlotLease>>;  // (request, its output slot)
using Action = stream::Action<PatchItem>;

std::atomic<uint64_t> next_stream_id{uint64_t{1} << 62};  // apart from StreamBatches' owner ids

struct PatchState : stream::StreamCore {
  explicit PatchState(AugmentServiceImpl* s) : StreamCore(s, next_stream_id.fetch_add(1)) {}
  std::shared_ptr<InputSlots> inputs;     // server input slots; null when the session has none
  uint64_t next_seq = 0;
  std::deque<PendingPtr> pending;         // waiting for a production place / an output slot
  // A chunked inline batch (AugmentRequest.chunked_bytes) whose PatchChunk messages are still arriving.
  PendingPtr assembling;
  uint64_t chunk_total = 0, chunk_received = 0, chunk_image_bytes = 0;
};

struct PatchMode {
  using State = PatchState;
  using Item = PatchItem;
  static constexpr const char* kName = "patch stream";
  static Action Pump(PatchState& st);
  static void Perform(const std::shared_ptr<PatchState>& state, Action a);
};

// Decides the next steps; st.mu held.
Action PatchMode::Pump(PatchState& st) {
  Action a;
  if (stream::PumpPreamble(st, a)) return a;
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
  const bool idle = st.pending.empty() && st.in_production == 0 && st.ready.empty();
  stream::PumpWrite(st, a, st.ready.size() + st.in_production + st.pending.size(), [&st, idle]() -> const char* {
    if (st.session_closed) return "session closed";
    if (st.reads_done && (st.credits == 0 || idle)) return "client finished";
    return nullptr;
  });
  return a;
}

// Gives a request's input slot back to its stream (or frees it, when the stream is gone).
void ReturnInput(const PatchState& st, const PendingPatch& p) {
  if (p.input_slot.has_value() && st.inputs != nullptr) st.inputs->Renew(*p.input_slot);
}

// Executor thread: augment one request into its output slot (or for inline delivery) and hand it to the stream.
void ProduceTask(const std::shared_ptr<PatchState>& state, const PendingPtr& p,
                 const std::optional<v1::SlotLease>& lease, const WorkerInfo& worker) {
  std::shared_ptr<Session> session;
  {
    std::lock_guard<std::mutex> lock(state->mu);
    if (state->finished || state->session_closed) {
      --state->in_production;
      if (lease.has_value() && state->slots != nullptr) state->slots->Abandon(lease->slot());
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
  stream::DeliverProduced<PatchMode>(state, p->seq, index, start, lease, std::move(proto));
}

void PatchMode::Perform(const std::shared_ptr<PatchState>& state, Action a) {
  if (!a.produce.empty()) {
    std::shared_ptr<Session> session;
    {
      std::lock_guard<std::mutex> lock(state->mu);
      session = state->session;
    }
    for (auto& [p, lease] : a.produce) {
      // Weighted fair queuing on the session's device pool; bounded by the prefetch depth, so never refused.
      state->service->executor().Submit(
          state->service->BatchTask(*session, p->request->ByteSizeLong() + p->request->chunked_bytes()),
          [state, p = p, lease = lease](const WorkerInfo& w) { ProduceTask(state, p, lease, w); });
    }
  }
  stream::WriteOrFinish(state, a);
}

class PatchStream final : public stream::StreamReactor<PatchMode, PatchStream> {
 public:
  explicit PatchStream(AugmentServiceImpl* service) : StreamReactor(std::make_shared<PatchState>(service)) { Begin(); }

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
      case Request::kChunk:
        return Chunk(r.chunk());
      default:
        return absl::InvalidArgumentError("msg: empty request (set start, patches, chunk, credit or release)");
    }
  }

  // OnDone, st.mu held: requests not yet produced give their input slots back, the stream's leases are freed.
  void Cleanup() {
    PatchState& st = *state_;
    for (const PendingPtr& p : st.pending) ReturnInput(st, *p);
    st.pending.clear();
    st.assembling.reset();  // a chunked batch whose last chunk never came
    if (st.inputs != nullptr) st.inputs->ReclaimOwner(st.stream_id);  // in-use ones are freed by their task
  }

 private:
  absl::Status Start(const v1::StreamStart& start) {
    PatchState& st = *state_;
    if (absl::Status s = stream::AttachSession(st, start, [&start](const Session& session) {
          return !session.dataset_mode()
                     ? absl::OkStatus()
                     : absl::FailedPreconditionError(absl::StrCat("start.session_id: session ", start.session_id(),
                                                                  " is in dataset mode: use StreamBatches"));
        });
        !s.ok()) {
      return s;
    }
    st.inputs = st.session->input_slots();
    // A same-host client's connection gets larger kernel buffers for its inline batches (server/socket_buffers.h).
    const ServerOptions& options = st.service->context().options;
    if (options.unix_socket_buffer_bytes > 0) {
      WidenUnixConnections(UnixListenPaths(options.listen),
                           static_cast<int>(std::min<uint64_t>(options.unix_socket_buffer_bytes, INT32_MAX / 2)));
    }
    stream::WatchSlotsAndClose<PatchMode>(state_);
    if (st.inputs != nullptr) {
      st.control.emplace();
      st.control->mutable_input_slots();  // sent even when empty (another stream holds every slot)
      for (const v1::SlotLease& lease : st.inputs->LeaseFree(st.stream_id)) {
        *st.control->mutable_input_slots()->add_leases() = lease;
      }
    }
    LogInfo("session=", st.session->id(), " patch stream start: credits=", st.credits,
            " input_slots=", st.control.has_value() ? st.control->input_slots().leases_size() : 0);
    return absl::OkStatus();
  }

  absl::Status Patches(v1::AugmentRequest* message) {
    PatchState& st = *state_;
    if (!st.started) return absl::InvalidArgumentError("patches: the first message must be start");
    if (st.assembling != nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("patches: batch ", st.assembling->request->batch_index(),
                                                     " is still incomplete (", st.chunk_received, " of ",
                                                     st.chunk_total, " chunked bytes arrived): send its chunks first"));
    }
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
    if (r.chunked_bytes() > 0) return StartChunked(std::move(p));
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

  // A patches message with chunked_bytes: both tensors inline and empty, their bytes come in PatchChunk messages
  // into buffers of their exact sizes (no zero fill); the batch is queued when the last byte arrived.
  absl::Status StartChunked(PendingPtr p) {
    PatchState& st = *state_;
    const v1::AugmentRequest& r = *p->request;
    if (r.has_input_slot()) {
      return absl::InvalidArgumentError(
          "patches.chunked_bytes: chunked inline bytes and patches.input_slot exclude each other");
    }
    uint64_t sizes[2] = {0, 0};
    InputTensor* dst[2] = {&p->image, &p->seg};
    const v1::Tensor* tensors[2] = {&r.image(), &r.segmentation()};
    const char* fields[2] = {"patches.image", "patches.segmentation"};
    for (int i = 0; i < 2; ++i) {
      const v1::Tensor& t = *tensors[i];
      if (t.storage_case() == v1::Tensor::kHostShm || t.storage_case() == v1::Tensor::kCudaIpc ||
          (t.storage_case() == v1::Tensor::kInlineData && !t.inline_data().empty())) {
        return absl::InvalidArgumentError(absl::StrCat(
            fields[i], ": must be inline and empty when patches.chunked_bytes is set (its bytes come in chunk messages)"));
      }
      absl::StatusOr<TensorView> view = TensorLayoutFromProto(t, fields[i], &sizes[i]);
      if (!view.ok()) return view.status();
      dst[i]->view = *view;
    }
    const uint64_t total = sizes[0] + sizes[1];
    if (r.chunked_bytes() != total) {
      return absl::InvalidArgumentError(absl::StrCat("patches.chunked_bytes: ", r.chunked_bytes(), ", but image (",
                                                     sizes[0], ") and segmentation (", sizes[1], ") take ", total,
                                                     " bytes"));
    }
    // Chunks bypass gRPC's per-message receive limit: the batch as a whole stays under it, as one message would.
    const uint64_t limit = st.service->context().options.limits.max_request_bytes;
    if (limit > 0 && total > limit) {
      return absl::ResourceExhaustedError(absl::StrCat("max_request_bytes: patches.chunked_bytes ", total,
                                                       " exceeds the server's limit of ", limit, " bytes"));
    }
    for (int i = 0; i < 2; ++i) {
      dst[i]->owned.reset(new (std::nothrow) uint8_t[sizes[i] == 0 ? 1 : sizes[i]]);
      if (dst[i]->owned == nullptr) {
        return absl::ResourceExhaustedError(absl::StrCat(fields[i], ": cannot allocate ", sizes[i], " bytes"));
      }
      dst[i]->view.data = dst[i]->owned.get();
    }
    st.assembling = std::move(p);
    st.chunk_total = total;
    st.chunk_received = 0;
    st.chunk_image_bytes = sizes[0];
    return absl::OkStatus();
  }

  // One PatchChunk: copied straight into the assembling batch's buffers (image bytes, then segmentation bytes).
  absl::Status Chunk(const v1::PatchChunk& c) {
    PatchState& st = *state_;
    if (!st.started) return absl::InvalidArgumentError("chunk: the first message must be start");
    if (st.assembling == nullptr) {
      return absl::InvalidArgumentError(
          "chunk: no batch is waiting for chunks (send patches with chunked_bytes first; or this chunk is one too many)");
    }
    if (c.offset() != st.chunk_received) {
      return absl::InvalidArgumentError(absl::StrCat("chunk.offset: ", c.offset(), ", but ", st.chunk_received,
                                                     " bytes of batch ", st.assembling->request->batch_index(),
                                                     " arrived (chunks come in order: one is missing or repeated)"));
    }
    const uint64_t n = c.data().size();
    if (n == 0) return absl::InvalidArgumentError("chunk.data: empty");
    if (n > st.chunk_total - st.chunk_received) {
      return absl::InvalidArgumentError(absl::StrCat("chunk.data: ", n, " bytes at offset ", c.offset(),
                                                     " run past patches.chunked_bytes ", st.chunk_total));
    }
    PendingPatch& p = *st.assembling;
    const uint64_t image_bytes = st.chunk_image_bytes;
    const uint8_t* src = reinterpret_cast<const uint8_t*>(c.data().data());
    uint64_t at = c.offset();
    const uint64_t end = at + n;
    if (at < image_bytes) {
      const uint64_t k = std::min(end, image_bytes) - at;
      std::memcpy(p.image.owned.get() + at, src, k);
      src += k;
      at += k;
    }
    if (at < end) std::memcpy(p.seg.owned.get() + (at - image_bytes), src, end - at);
    st.chunk_received = end;
    if (st.chunk_received < st.chunk_total) return absl::OkStatus();
    PendingPtr done = std::move(st.assembling);
    st.assembling.reset();
    done->received_unix_ns = absl::ToUnixNanos(absl::Now());  // the batch is complete only now
    done->seq = st.next_seq++;
    st.pending.push_back(std::move(done));
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
};

}  // namespace

stream::Reactor* NewPatchStream(AugmentServiceImpl* service) { return new PatchStream(service); }

}  // namespace augmentd
