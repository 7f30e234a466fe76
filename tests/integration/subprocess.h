// tests/integration/subprocess.h — run the real `augmentd` binary as a child process and watch its output.
//
//   auto server = Subprocess::Start({AUGMENTD_BIN_PATH, "--listen=127.0.0.1:0"});
//   ASSERT_TRUE(server->WaitForOutput("serving on", absl::Seconds(20))) << server->Output();
//   server->Signal(SIGTERM);
//   EXPECT_EQ(server->WaitForExit(absl::Seconds(20)), 0);
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace augmentd::testing {

class Subprocess {
 public:
  // Starts argv[0] with the arguments; stdout and stderr are merged and captured.
  static std::unique_ptr<Subprocess> Start(const std::vector<std::string>& argv);
  ~Subprocess();  // kills (SIGKILL) and reaps a child that is still running

  // Waits until the captured output contains `needle` (true), the process exits or `timeout` passes (false).
  bool WaitForOutput(const std::string& needle, absl::Duration timeout);
  std::string Output() const;

  void Signal(int signal_number);
  // The exit status (0..255), or -N when killed by signal N; nullopt when still running after `timeout`.
  std::optional<int> WaitForExit(absl::Duration timeout);
  bool running();

 private:
  Subprocess() = default;
  void ReadLoop(int fd);

  pid_t pid_ = -1;
  std::optional<int> exit_status_;
  std::thread reader_;
  mutable absl::Mutex mu_;
  std::string output_ ABSL_GUARDED_BY(mu_);
  bool eof_ ABSL_GUARDED_BY(mu_) = false;
};

// Runs a command to completion (killed after `timeout`); returns {exit status, merged output}.
struct CommandResult {
  std::optional<int> exit_status;
  std::string output;
};
CommandResult RunCommand(const std::vector<std::string>& argv, absl::Duration timeout = absl::Seconds(30));

// The augmentd binary to test: $AUGMENTD_BIN if set (as scripts/test.sh and pytest use it), else the path
// the build compiled in.
std::string AugmentdBinary(const char* compiled_path);

// A TCP port on 127.0.0.1 that was free a moment ago.
int PickFreePort();

// The addresses of augmentd's "serving on A, B (device ...)" log line; empty if absent.
std::vector<std::string> ServingAddresses(const std::string& output);

}  // namespace augmentd::testing
