#include "tests/integration/subprocess.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <cstdlib>
#include <cstring>

#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace augmentd::testing {

std::unique_ptr<Subprocess> Subprocess::Start(const std::vector<std::string>& argv) {
  // Everything the child needs is prepared before fork(): this process has other threads (gRPC), so the
  // child may only call async-signal-safe functions until execv.
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return nullptr;
  const pid_t pid = fork();
  if (pid < 0) return nullptr;
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);  // dup2 clears O_CLOEXEC on the new descriptors
    dup2(fds[1], STDERR_FILENO);
    execv(args[0], args.data());
    _exit(127);
  }
  close(fds[1]);
  std::unique_ptr<Subprocess> p(new Subprocess());
  p->pid_ = pid;
  p->reader_ = std::thread([raw = p.get(), fd = fds[0]] { raw->ReadLoop(fd); });
  return p;
}

Subprocess::~Subprocess() {
  if (running()) {
    kill(pid_, SIGKILL);
    WaitForExit(absl::Seconds(10));
  }
  if (reader_.joinable()) reader_.join();
}

void Subprocess::ReadLoop(int fd) {
  char buf[4096];
  while (true) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n <= 0) break;
    absl::MutexLock lock(&mu_);
    output_.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  absl::MutexLock lock(&mu_);
  eof_ = true;
}

bool Subprocess::WaitForOutput(const std::string& needle, absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return eof_ || output_.find(needle) != std::string::npos;
  };
  mu_.AwaitWithTimeout(absl::Condition(&ready), timeout);
  return output_.find(needle) != std::string::npos;
}

std::string Subprocess::Output() const {
  absl::MutexLock lock(&mu_);
  return output_;
}

void Subprocess::Signal(int signal_number) {
  if (running()) kill(pid_, signal_number);
}

bool Subprocess::running() {
  if (exit_status_.has_value()) return false;
  int status = 0;
  const pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
    return false;
  }
  return r == 0;
}

std::optional<int> Subprocess::WaitForExit(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (running()) {
    if (absl::Now() > deadline) return std::nullopt;
    absl::SleepFor(absl::Milliseconds(10));
  }
  if (reader_.joinable()) reader_.join();  // all output is in once the pipe closes
  return exit_status_;
}

CommandResult RunCommand(const std::vector<std::string>& argv, absl::Duration timeout) {
  std::unique_ptr<Subprocess> p = Subprocess::Start(argv);
  CommandResult result;
  if (p == nullptr) return result;
  result.exit_status = p->WaitForExit(timeout);
  result.output = p->Output();
  return result;
}

std::string AugmentdBinary(const char* compiled_path) {
  const char* env = std::getenv("AUGMENTD_BIN");
  return env != nullptr && *env != '\0' ? env : compiled_path;
}

int PickFreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

std::vector<std::string> ServingAddresses(const std::string& output) {
  const size_t at = output.find("serving on ");
  if (at == std::string::npos) return {};
  const size_t begin = at + std::strlen("serving on ");
  const size_t end = output.find(" (", begin);
  if (end == std::string::npos) return {};
  std::vector<std::string> out;
  for (absl::string_view a : absl::StrSplit(output.substr(begin, end - begin), ", ")) out.emplace_back(a);
  return out;
}

}  // namespace augmentd::testing
