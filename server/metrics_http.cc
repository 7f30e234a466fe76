#include "server/metrics_http.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <list>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace augmentd {

absl::StatusOr<HttpAddress> ParseHttpAddress(const std::string& text) {
  HttpAddress out;
  std::string port_text = text;
  out.host = "0.0.0.0";
  if (const size_t colon = text.rfind(':'); colon != std::string::npos) {
    std::string host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    if (host.empty()) return absl::InvalidArgumentError(absl::StrCat("--metrics_port: '", text, "' has no host"));
    out.host = host;
  }
  if (!absl::SimpleAtoi(port_text, &out.port) || out.port < 0 || out.port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("--metrics_port: '", text, "' is not PORT or HOST:PORT with a port in 0..65535"));
  }
  return out;
}

namespace {

using Clock = std::chrono::steady_clock;

struct Connection {
  int fd = -1;
  std::string in;            // bytes received, not yet parsed
  std::string out;           // responses not yet written
  bool peer_closed = false;  // read EOF (half-close): answer what is buffered, then close
  bool close_after = false;  // "Connection: close", HTTP/1.0 or an error: close once `out` is written
  Clock::time_point request_start;  // first byte of the request being received (header deadline)
  Clock::time_point last_activity;
};

std::string Response(int status, const char* reason, const std::string& content_type, const std::string& body,
                     bool head, bool close) {
  std::string r = absl::StrCat("HTTP/1.1 ", status, " ", reason, "\r\nContent-Type: ", content_type,
                               "\r\nContent-Length: ", body.size(), "\r\n", close ? "Connection: close\r\n" : "",
                               "\r\n");
  if (!head) r += body;
  return r;
}

void SetNonBlocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) | O_NONBLOCK); }

}  // namespace

// One thread, poll(2) over the listener, a wake-up pipe and every connection; sockets are non-blocking, so a
// connection that sends nothing, or one byte a second, costs a slot in the poll set and nothing else: probes
// on other connections are answered at once. Bounds: kMaxConnections open connections (the longest-idle one is
// closed to admit a new one), kMaxHeaderBytes per request (431), kHeaderTimeout from a request's first byte to
// its end (408, slow drip), kIdleTimeout between requests (keep-alive). Pipelined requests are parsed from the
// buffer one after another and answered in order; a half-closed connection (FIN after its requests) still
// gets every answer before the server closes it. Request bodies (Content-Length) are read and discarded;
// chunked request bodies are refused (501).
class MetricsHttpServer::Loop {
 public:
  static constexpr size_t kMaxConnections = 512;
  static constexpr size_t kMaxHeaderBytes = 8192;
  static constexpr size_t kMaxBodyBytes = 1 << 16;
  static constexpr std::chrono::seconds kHeaderTimeout{5};
  static constexpr std::chrono::seconds kIdleTimeout{15};

  Loop(int listen_fd, std::function<std::string()> render, std::function<bool()> ready)
      : listen_fd_(listen_fd), render_(std::move(render)), ready_(std::move(ready)) {}
  ~Loop() {
    for (Connection& c : conns_) close(c.fd);
    close(listen_fd_);
    if (wake_[0] >= 0) close(wake_[0]);
    if (wake_[1] >= 0) close(wake_[1]);
  }
  bool Init() {
    if (pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) return false;
    SetNonBlocking(listen_fd_);
    return true;
  }
  void Stop() {
    const char b = 1;
    [[maybe_unused]] ssize_t n = write(wake_[1], &b, 1);
  }
  void Run();

 private:
  void Accept();
  // Reads what is available; false when the connection must be dropped.
  bool Read(Connection& c);
  // Parses and answers every complete request in c.in.
  void Serve(Connection& c);
  std::string Answer(const std::string& method, const std::string& target, bool close);
  bool Write(Connection& c);

  const int listen_fd_;
  int wake_[2] = {-1, -1};
  std::function<std::string()> render_;
  std::function<bool()> ready_;
  std::list<Connection> conns_;
};

