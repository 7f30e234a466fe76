#include "server/service.h"

#include <utility>

#include "absl/strings/str_cat.h"

#ifndef AUGMENTD_VERSION
#error "AUGMENTD_VERSION must be defined by the build (server/CMakeLists.txt)"
#endif

namespace augmentd {

AugmentServiceImpl::AugmentServiceImpl(ServiceContext context) : context_(std::move(context)) {}

const char* AugmentdVersion() { return AUGMENTD_VERSION; }

std::string BuildDescription(bool cuda_built) {
  return absl::StrCat("augmentd ", AUGMENTD_VERSION, " (", AUGMENTD_BUILD_TYPE, ", gcc ", __VERSION__, ", CUDA ",
                      cuda_built ? "on" : "off", ")");
}

}  // namespace augmentd
