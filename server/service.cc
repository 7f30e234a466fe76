#include "server/service.h"

#include <algorithm>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"

#ifndef AUGMENTD_VERSION
#error "AUGMENTD_VERSION must be defined by the build (server/CMakeLists.txt)"
#endif

namespace augmentd {

namespace {
int BatchWorkers(const ServerOptions& options) {
  const int hw = std::max(1u, std::thread::hardware_concurrency());
  return options.batch_workers > 0 ? options.batch_workers : std::min(hw, 8);
}
}  // namespace

AugmentServiceImpl::AugmentServiceImpl(ServiceContext context)
    : context_(std::move(context)),
      registry_(context_.options.limits.max_sessions),
      executor_(std::make_unique<BatchExecutor>(BatchWorkers(context_.options))) {}

void AugmentServiceImpl::Shutdown() { registry_.CloseAll(); }

const char* AugmentdVersion() { return AUGMENTD_VERSION; }

std::string BuildDescription(bool cuda_built) {
  return absl::StrCat("augmentd ", AUGMENTD_VERSION, " (", AUGMENTD_BUILD_TYPE, ", gcc ", __VERSION__, ", CUDA ",
                      cuda_built ? "on" : "off", ")");
}

}  // namespace augmentd
