// augment/cuda/backends.cc — the CUDA side of the registry, expanded from augment/transforms/kinds.inc (its CUDA and
// LIFT columns; the CPU side is augment/registry.cc). Compiled only in CUDA builds; augment/cuda/engine_nocuda.cc
// answers nullptr otherwise.
//
// Per kind: CUDA / CUFFT -> its chain stage factory Make<Camel>Stage (declared here, defined in its folder's
// <name>_cuda.cc or the stage files of augment/cuda/); EXECUTOR -> no factory (spatial and downsample_seg_for_ds are
// run by the chain executor); CPU_ONLY -> no backend (CudaBackendOf answers nullptr, the CUDA engine refuses the kind
// with UNIMPLEMENTED and GetServerInfo reports cuda=false). LIFT -> Lift2D<Camel> (cuda/chain_2d.cc), AS_DRAWN ->
// nullptr (2D parameters used as drawn), NO_2D -> 2D samples answer UNIMPLEMENTED.
#include <cstddef>
#include <memory>

#include "augment/cuda/backend.h"

namespace augmentd {

using Lifted = absl::StatusOr<std::unique_ptr<TransformParams>>;

// The factories and lifts the list names (Make<Camel>Stage, Lift2D<Camel>).
#define AUGMENTD_DECLARE_STAGE_CUDA(camel) CudaStageOrError Make##camel##Stage(const Transform& t, size_t index);
#define AUGMENTD_DECLARE_STAGE_CUFFT(camel) AUGMENTD_DECLARE_STAGE_CUDA(camel)
#define AUGMENTD_DECLARE_STAGE_EXECUTOR(camel)
#define AUGMENTD_DECLARE_STAGE_CPU_ONLY(camel)
#define AUGMENTD_DECLARE_LIFT_LIFT(camel) Lifted Lift2D##camel(const TransformParams& p);
#define AUGMENTD_DECLARE_LIFT_AS_DRAWN(camel)
#define AUGMENTD_DECLARE_LIFT_NO_2D(camel)
#define AUGMENTD_KIND(camel, snake, caps, cuda, lift) \
  AUGMENTD_DECLARE_STAGE_##cuda(camel) AUGMENTD_DECLARE_LIFT_##lift(camel)
#include "augment/transforms/kinds.inc"
#undef AUGMENTD_KIND

namespace {
#if defined(AUGMENTD_HAVE_CUFFT)
constexpr bool kCufft = true;
#else
constexpr bool kCufft = false;  // the k-space stages answer UNIMPLEMENTED naming cuFFT
#endif

#define AUGMENTD_STAGE_CUDA(camel) &Make##camel##Stage
#define AUGMENTD_STAGE_CUFFT(camel) &Make##camel##Stage
#define AUGMENTD_STAGE_EXECUTOR(camel) nullptr
#define AUGMENTD_STAGE_CPU_ONLY(camel) nullptr
#define AUGMENTD_AVAILABLE_CUDA true
#define AUGMENTD_AVAILABLE_CUFFT kCufft
#define AUGMENTD_AVAILABLE_EXECUTOR true
#define AUGMENTD_AVAILABLE_CPU_ONLY false
#define AUGMENTD_LIFT_LIFT(camel) &Lift2D##camel
#define AUGMENTD_LIFT_AS_DRAWN(camel) nullptr
#define AUGMENTD_LIFT_NO_2D(camel) nullptr
#define AUGMENTD_RUNS_2D_LIFT true
#define AUGMENTD_RUNS_2D_AS_DRAWN true
#define AUGMENTD_RUNS_2D_NO_2D false
#define AUGMENTD_REGISTERED_CUDA true
#define AUGMENTD_REGISTERED_CUFFT true
#define AUGMENTD_REGISTERED_EXECUTOR true
#define AUGMENTD_REGISTERED_CPU_ONLY false

// One entry per kind, in enum order (CPU_ONLY kinds' entries are never handed out: kRegistered).
constexpr CudaBackend kBackends[] = {
#define AUGMENTD_KIND(camel, snake, caps, cuda, lift)                                                         \
  {TransformKind::k##camel, AUGMENTD_STAGE_##cuda(camel), AUGMENTD_LIFT_##lift(camel), AUGMENTD_RUNS_2D_##lift, \
   AUGMENTD_AVAILABLE_##cuda},
#include "augment/transforms/kinds.inc"
#undef AUGMENTD_KIND
};
constexpr bool kRegistered[] = {
#define AUGMENTD_KIND(camel, snake, caps, cuda, lift) AUGMENTD_REGISTERED_##cuda,
#include "augment/transforms/kinds.inc"
#undef AUGMENTD_KIND
};

constexpr bool InEnumOrder() {
  if (sizeof(kBackends) / sizeof(kBackends[0]) != static_cast<size_t>(kNumTransformKinds)) return false;
  for (size_t i = 0; i < sizeof(kBackends) / sizeof(kBackends[0]); ++i)
    if (kBackends[i].kind != static_cast<TransformKind>(i)) return false;
  return true;
}
static_assert(InEnumOrder(), "backends.cc: kBackends lists every kind in TransformKind order");
}  // namespace

bool HasCudaImplementation(TransformKind kind) {
  const CudaBackend* b = CudaBackendOf(kind);
  return b != nullptr && b->available;
}

const CudaBackend* CudaBackendOf(TransformKind kind) {
  const size_t k = static_cast<size_t>(kind);
  return k < sizeof(kBackends) / sizeof(kBackends[0]) && kRegistered[k] ? &kBackends[k] : nullptr;
}

}  // namespace augmentd
