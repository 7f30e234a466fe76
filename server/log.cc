#include "server/log.h"

#include <grpc/support/log.h>
#include <unistd.h>

#include <string>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace augmentd {

void LogLine(LogSeverity severity, std::string_view message) {
  const char tag = severity == LogSeverity::kInfo ? 'I' : severity == LogSeverity::kWarning ? 'W' : 'E';
  std::string line = absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(), absl::UTCTimeZone());
  line += ' ';
  line += tag;
  line += " augmentd: ";
  line.append(message.data(), message.size());
  line += '\n';
  // One write(2) per line keeps lines from different threads whole.
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    const ssize_t n = ::write(STDERR_FILENO, p, left);
    if (n <= 0) break;
    p += n;
    left -= static_cast<size_t>(n);
  }
}

namespace {

void GrpcLogToLog(gpr_log_func_args* args) {
  const LogSeverity severity = args->severity == GPR_LOG_SEVERITY_ERROR   ? LogSeverity::kError
                               : args->severity == GPR_LOG_SEVERITY_INFO ? LogSeverity::kInfo
                                                                          : LogSeverity::kWarning;
  std::string_view file = args->file != nullptr ? args->file : "";
  if (const size_t slash = file.rfind('/'); slash != std::string_view::npos) file.remove_prefix(slash + 1);
  LogLine(severity, absl::StrCat("grpc: ", args->message, " (", std::string(file), ":", args->line, ")"));
}

}  // namespace

void RouteGrpcLogsToLog() { gpr_set_log_function(&GrpcLogToLog); }

}  // namespace augmentd
