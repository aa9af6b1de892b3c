// The server's front door. cpp-httplib gives every connection a thread for as long as it
// lives, so a client that connects and sends nothing, or trickles its headers a byte at a
// time (slow-loris), holds a thread; a few hundred such clients starve every other request.
// The gate stands in front: one epoll thread owns the public socket and every connection,
// and only a complete request (head and body, within a deadline and size caps) is passed on
// to the HTTP server behind it, over a private Unix socket, marked `Connection: close`. The
// response (streamed or not) is relayed back as it comes, with backpressure; when either end
// goes away so does the other, so a disconnecting client still cancels its request.
// Thousands of idle or slow connections cost the gate a few kilobytes each and no thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace brisk::server {

struct GateOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                // 0: any free port
  std::string backend_path;       // the Unix socket the HTTP server listens on
  int request_seconds = 10;       // a request's head and body must arrive within this
  size_t max_head_bytes = 16384;  // request line and headers
  size_t max_body_bytes = 4u << 20;
  size_t max_connections = 8192;  // open client connections; beyond, new ones get a 503
  // Called (from the gate's thread) for every request the gate answers itself.
  std::function<void(int status)> on_refused;
};

class Gate {
 public:
  explicit Gate(GateOptions opts);
  ~Gate();
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;

  // Binds the public address; false with the reason in *error when it cannot.
  bool bind(std::string* error);
  int port() const { return port_; }
  // Runs the event loop until stop(). Call after bind().
  void run();
  // From any thread: closes every connection and ends run().
  void stop();
  // From any thread: stops taking connections and ends run() once every forwarded request's
  // response has been relayed (at most drain_seconds later); requests still arriving are
  // dropped. For a graceful shutdown: the server behind ends each request, the gate delivers it.
  void drain(double drain_seconds);
  // From any thread: whether the client of forwarded request `id` (the X-Brisk-Conn header
  // the gate adds) is still connected. A handler that waits for a whole response before
  // answering has no socket write to tell it the client left; this does.
  bool connected(uint64_t id) const;

 private:
  struct Conn;
  void accept_all();
  void on_client(Conn& c, uint32_t events);
  void on_backend(Conn& c, uint32_t events);
  void read_client(Conn& c);
  bool take_request(Conn& c, std::string_view bytes);  // false: answered, or the request is not complete yet
  void refuse(Conn& c, int status, const std::string& message);
  void start_relay(Conn& c);
  void read_backend(Conn& c);
  void backend_done(Conn& c);
  void flush_to_client(Conn& c);
  void flush_to_backend(Conn& c);
  void finish(Conn& c);
  void update_interest(Conn& c);
  void close_conn(Conn& c);
  void retry_waiting();
  void expire(double now);
  bool drained(double now);
  void stop_wake();  // wakes run() to look at its flags  // draining, and nothing is left to relay (or time is up)

  GateOptions opts_;
  int listen_fd_ = -1, epoll_fd_ = -1, wake_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<double> drain_seconds_{-1};  // >= 0: drain() was called
  double drain_until_ = 0;                 // run()'s deadline once draining
  size_t open_ = 0, waiting_ = 0;  // waiting_: connections retrying a full backend queue
  bool accept_paused_ = false;      // out of file descriptors: accepting resumes next sweep
  double next_sweep_ = 0;
  std::vector<std::unique_ptr<Conn>> conns_;  // open; Conn::index is the slot
  std::vector<std::unique_ptr<Conn>> dead_;   // closed during this loop turn; freed after it
  uint64_t next_id_ = 1;
  mutable std::mutex live_mu_;
  std::unordered_set<uint64_t> live_;  // forwarded requests whose client is connected
};

}  // namespace brisk::server
