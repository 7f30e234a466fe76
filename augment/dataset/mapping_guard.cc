#include "augment/dataset/mapping_guard.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <mutex>

namespace augmentd::dataset {

struct MappingGuardAccess {
  static void OnSigbus(int sig, siginfo_t* info, void* context);
};

namespace {

thread_local MappingRead* t_current = nullptr;  // innermost guard of this thread
struct sigaction g_previous;                    // the handler before ours (chained for faults not ours)
uintptr_t g_page = 4096;
std::atomic<uint64_t> g_faults{0};

void Chain(int sig, siginfo_t* info, void* context) {
  if ((g_previous.sa_flags & SA_SIGINFO) != 0 && g_previous.sa_sigaction != nullptr) {
    g_previous.sa_sigaction(sig, info, context);
    return;
  }
  if ((g_previous.sa_flags & SA_SIGINFO) == 0 && g_previous.sa_handler != SIG_DFL &&
      g_previous.sa_handler != SIG_IGN) {
    g_previous.sa_handler(sig);
    return;
  }
  // Default action: restore it and let the (blocked, now pending) signal or the re-executed fault kill us.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, nullptr);
  raise(sig);
}

void Install() {
  static std::once_flag once;
  std::call_once(once, [] {
    const long page = sysconf(_SC_PAGESIZE);
    if (page > 0) g_page = static_cast<uintptr_t>(page);
    struct sigaction sa {};
    sa.sa_sigaction = &MappingGuardAccess::OnSigbus;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, &g_previous);
  });
}

}  // namespace

// Async-signal-safe: reads thread-locals this thread set, stores to lock-free atomics, makes the mmap system
// call directly (no libc wrapper, no sanitizer interceptor, no user-space lock).
void MappingGuardAccess::OnSigbus(int sig, siginfo_t* info, void* context) {
  const uintptr_t addr = reinterpret_cast<uintptr_t>(info->si_addr);
  if (info->si_code > 0) {  // raised by a fault (not kill/sigqueue)
    for (MappingRead* g = t_current; g != nullptr; g = g->previous_) {
      const MappedRange& r = g->range_;
      if (addr < r.begin_ || addr >= r.begin_ + r.bytes_) continue;
      r.poisoned_.store(true, std::memory_order_seq_cst);  // before any other thread can see a zero page
      const uintptr_t page = addr & ~(g_page - 1);
      const uintptr_t end = (r.begin_ + r.bytes_ + g_page - 1) & ~(g_page - 1);
      // The raw system call: no libc or sanitizer interceptor runs inside the handler.
      const long p = syscall(SYS_mmap, page, end - page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
      if (p == -1) break;
      g->faulted_.store(true, std::memory_order_relaxed);
      g_faults.fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
  Chain(sig, info, context);
}

MappingRead::MappingRead(const MappedRange& range) : range_(range), previous_(t_current) {
  Install();
  t_current = this;
}

MappingRead::~MappingRead() { t_current = previous_; }

bool MappingRead::failed() const { return faulted_.load(std::memory_order_relaxed) || range_.poisoned(); }

uint64_t MappingFaults() { return g_faults.load(std::memory_order_relaxed); }

}  // namespace augmentd::dataset
