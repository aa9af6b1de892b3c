#include "server/gate.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <new>
#include <string_view>

#include "server/openai_schema.hpp"
#include "server/request_reader.hpp"

namespace brisk::server {
namespace {

constexpr size_t kChunk = 64 * 1024;
constexpr size_t kMaxPending = 1 << 20;    // client-bound bytes buffered before the backend is paused
constexpr double kLingerSeconds = 2;       // a finished connection drains client input this long
constexpr double kBackendWaitSeconds = 5;  // retrying a backend whose accept queue is full
constexpr double kStallSeconds = 30;       // a client that takes none of its response this long is dropped
constexpr double kSweepSeconds = 0.25;
constexpr uint64_t kListenTag = 0, kWakeTag = 2;  // epoll tags; a connection's is its address | side

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
bool would_block(int e) { return e == EAGAIN || e == EWOULDBLOCK; }

// send/recv without EINTR: > 0 bytes moved; 0 would block; -1 the peer is gone (EOF, EPIPE, reset).
ssize_t io_send(int fd, const char* p, size_t n) {
  ssize_t r;
  do r = send(fd, p, n, MSG_NOSIGNAL);
  while (r < 0 && errno == EINTR);
  return r > 0 ? r : r < 0 && would_block(errno) ? 0 : -1;
}
ssize_t io_recv(int fd, char* p, size_t n) {
  ssize_t r;
  do r = recv(fd, p, n, 0);
  while (r < 0 && errno == EINTR);
  return r > 0 ? r : r < 0 && would_block(errno) ? 0 : -1;
}

const char* reason(int status) {
  switch (status) {
    case 400: return "Bad Request";
    case 408: return "Request Timeout";
    case 411: return "Length Required";
    case 413: return "Payload Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 431: return "Request Header Fields Too Large";
    case 501: return "Not Implemented";
    case 505: return "HTTP Version Not Supported";
    default: return "Service Unavailable";
  }
}

// Writes one of the gate's own answers. At most a 100 Continue went to this socket before,
// so its send buffer takes the whole answer at once.
bool write_refusal(int fd, int status, const std::string& message) {
  const std::string body = dump(error_body(message, status == 503 ? "overloaded_error" : "invalid_request_error"));
  const std::string r = "HTTP/1.1 " + std::to_string(status) + " " + reason(status) +
                        "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                        "\r\nConnection: close\r\n" + (status == 503 ? "Retry-After: 1\r\n" : "") + "\r\n" + body;
  return io_send(fd, r.data(), r.size()) == static_cast<ssize_t>(r.size());
}

}  // namespace

struct Gate::Conn {
  enum class St { Reading, Waiting, Relaying, Lingering };  // Waiting: the backend's queue is full
  St st = St::Reading;
  int cfd = -1, bfd = -1;             // client, backend
  uint32_t cev = 0, bev = 0;          // what epoll watches on each
  size_t index = 0;                   // slot in Gate::conns_
  bool dead = false, relayed = false, backend_eof = false;
  double deadline = 0, progress = 0;  // progress: when the client last took response bytes
  RequestReader reader{RequestLimits{}};  // the request as it arrives
  bool continued = false;                 // a 100 Continue went out
  uint64_t id = 0;                        // for Gate::connected, once forwarded
  std::string to_backend, to_client;
  size_t backend_off = 0, client_off = 0;

  ~Conn() {
    for (int fd : {cfd, bfd})
      if (fd >= 0) close(fd);
  }
  size_t pending() const { return to_client.size() - client_off; }
  void close_backend() {
    if (bfd >= 0) close(bfd);  // how the server behind learns that the client is gone
    bfd = -1, bev = 0;
  }
};

Gate::Gate(GateOptions opts) : opts_(std::move(opts)) {}

Gate::~Gate() {
  for (int fd : {listen_fd_, epoll_fd_, wake_fd_})
    if (fd >= 0) close(fd);
}

bool Gate::bind(std::string* error) {
  const std::string port = std::to_string(opts_.port);
  auto fail = [&](const std::string& why) {
    if (error) *error = "cannot listen on " + opts_.host + ":" + port + ": " + why;
    for (int* fd : {&listen_fd_, &epoll_fd_, &wake_fd_})
      if (*fd >= 0) close(*fd), *fd = -1;
    return false;
  };
  if (listen_fd_ >= 0) return fail("already listening");
  if (opts_.backend_path.empty() || opts_.backend_path.size() >= sizeof(sockaddr_un::sun_path))
    return fail("the backend socket path is empty or too long");
  addrinfo hints{}, *res = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  const int rc = getaddrinfo(opts_.host.empty() ? nullptr : opts_.host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0) return fail(gai_strerror(rc));
  int err = 0, one = 1;
  for (addrinfo* ai = res; ai && listen_fd_ < 0; ai = ai->ai_next) {
    const int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd >= 0 && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) == 0 &&
        ::bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 4096) == 0) {
      listen_fd_ = fd;
    } else {
      err = errno;
      if (fd >= 0) close(fd);
    }
  }
  freeaddrinfo(res);
  if (listen_fd_ < 0) return fail(std::strerror(err));
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return fail(std::strerror(errno));
  port_ = ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                                         : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  if ((epoll_fd_ = epoll_create1(EPOLL_CLOEXEC)) < 0) return fail(std::string("epoll: ") + std::strerror(errno));
  if ((wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) return fail(std::string("eventfd: ") + std::strerror(errno));
  for (auto [fd, tag] : {std::pair{listen_fd_, kListenTag}, std::pair{wake_fd_, kWakeTag}}) {
    epoll_event ev{EPOLLIN, {.u64 = tag}};
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) return fail(std::string("epoll: ") + std::strerror(errno));
  }
  return true;
}

