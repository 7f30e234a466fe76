// augment/testing/kind_list.h — the rows of augment/transforms/kinds.inc as data (test-only, header-only), so the
// tests that used to pin kind lists (CPU-only kinds, 2D coverage, GetServerInfo's backends) read them from the one
// list and check the registry, the CUDA backends and the server against it.
//
//   for (const testing::KindRow& r : testing::kKindRows) if (r.cpu_only()) EXPECT_EQ(CudaBackendOf(r.kind), nullptr);
#pragma once

#include <string_view>

#include "augment/transform.h"

namespace augmentd::testing {

struct KindRow {
  TransformKind kind;
  std::string_view name;  // snake_name
  std::string_view cuda;  // CUDA, CUFFT, EXECUTOR or CPU_ONLY
  std::string_view lift;  // AS_DRAWN, LIFT or NO_2D
  bool cpu_only() const { return cuda == "CPU_ONLY"; }
  // Whether the CUDA engine takes 2D samples of this kind.
  bool cuda_2d() const { return !cpu_only() && lift != "NO_2D"; }
};

inline constexpr KindRow kKindRows[] = {
#define AUGMENTD_KIND(camel, snake, caps, cuda, lift) {TransformKind::k##camel, #snake, #cuda, #lift},
#include "augment/transforms/kinds.inc"
#undef AUGMENTD_KIND
};

}  // namespace augmentd::testing