void MetricsHttpServer::Loop::Run() {
  std::vector<pollfd> fds;
  std::vector<std::list<Connection>::iterator> order;
  for (;;) {
    fds.clear();
    order.clear();
    fds.push_back({wake_[0], POLLIN, 0});
    fds.push_back({listen_fd_, POLLIN, 0});
    for (auto it = conns_.begin(); it != conns_.end(); ++it) {
      short events = 0;
      if (!it->peer_closed && !it->close_after) events |= POLLIN;
      if (!it->out.empty()) events |= POLLOUT;
      fds.push_back({it->fd, events, 0});
      order.push_back(it);
    }
    const int n = poll(fds.data(), fds.size(), 500);
    if (n < 0 && errno != EINTR) return;
    if (fds[0].revents != 0) return;  // Stop()
    const Clock::time_point now = Clock::now();
    for (size_t i = 0; i < order.size(); ++i) {
      Connection& c = *order[i];
      const short re = fds[i + 2].revents;
      bool keep = true;
      if (re & (POLLIN | POLLHUP | POLLERR)) keep = Read(c);
      if (keep) Serve(c);
      if (keep && !c.out.empty()) keep = Write(c);
      if (keep && c.out.empty() && (c.close_after || c.peer_closed)) keep = false;
      if (keep) {
        const bool mid_request = !c.in.empty();
        if (mid_request && now - c.request_start > kHeaderTimeout) {
          c.out += Response(408, "Request Timeout", "text/plain", "request timeout\n", false, true);
          c.close_after = true;
          c.in.clear();
          keep = Write(c) && !c.out.empty();  // one try; closed either way once written
        } else if (!mid_request && c.out.empty() && now - c.last_activity > kIdleTimeout) {
          keep = false;
        }
      }
      if (!keep) {
        close(c.fd);
        conns_.erase(order[i]);
      }
    }
    if (fds[1].revents & POLLIN) Accept();
  }
}

void MetricsHttpServer::Loop::Accept() {
  for (int k = 0; k < 64; ++k) {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    if (conns_.size() >= kMaxConnections) {  // close the longest idle (front: oldest activity first)
      auto victim = conns_.begin();
      for (auto it = conns_.begin(); it != conns_.end(); ++it) {
        if (it->last_activity < victim->last_activity) victim = it;
      }
      close(victim->fd);
      conns_.erase(victim);
    }
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    Connection c;
    c.fd = fd;
    c.last_activity = c.request_start = Clock::now();
    conns_.push_back(std::move(c));
  }
}

bool MetricsHttpServer::Loop::Read(Connection& c) {
  char buf[4096];
  for (;;) {
    const ssize_t n = recv(c.fd, buf, sizeof(buf), 0);
    if (n > 0) {
      if (c.in.empty()) c.request_start = Clock::now();
      c.last_activity = Clock::now();
      c.in.append(buf, static_cast<size_t>(n));
      if (c.in.size() > kMaxHeaderBytes + kMaxBodyBytes) return false;  // nothing legitimate sends this much
      continue;
    }
    if (n == 0) {
      c.peer_closed = true;
      return true;
    }
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK;
  }
}

void MetricsHttpServer::Loop::Serve(Connection& c) {
  while (!c.close_after && !c.in.empty()) {
    // Leading empty lines before a request line are ignored (RFC 9112 §2.2).
    while (absl::StartsWith(c.in, "\r\n")) c.in.erase(0, 2);
    const size_t end = c.in.find("\r\n\r\n");
    if (end == std::string::npos) {
      if (c.in.size() > kMaxHeaderBytes) {
        c.out += Response(431, "Request Header Fields Too Large", "text/plain", "header too large\n", false, true);
        c.close_after = true;
        c.in.clear();
      } else if (c.peer_closed && !c.in.empty()) {
        c.out += Response(400, "Bad Request", "text/plain", "incomplete request\n", false, true);
        c.close_after = true;
        c.in.clear();
      }
      return;
    }
    std::vector<std::string> lines = absl::StrSplit(c.in.substr(0, end), "\r\n");
    std::vector<std::string> request_line = absl::StrSplit(lines[0], ' ', absl::SkipEmpty());
    size_t body = 0;
    bool close = false, chunked = false, bad = request_line.size() != 3 || !absl::StartsWith(request_line[2], "HTTP/1.");
    if (!bad && request_line[2] == "HTTP/1.0") close = true;
    for (size_t i = 1; i < lines.size() && !bad; ++i) {
      const size_t colon = lines[i].find(':');
      if (colon == std::string::npos) {
        bad = true;
        break;
      }
      const std::string name = absl::AsciiStrToLower(lines[i].substr(0, colon));
      const std::string value = absl::AsciiStrToLower(absl::StripAsciiWhitespace(lines[i].substr(colon + 1)));
      if (name == "content-length") {
        bad = !absl::SimpleAtoi(value, &body) || body > kMaxBodyBytes;
      } else if (name == "transfer-encoding") {
        chunked = true;
      } else if (name == "connection") {
        if (absl::StrContains(value, "close")) close = true;
        if (absl::StrContains(value, "keep-alive")) close = false;
      }
    }
    if (bad || chunked) {
      c.out += bad ? Response(400, "Bad Request", "text/plain", "bad request\n", false, true)
                   : Response(501, "Not Implemented", "text/plain", "chunked request bodies\n", false, true);
      c.close_after = true;
      c.in.clear();
      return;
    }
    if (c.in.size() < end + 4 + body) {  // body still arriving
      if (c.peer_closed) {
        c.close_after = true;
        c.in.clear();
      }
      return;
    }
    c.out += Answer(request_line[0], request_line[1], close);
    c.in.erase(0, end + 4 + body);
    c.request_start = Clock::now();
    if (close) c.close_after = true;
  }
}

