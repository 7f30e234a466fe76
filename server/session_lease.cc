#include "server/session_lease.h"

#include <algorithm>
#include <random>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/log.h"

namespace augmentd {

SessionLeases::SessionLeases(absl::Duration idle_timeout, std::function<bool(const std::string&)> streaming,
                             std::function<void(const std::string&)> close)
    : idle_timeout_(idle_timeout), streaming_(std::move(streaming)), close_(std::move(close)) {
  if (idle_timeout_ > absl::ZeroDuration()) reaper_ = std::thread([this] { Reap(); });
}

SessionLeases::~SessionLeases() { Stop(); }

void SessionLeases::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (reaper_.joinable() && reaper_.get_id() != std::this_thread::get_id()) reaper_.join();
}

std::string SessionLeases::UnknownSessionMessage(const std::string& id) {
  return absl::StrCat("session_id: no session '", id, "' (or session_token is not its credential)");
}

std::string SessionLeases::Issue(const std::string& id) {
  std::random_device rd;  // /dev/urandom (getrandom) on Linux
  std::string token;
  for (int i = 0; i < 4; ++i) absl::StrAppendFormat(&token, "%08x", static_cast<uint32_t>(rd()));
  std::lock_guard<std::mutex> lock(mu_);
  leases_[id] = Lease{token, absl::Now()};
  return token;
}

absl::Status SessionLeases::Check(const std::string& id, const std::string& token) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = leases_.find(id);
  bool match = it != leases_.end() && it->second.token.size() == token.size();
  if (match) {
    unsigned char diff = 0;  // constant time in the token's content
    for (size_t i = 0; i < token.size(); ++i) diff |= static_cast<unsigned char>(it->second.token[i] ^ token[i]);
    match = diff == 0;
  }
  if (!match) return absl::NotFoundError(UnknownSessionMessage(id));
  it->second.last_used = absl::Now();
  return absl::OkStatus();
}

void SessionLeases::Forget(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  leases_.erase(id);
}

uint64_t SessionLeases::expired() const {
  std::lock_guard<std::mutex> lock(mu_);
  return expired_;
}

void SessionLeases::Reap() {
  // Checks a few times per timeout (at most once a second): a lease runs out within idle_timeout * 1.25.
  const absl::Duration period = std::min(absl::Seconds(1), idle_timeout_ / 4);
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, absl::ToChronoNanoseconds(period), [this] { return stop_; });
    if (stop_) break;
    const absl::Time now = absl::Now();
    std::vector<std::pair<std::string, absl::Duration>> idle;
    for (const auto& [id, lease] : leases_) {
      if (now - lease.last_used > idle_timeout_) idle.emplace_back(id, now - lease.last_used);
    }
    lock.unlock();
    for (const auto& [id, for_how_long] : idle) {
      if (streaming_(id)) {  // an open stream keeps the session: renew
        std::lock_guard<std::mutex> relock(mu_);
        if (auto it = leases_.find(id); it != leases_.end()) it->second.last_used = absl::Now();
        continue;
      }
      {
        std::lock_guard<std::mutex> relock(mu_);
        auto it = leases_.find(id);
        if (it == leases_.end() || absl::Now() - it->second.last_used <= idle_timeout_) continue;  // renewed
        leases_.erase(it);
        ++expired_;
      }
      LogInfo("session=", id, " expired: no call and no open stream for ", absl::FormatDuration(for_how_long),
              " (--session_idle_timeout=", absl::FormatDuration(idle_timeout_), "); closing it");
      close_(id);
    }
    lock.lock();
  }
}

}  // namespace augmentd
