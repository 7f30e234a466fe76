#include "server/service.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "server/status.h"

#ifndef AUGMENTD_VERSION
#error "AUGMENTD_VERSION must be defined by the build (server/CMakeLists.txt)"
#endif

namespace augmentd {

AugmentServiceImpl::AugmentServiceImpl(ServiceContext context)
    : context_(std::move(context)),
      registry_(context_.options.limits.max_sessions),
      leases_(
          context_.options.limits.session_idle_timeout,
          [this](const std::string& id) {
            absl::StatusOr<std::shared_ptr<Session>> s = registry_.Get(id);
            return s.ok() && (*s)->active_streams.load() > 0;
          },
          [this](const std::string& id) { (void)registry_.Close(id); }),
      executor_(std::make_unique<BatchExecutor>(context_.executor)) {}

AugmentServiceImpl::~AugmentServiceImpl() { leases_.Stop(); }

void AugmentServiceImpl::Shutdown() {
  StopServing();
  leases_.Stop();  // the drain closes every session itself
  registry_.CloseAll();
}

absl::StatusOr<std::shared_ptr<Session>> AugmentServiceImpl::OwnedSession(const std::string& id,
                                                                         const std::string& token) {
  absl::StatusOr<std::shared_ptr<Session>> session = registry_.Get(id);
  if (!session.ok()) return session.status();
  if (absl::Status owned = leases_.Check(id, token); !owned.ok()) return owned;
  return session;
}

absl::Status AugmentServiceImpl::Authorize(const grpc::CallbackServerContext& call) const {
  if (context_.auth == nullptr) return absl::OkStatus();
  return context_.auth->Check(call);
}

grpc::ServerUnaryReactor* AugmentServiceImpl::Reject(grpc::CallbackServerContext* context,
                                                     const absl::Status& status) {
  CountRejected();
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

TaskSpec AugmentServiceImpl::BatchTask(const Session& session, uint64_t extra_bytes) const {
  TaskSpec spec;
  spec.key = session.id();
  spec.device = session.settings().device.name;
  spec.weight = session.settings().weight;
  spec.bytes = session.settings().max_batch_bytes + extra_bytes;
  return spec;
}

const char* AugmentdVersion() { return AUGMENTD_VERSION; }

std::string BuildDescription(bool cuda_built) {
  return absl::StrCat("augmentd ", AUGMENTD_VERSION, " (", AUGMENTD_BUILD_TYPE, ", gcc ", __VERSION__, ", CUDA ",
                      cuda_built ? "on" : "off", ")");
}

}  // namespace augmentd