void Gate::stop() {
  stopping_.store(true);
  stop_wake();
}

void Gate::stop_wake() {
  const uint64_t one = 1;
  // EAGAIN only when the counter is already non-zero: run() is woken either way.
  if (wake_fd_ >= 0 && write(wake_fd_, &one, sizeof one) < 0 && !would_block(errno))
    std::fprintf(stderr, "brisk gate: cannot wake the event loop: %s\n", std::strerror(errno));
}

void Gate::drain(double drain_seconds) {
  drain_seconds_.store(std::max(0.0, drain_seconds));
  stop_wake();
}

bool Gate::drained(double t) {
  const double secs = drain_seconds_.load();
  if (secs < 0) return false;
  if (drain_until_ == 0) {  // the first turn after drain(): no more clients
    drain_until_ = t + secs;
    if (listen_fd_ >= 0) epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
    for (size_t i = conns_.size(); i-- > 0;)  // close_conn moves the last entry into i
      if (conns_[i]->st == Conn::St::Reading) close_conn(*conns_[i]);
  }
  const bool relaying = std::any_of(conns_.begin(), conns_.end(), [](const auto& c) {
    return !c->dead && (c->st == Conn::St::Relaying || c->st == Conn::St::Waiting);
  });
  return !relaying || t >= drain_until_;
}

void Gate::run() {
  if (epoll_fd_ < 0) return;
  epoll_event evs[256];
  while (!stopping_.load() && !drained(now())) {
    const int n = epoll_wait(epoll_fd_, evs, 256, waiting_ > 0 ? 10 : 250);
    if (n < 0 && errno != EINTR) {
      std::fprintf(stderr, "brisk gate: epoll_wait: %s\n", std::strerror(errno));
      break;
    }
    for (int i = 0; i < n; ++i) {
      const uint64_t tag = evs[i].data.u64;
      if (tag == kWakeTag) continue;  // stop(): the loop condition sees it
      Conn* c = tag == kListenTag ? nullptr : reinterpret_cast<Conn*>(tag & ~uint64_t{1});
      if (c && c->dead) continue;  // closed earlier in this turn; freed after it
      try {
        if (!c) accept_all();
        else if (tag & 1) on_backend(*c, evs[i].events);
        else on_client(*c, evs[i].events);
      } catch (...) {  // out of memory, or on_refused threw: this connection only
        if (c) close_conn(*c);
      }
    }
    try {
      if (waiting_ > 0) retry_waiting();
      if (const double t = now(); t >= next_sweep_) expire(t), next_sweep_ = t + kSweepSeconds;
    } catch (...) {
    }
    dead_.clear();
  }
  while (!conns_.empty()) close_conn(*conns_.back());
  dead_.clear();
}

void Gate::accept_all() {
  for (int i = 0; i < 1024; ++i) {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0 && (errno == EINTR || errno == ECONNABORTED)) continue;
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // Level-triggered, the listener would fire forever: rest until the next sweep.
        epoll_event ev{0, {.u64 = kListenTag}};
        accept_paused_ = epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, listen_fd_, &ev) == 0;
      }
      return;
    }
    std::unique_ptr<Conn> owned(new (std::nothrow) Conn);
    if (!owned) {
      close(fd);
      continue;
    }
    owned->cfd = fd;
    if (open_ >= opts_.max_connections) {
      write_refusal(fd, 503, "too many open connections; try again shortly");
      if (opts_.on_refused) opts_.on_refused(503);
      continue;
    }
    const int one = 1;  // streamed tokens go out as they come, not after Nagle's wait
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // best effort
    owned->deadline = now() + opts_.request_seconds;
    owned->reader = RequestReader(RequestLimits{opts_.max_head_bytes, opts_.max_body_bytes});
    owned->index = conns_.size();
    // A turn closes at most every open connection: with this room close_conn never allocates.
    if (dead_.capacity() <= conns_.size()) dead_.reserve(2 * conns_.size() + 16);
    conns_.push_back(std::move(owned));
    ++open_;
    update_interest(*conns_.back());
  }
}

