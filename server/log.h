// server/log.h — one-line, timestamped log records on stderr:
//   2026-11-29T17:40:00.123Z I augmentd: serving on 127.0.0.1:50051
// Lines about a session start with `session=<id>`; every per-batch line (a failed batch, a stream's first batch)
// also carries `batch=<index>` (STYLE.md), so `grep session=<id>` follows one training and the batch index
// replays the batch (sessions are deterministic per index). Successful batches are not logged one by one:
// /metrics counts them (server/metrics.h). Thread-safe: one write per line.
#pragma once

#include <string_view>

#include "absl/strings/str_cat.h"

namespace augmentd {

enum class LogSeverity { kInfo, kWarning, kError };

// Writes one line (severity, UTC timestamp, message) to stderr atomically and flushes it.
void LogLine(LogSeverity severity, std::string_view message);

// Sends gRPC's own log records (gpr_log) through LogLine, prefixed "grpc: ", so every line has one format.
void RouteGrpcLogsToLog();

template <typename... Args>
void LogInfo(const Args&... args) {
  LogLine(LogSeverity::kInfo, absl::StrCat(args...));
}
template <typename... Args>
void LogWarning(const Args&... args) {
  LogLine(LogSeverity::kWarning, absl::StrCat(args...));
}
template <typename... Args>
void LogError(const Args&... args) {
  LogLine(LogSeverity::kError, absl::StrCat(args...));
}

}  // namespace augmentd
