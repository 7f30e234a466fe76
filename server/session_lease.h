// server/session_lease.h — the owner credential and idle lease of every open session.
//
// Credential: OpenSession issues a random 128-bit token (OpenSessionResponse.session_token, hex); every later
// call on the session (Augment, StreamStart, CloseSession) must carry it. A missing or wrong token is answered
// exactly like an unknown id — NOT_FOUND "session_id: no session 'ID' (or session_token is not its
// credential)" — so a client that does not own a session cannot even learn that it exists (ids are not
// secrets: they appear in logs and GetStats). With bearer tokens or mTLS on, the session credential comes on
// top of the call's authentication: it separates the sessions of clients that share one bearer token.
// GetStats stays readable by any authenticated client (counters, no data).
//
// Lease: a session with no open stream that received no call for `idle_timeout` is closed by the reaper
// thread (the `close` callback: the registry's Close, which frees its slots, shm segments and device memory
// once its last call finishes), with a log line and augmentd_sessions_expired_total. A trainer's open stream
// keeps its session alive however long it idles; a client killed with SIGKILL loses its stream at once
// (gRPC cancels it), so its session goes one idle_timeout later. idle_timeout 0: sessions never expire.
//
//   SessionLeases leases(absl::Seconds(300), [&](const std::string& id) { registry.Close(id); });
//   std::string token = leases.Issue(id);
//   RETURN_IF_ERROR(leases.Check(id, request.session_token()));   // also renews the lease
//
// Thread-safety: all methods may be called concurrently; `close` and `streaming` run on the reaper thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace augmentd {

class SessionLeases {
 public:
  // `streaming(id)`: whether the session has an open stream (its lease does not run out then).
  SessionLeases(absl::Duration idle_timeout, std::function<bool(const std::string&)> streaming,
                std::function<void(const std::string&)> close);
  ~SessionLeases();
  SessionLeases(const SessionLeases&) = delete;
  SessionLeases& operator=(const SessionLeases&) = delete;

  // A fresh credential for session `id` (its lease starts now).
  std::string Issue(const std::string& id);
  // OK when `token` is the credential of `id` (constant-time comparison); renews the lease. NOT_FOUND worded
  // like an unknown id otherwise.
  absl::Status Check(const std::string& id, const std::string& token);
  // The session is gone (closed by its client, expired, drained).
  void Forget(const std::string& id);
  // Stops the reaper (idempotent; also in the destructor): no session expires from now on.
  void Stop();
  uint64_t expired() const;
  // The NOT_FOUND message for `id`, shared with the registry's unknown-id answer.
  static std::string UnknownSessionMessage(const std::string& id);

 private:
  struct Lease {
    std::string token;
    absl::Time last_used;
  };
  void Reap();

  const absl::Duration idle_timeout_;
  const std::function<bool(const std::string&)> streaming_;
  const std::function<void(const std::string&)> close_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Lease> leases_;  // guarded by mu_
  bool stop_ = false;                    // guarded by mu_
  uint64_t expired_ = 0;                 // guarded by mu_
  std::thread reaper_;
};

}  // namespace augmentd