void Gate::on_client(Conn& c, uint32_t events) {
  if (events & EPOLLOUT) flush_to_client(c);
  if (!c.dead && (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))) read_client(c);
}

void Gate::read_client(Conn& c) {
  char buf[kChunk];
  for (int i = 0; i < 16 && !c.dead; ++i) {
    const ssize_t n = io_recv(c.cfd, buf, sizeof buf);
    if (n == 0) return;
    if (n < 0) return close_conn(c);         // the client went away: so does its request
    if (c.st != Conn::St::Reading) continue;  // one request per connection; the rest is ignored
    take_request(c, std::string_view(buf, static_cast<size_t>(n)));
  }
}

bool Gate::take_request(Conn& c, std::string_view bytes) {
  const RequestReader::Status st = c.reader.feed(bytes);
  if (st == RequestReader::Status::kRefused) {
    refuse(c, c.reader.refusal(), c.reader.why());
    return false;
  }
  if (st == RequestReader::Status::kMore) {
    static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    if (c.reader.wants_continue() && !c.continued) {
      c.continued = true;
      if (io_send(c.cfd, kContinue.data(), kContinue.size()) < 0) close_conn(c);
    }
    return false;
  }
  c.to_backend = c.reader.take_request();
  c.reader = RequestReader(RequestLimits{});  // frees what it held
  c.id = next_id_++;
  // Right after the request line: the server behind asks connected(id) while it waits.
  const std::string tag = std::string(kConnHeader) + ": " + std::to_string(c.id) + "\r\n";
  c.to_backend.insert(c.to_backend.find("\r\n") + 2, tag);
  {
    std::lock_guard<std::mutex> lock(live_mu_);
    live_.insert(c.id);
  }
  start_relay(c);
  return true;
}

bool Gate::connected(uint64_t id) const {
  std::lock_guard<std::mutex> lock(live_mu_);
  return live_.count(id) > 0;
}

void Gate::refuse(Conn& c, int status, const std::string& message) {
  c.close_backend();
  std::string().swap(c.to_backend);
  write_refusal(c.cfd, status, message) ? finish(c) : close_conn(c);
  if (opts_.on_refused) opts_.on_refused(status);  // last: if it throws, the answer is out already
}

void Gate::start_relay(Conn& c) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return refuse(c, 503, "the server is not available");
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, opts_.backend_path.data(), opts_.backend_path.size());  // length checked in bind()
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 && errno != EINPROGRESS) {
    const int err = errno;
    close(fd);
    if (err != EAGAIN) return refuse(c, 503, "the server is not available");
    // Its accept queue is full (httplib listens with a backlog of 5): retry shortly.
    if (c.st != Conn::St::Waiting) c.st = Conn::St::Waiting, c.deadline = now() + kBackendWaitSeconds;
    ++waiting_;
    return update_interest(c);
  }
  c.bfd = fd;
  c.st = Conn::St::Relaying;
  flush_to_backend(c);
}

void Gate::retry_waiting() {
  waiting_ = 0;  // start_relay counts those still waiting
  for (size_t i = conns_.size(); i-- > 0;)  // closing moves the last slot here: already seen
    if (conns_[i]->st == Conn::St::Waiting) start_relay(*conns_[i]);
}

void Gate::flush_to_backend(Conn& c) {
  while (c.backend_off < c.to_backend.size()) {
    const ssize_t n = io_send(c.bfd, c.to_backend.data() + c.backend_off, c.to_backend.size() - c.backend_off);
    if (n == 0) break;
    // n < 0: it stopped reading the request; what it answered is still to be read.
    c.backend_off = n > 0 ? c.backend_off + static_cast<size_t>(n) : c.to_backend.size();
  }
  if (c.backend_off == c.to_backend.size()) std::string().swap(c.to_backend), c.backend_off = 0;
  update_interest(c);
}

void Gate::on_backend(Conn& c, uint32_t events) {
  if (c.bfd < 0) return;  // closed earlier in this turn
  if (events & EPOLLOUT) flush_to_backend(c);
  if (!c.dead && c.bfd >= 0 && (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))) read_backend(c);
}

