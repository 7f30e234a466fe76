// augment/status_macros.h — the engine's two status-propagation helpers (internal; used by .cc files).
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define AUGMENTD_CONCAT_INNER_(a, b) a##b
#define AUGMENTD_CONCAT_(a, b) AUGMENTD_CONCAT_INNER_(a, b)

// Returns the status from the enclosing function if `expr` is not OK.
#define RETURN_IF_ERROR(expr)                    \
  do {                                           \
    const absl::Status _augmentd_st = (expr);    \
    if (!_augmentd_st.ok()) return _augmentd_st; \
  } while (0)

// `ASSIGN_OR_RETURN(auto x, StatusOrExpr())`.
#define ASSIGN_OR_RETURN(lhs, rexpr) ASSIGN_OR_RETURN_IMPL_(AUGMENTD_CONCAT_(_augmentd_so_, __LINE__), lhs, rexpr)
#define ASSIGN_OR_RETURN_IMPL_(so, lhs, rexpr) \
  auto so = (rexpr);                           \
  if (!so.ok()) return so.status();            \
  lhs = std::move(*so)