std::string MetricsHttpServer::Loop::Answer(const std::string& method, const std::string& target, bool close) {
  const bool head = method == "HEAD";
  if (method != "GET" && !head) {
    return Response(405, "Method Not Allowed", "text/plain", "only GET and HEAD\n", false, close);
  }
  const std::string path = target.substr(0, target.find('?'));
  if (path == "/metrics") return Response(200, "OK", "text/plain; version=0.0.4; charset=utf-8", render_(), head, close);
  if (path == "/healthz") return Response(200, "OK", "text/plain", "ok\n", head, close);
  if (path == "/readyz") {
    const bool ok = ready_();
    return ok ? Response(200, "OK", "text/plain", "ready\n", head, close)
              : Response(503, "Service Unavailable", "text/plain", "draining\n", head, close);
  }
  return Response(404, "Not Found", "text/plain", "not found\n", head, close);
}

bool MetricsHttpServer::Loop::Write(Connection& c) {
  while (!c.out.empty()) {
    const ssize_t n = send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
    if (n > 0) {
      c.out.erase(0, static_cast<size_t>(n));
      c.last_activity = Clock::now();
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);  // full: wait for POLLOUT; else drop
  }
  return true;
}

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(const std::string& address,
                                                                             std::function<std::string()> render,
                                                                             std::function<bool()> ready) {
  absl::StatusOr<HttpAddress> parsed = ParseHttpAddress(address);
  if (!parsed.ok()) return parsed.status();
  auto unavailable = [&](const std::string& why) {
    return absl::UnavailableError(absl::StrCat("--metrics_port: cannot listen on ", address, ": ", why));
  };
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string port_text = std::to_string(parsed->port);
  if (getaddrinfo(parsed->host.c_str(), port_text.c_str(), &hints, &res) != 0 || res == nullptr) {
    return unavailable("not resolvable");
  }
  int fd = -1;
  std::string why = "no address";
  for (addrinfo* a = res; a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, 128) != 0) {
      why = std::strerror(errno);
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(res);
  if (fd < 0) return unavailable(why);
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  const int port = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                                : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  std::unique_ptr<MetricsHttpServer> self(new MetricsHttpServer());
  self->loop_ = std::make_unique<Loop>(fd, std::move(render), std::move(ready));
  if (!self->loop_->Init()) return unavailable("cannot create the wake-up pipe");
  const bool v6 = parsed->host.find(':') != std::string::npos;
  self->address_ = v6 ? absl::StrCat("[", parsed->host, "]:", port) : absl::StrCat(parsed->host, ":", port);
  Loop* loop = self->loop_.get();
  self->thread_ = std::thread([loop] { loop->Run(); });
  return self;
}

MetricsHttpServer::~MetricsHttpServer() { Stop(); }

void MetricsHttpServer::Stop() {
  if (loop_ != nullptr) loop_->Stop();
  if (thread_.joinable()) thread_.join();
  loop_.reset();
}

}  // namespace augmentd