void Gate::read_backend(Conn& c) {
  char buf[kChunk];
  for (int i = 0; i < 16 && !c.dead && c.bfd >= 0 && c.pending() < kMaxPending; ++i) {
    const ssize_t n = io_recv(c.bfd, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) return backend_done(c);  // the response ends here (EOF, or a reset)
    if (c.pending() == 0) c.progress = now();  // the stall clock starts with bytes to deliver
    if (c.client_off > kMaxPending) c.to_client.erase(0, c.client_off), c.client_off = 0;
    c.to_client.append(buf, static_cast<size_t>(n));
    c.relayed = true;
    flush_to_client(c);  // chunk by chunk: a stream must not wait for the next read
  }
  update_interest(c);
}

void Gate::backend_done(Conn& c) {
  c.close_backend();
  c.backend_eof = true;
  if (!c.relayed) return refuse(c, 503, "the server closed the connection without a response");
  if (c.pending() == 0) finish(c);
}

void Gate::flush_to_client(Conn& c) {
  while (c.pending() > 0) {
    const ssize_t n = io_send(c.cfd, c.to_client.data() + c.client_off, c.pending());
    if (n == 0) break;
    if (n < 0) return close_conn(c);  // the client went away: closing the backend tells the server
    c.client_off += static_cast<size_t>(n), c.progress = now();
  }
  if (c.pending() == 0) {
    if (c.to_client.capacity() > 2 * kChunk) std::string().swap(c.to_client);
    c.to_client.clear(), c.client_off = 0;
    if (c.backend_eof && c.st == Conn::St::Relaying) return finish(c);
  }
  update_interest(c);
}

// Half-closes, then drains what the client still sends until it closes: closing a socket
// with unread input sends a reset, which can destroy the answer still in flight.
void Gate::finish(Conn& c) {
  if (shutdown(c.cfd, SHUT_WR) != 0) return close_conn(c);
  c.st = Conn::St::Lingering;
  c.deadline = now() + kLingerSeconds;
  update_interest(c);
}

void Gate::update_interest(Conn& c) {
  if (c.dead) return;
  const uint32_t want_c = EPOLLIN | EPOLLRDHUP | (c.st == Conn::St::Relaying && c.pending() > 0 ? EPOLLOUT : 0u);
  uint32_t want_b = 0;  // none while paused: a hung-up backend would otherwise wake us forever
  if (c.bfd >= 0 && c.backend_off < c.to_backend.size()) want_b |= EPOLLOUT;
  if (c.bfd >= 0 && c.pending() < kMaxPending) want_b |= EPOLLIN | EPOLLRDHUP;
  auto watch = [&](int fd, uint32_t& have, uint32_t want, uint64_t tag) {
    if (fd < 0 || have == want) return true;
    epoll_event ev{want, {.u64 = tag}};
    const int op = want == 0 ? EPOLL_CTL_DEL : have == 0 ? EPOLL_CTL_ADD : EPOLL_CTL_MOD;
    if (epoll_ctl(epoll_fd_, op, fd, &ev) != 0) return false;
    have = want;
    return true;
  };
  const uint64_t tag = reinterpret_cast<uintptr_t>(&c);
  if (!watch(c.cfd, c.cev, want_c, tag) || !watch(c.bfd, c.bev, want_b, tag | 1)) close_conn(c);
}

void Gate::close_conn(Conn& c) {
  if (c.dead) return;
  c.close_backend();
  close(c.cfd);
  c.cfd = -1, c.dead = true;
  --open_;
  if (c.id != 0) {
    std::lock_guard<std::mutex> lock(live_mu_);
    live_.erase(c.id);
  }
  const size_t i = c.index;  // freed after this loop turn: events already fetched may name it
  dead_.push_back(std::move(conns_[i]));
  if (i + 1 != conns_.size()) conns_[i] = std::move(conns_.back()), conns_[i]->index = i;
  conns_.pop_back();
}

void Gate::expire(double t) {
  if (accept_paused_) {
    epoll_event ev{EPOLLIN, {.u64 = kListenTag}};
    accept_paused_ = epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, listen_fd_, &ev) != 0;
  }
  for (size_t i = conns_.size(); i-- > 0;) {  // closing moves the last slot here: already seen
    Conn& c = *conns_[i];
    const bool due = t >= c.deadline;
    if (c.st == Conn::St::Reading && due && c.reader.received() == 0) close_conn(c);  // it never said anything
    else if (c.st == Conn::St::Reading && due)
      refuse(c, 408, "the request did not arrive within " + std::to_string(opts_.request_seconds) + " seconds");
    else if (c.st == Conn::St::Waiting && due) refuse(c, 503, "the server is busy; try again shortly");
    else if (c.st == Conn::St::Relaying && c.pending() > 0 && t - c.progress >= kStallSeconds) close_conn(c);
    else if (c.st == Conn::St::Lingering && due) close_conn(c);
  }
}

}  // namespace brisk::server
