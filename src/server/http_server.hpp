// The OpenAI-compatible HTTP server (cpp-httplib): /v1/chat/completions and /v1/completions
// (whole or streamed as server-sent events), /v1/models, /health and /metrics. Each
// generation request is submitted to the Engine and its tokens flow back through a channel
// to the connection's thread; a client that goes away cancels its request, which frees the
// KV blocks at the engine's next step. Errors are OpenAI-style JSON with the right status.
// Clients reach it through the Gate (gate.hpp), which owns the public port, takes in whole
// requests without a thread per connection, and forwards them over a private Unix socket.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <thread>

#include "brisk/brisk.hpp"
#include "server/gate.hpp"
#include "server/metrics.hpp"
#include "server/openai_schema.hpp"

namespace httplib {
class Server;
struct Request;
struct Response;
}

namespace brisk::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string api_key;            // when set, /v1/* needs "Authorization: Bearer <key>"
  std::string model_name;         // what /v1/models and responses call the model
  size_t max_body_bytes = 4u << 20;
  int threads = 0;                // connection threads (0: enough for every slot and queue place)
  int request_seconds = 10;       // a request (head and body) must arrive within this
  size_t max_connections = 8192;  // open client connections; beyond, new ones get a 503
  int retry_after_seconds = 1;    // told to clients turned away when the queue is full
  // CORS (off when empty): the origin allowed to call the API from a browser, or "*".
  // Preflights (OPTIONS) are answered 204 with Access-Control-Allow-*; every response to a
  // request from that Origin carries Access-Control-Allow-Origin.
  std::string cors_origin;
};

class HttpServer {
 public:
  explicit HttpServer(ServerOptions opts);
  ~HttpServer();

  // Serving starts before the model is loaded: /health answers "loading" (503) and
  // generation requests 503 until attach().
  void attach(Engine& engine);
  // Binds the address; false (with the reason in *error) when it cannot.
  bool bind(std::string* error);
  // Serves until stop(); call after bind().
  void listen();
  // The first step of a shutdown, before the scheduler's: new generation requests get a 503
  // and chat templates still rendering give up. stop() does it too.
  void begin_stop() { stopping_.store(true); }
  void stop();
  int port() const { return bound_port_; }

 private:
  void routes();
  void generate(Endpoint endpoint, const httplib::Request& req, httplib::Response& res);  // http_generate.cpp
  void cors_headers(const httplib::Request& req, httplib::Response& res, bool preflight) const;
  // Whether the client of this forwarded request is still connected (the gate knows).
  bool client_connected(const httplib::Request& req) const;

  ServerOptions opts_;
  std::unique_ptr<httplib::Server> http_;
  std::atomic<Engine*> engine_{nullptr};
  std::atomic<bool> stopping_{false};     // shutdown: chat template renders in progress stop
  Metrics metrics_;
  std::unique_ptr<Gate> gate_;  // the public port (see gate.hpp)
  std::thread gate_thread_;
  std::string socket_dir_;      // holds httplib's private socket
  int bound_port_ = 0;
};

}  // namespace brisk::server
