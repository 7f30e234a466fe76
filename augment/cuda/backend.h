// augment/cuda/backend.h — what the CUDA engine knows about one transform kind: its chain stage factory and the 3D
// form of its 2D parameters. The CPU side of a kind (name, factory, capability flags) is its entry in
// augment/registry.cc; this is the CUDA side, registered from the CUDA library (augment/cuda/backends.cc, one line per
// kind) so that the registry itself needs no CUDA header. Look it up with CudaBackendOf(kind) (augment/registry.h).
//
//   const CudaBackend* b = CudaBackendOf(t.kind());            // nullptr: the kind has no CUDA implementation
//   if (b != nullptr && b->make_stage != nullptr) ASSIGN_OR_RETURN(auto stage, b->make_stage(t, index));
//
// Thread-safety: the table is immutable (constexpr); lookups are safe from any thread.
#pragma once

#include <cstddef>
#include <memory>

#include "absl/status/statusor.h"
#include "augment/cuda/stage.h"
#include "augment/registry.h"
#include "augment/transform.h"

namespace augmentd {

struct CudaBackend {
  TransformKind kind;
  // The chain stage of pipeline entry `index` (`t` of this kind); UNIMPLEMENTED naming the option it does not cover.
  // nullptr: the chain executor runs the kind itself (spatial, downsample_seg_for_ds).
  CudaStageOrError (*make_stage)(const Transform& t, size_t index);
  // The 3D form (B, C, 1, X, Y) of parameters drawn for a 2D sample (augment/cuda/chain_2d.h); nullptr: used as
  // drawn. INVALID_ARGUMENT for parameters that are not 2D.
  absl::StatusOr<std::unique_ptr<TransformParams>> (*lift_2d)(const TransformParams& p);
  // Whether 2D samples may run: the stage's 3D result on a unit leading axis equals the CPU's 2D result (each kind's
  // argument is in cuda/chain_2d.h). false: UNIMPLEMENTED for 2D samples (CheckStage2D).
  bool runs_2d;
  // false: the build lacks a library the stage needs (cuFFT for ghosting / spike / motion); its factory then answers
  // UNIMPLEMENTED naming it, and HasCudaImplementation (GetServerInfo) reports no CUDA implementation.
  bool available = true;
};

}  // namespace augmentd
