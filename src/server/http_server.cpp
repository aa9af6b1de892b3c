#include "server/http_server.hpp"

#include <httplib.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "base/error.hpp"
#include "server/http_common.hpp"
#include "server/openai_schema.hpp"
#include "server/request_checks.hpp"
#include "server/web_assets.hpp"

namespace brisk::server {

void send_error(httplib::Response& res, int status, const std::string& message, const std::string& type,
                const std::string& param, const std::string& code) {
  res.status = status;
  res.set_content(dump(error_body(message, type, param, code)), "application/json");
}

const char* error_type(int status) {
  if (status == 401) return "authentication_error";
  if (status == 404) return "not_found_error";
  if (status == 429 || status == 503) return "overloaded_error";
  return status < 500 ? "invalid_request_error" : "server_error";
}

namespace {
constexpr Route kRoutes[] = {{"/health", "GET, HEAD, OPTIONS", false},
                             {"/metrics", "GET, HEAD, OPTIONS", false},
                             {"/v1/models", "GET, HEAD, OPTIONS", false},
                             {"/v1/chat/completions", "POST, OPTIONS", true},
                             {"/v1/completions", "POST, OPTIONS", true}};
}  // namespace

const Route* find_route(const std::string& path) {
  for (const Route& r : kRoutes)
    if (path == r.path) return &r;
  return nullptr;
}

std::string route_label(const std::string& path) {
  const Route* r = find_route(path);
  return r ? r->path : "other";
}

HttpServer::HttpServer(ServerOptions opts) : opts_(std::move(opts)), http_(std::make_unique<httplib::Server>()) {
  routes();
}

HttpServer::~HttpServer() { stop(); }

void HttpServer::attach(Engine& engine) { engine_ = &engine; }

bool HttpServer::bind(std::string* error) {
  // httplib listens on a Unix socket in a private directory; the gate owns the public port.
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/brisk-serve-XXXXXX";
  if (!mkdtemp(dir.data())) {
    if (error) *error = "cannot make a private socket directory in " + dir + ": " + std::strerror(errno);
    return false;
  }
  socket_dir_ = dir;
  const std::string path = dir + "/http.sock";
  http_->set_address_family(AF_UNIX);
  if (!http_->bind_to_port(path, 80)) {
    if (error) *error = "cannot listen on the private socket " + path;
    return false;
  }
  GateOptions g;
  g.host = opts_.host;
  g.port = opts_.port;
  g.backend_path = path;
  g.request_seconds = opts_.request_seconds;
  g.max_body_bytes = opts_.max_body_bytes;
  g.max_connections = opts_.max_connections;
  g.on_refused = [this](int status) { metrics_.request_done("gate", status); };
  gate_ = std::make_unique<Gate>(g);
  if (!gate_->bind(error)) return false;
  bound_port_ = gate_->port();
  return true;
}

void HttpServer::listen() {
  gate_thread_ = std::thread([this] { gate_->run(); });
  http_->listen_after_bind();
}

void HttpServer::stop() {
  stopping_.store(true);  // a chat template still rendering gives up (its client gets a 503)
  // The gate first stops taking connections and delivers what the server behind still
  // sends (each running request's end); then the server behind stops.
  if (gate_thread_.joinable()) {
    gate_->drain(10);
    gate_thread_.join();
  }
  if (http_ && http_->is_running()) http_->stop();
  if (!socket_dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(socket_dir_, ec);
    socket_dir_.clear();
  }
}

void HttpServer::routes() {
  httplib::Server& s = *http_;
  const size_t threads = opts_.threads > 0 ? size_t(opts_.threads) : 64;
  s.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  s.set_payload_max_length(opts_.max_body_bytes);
  // Only the gate connects, with whole requests and one request per connection.
  s.set_read_timeout(5, 0);
  s.set_keep_alive_max_count(1);

  // Before routing: a wrong method on a known path (405 with Allow), OPTIONS (204 with
  // Allow, and CORS headers for a preflight), then the API key.
  s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    const Route* route = find_route(req.path);
    if (route && req.method == "OPTIONS") {
      res.status = 204;
      res.set_header("Allow", route->allow);
      cors_headers(req, res, true);
      return httplib::Server::HandlerResponse::Handled;
    }
    if (route && (route->post ? req.method != "POST" : req.method != "GET" && req.method != "HEAD")) {
      res.set_header("Allow", route->allow);
      send_error(res, 405, "the method " + req.method + " is not allowed on " + route->path + " (allowed: " +
                               route->allow + ")", "invalid_request_error");
      metrics_.request_done(route->path, 405);
      return httplib::Server::HandlerResponse::Handled;
    }
    if (opts_.api_key.empty() || req.path.rfind("/v1/", 0) != 0) return httplib::Server::HandlerResponse::Unhandled;
    const std::string auth = req.get_header_value("Authorization");
    if (auth == "Bearer " + opts_.api_key) return httplib::Server::HandlerResponse::Unhandled;
    send_error(res, 401, auth.empty() ? "missing API key: send 'Authorization: Bearer <key>'" : "invalid API key",
               "authentication_error", {}, "invalid_api_key");
    metrics_.request_done(route_label(req.path), 401);
    return httplib::Server::HandlerResponse::Handled;
  });
  s.set_post_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    cors_headers(req, res, false);
  });
  // Statuses httplib sets itself (413 for a body over the limit, 404, 400 for a bad request
  // line) get an OpenAI-style body too.
  s.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    const std::string msg =
        res.status == 404   ? "no route " + req.method + " " + req.path
        : res.status == 413 ? "the request body is larger than " + std::to_string(opts_.max_body_bytes) + " bytes"
        : res.status == 414 ? "the request line is too long"
        : res.status == 400 ? "the request could not be read (malformed, or its headers are over 8 KiB)"
                            : "the request failed";
    send_error(res, res.status, msg, error_type(res.status));
    metrics_.request_done(route_label(req.path), res.status);
  });
  s.set_exception_handler([this](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "internal error";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    }
    send_error(res, 500, what, "server_error");
    metrics_.request_done(route_label(req.path), 500);
  });

  s.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    const bool ready = engine_.load() != nullptr;
    res.status = ready ? 200 : 503;
    res.set_content(ready ? R"({"status":"ok"})" : R"({"status":"loading"})", "application/json");
  });
  s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    Engine* e = engine_.load();
    res.set_content(metrics_.render(e ? e->stats() : EngineStats{}, e != nullptr),
                    "text/plain; version=0.0.4");
  });
  s.Get("/v1/models", [this](const httplib::Request& req, httplib::Response& res) {
    ojson list{{"object", "list"}, {"data", ojson::array()}};
    if (engine_.load())
      list["data"].push_back(ojson{{"id", opts_.model_name}, {"object", "model"}, {"created", 0}, {"owned_by", "brisk"}});
    res.set_content(dump(list), "application/json");
    metrics_.request_done(req.path, 200);
  });

  // The chat page and its files (no API key needed to load it: the page asks for one when
  // the API answers 401). The policy keeps any script but the page's own from running.
  s.Get(R"(/|/static/[A-Za-z0-9._-]+)", [](const httplib::Request& req, httplib::Response& res) {
    const WebAsset* a = find_web_asset(req.path);
    if (!a) {
      res.status = 404;
      return;
    }
    res.set_content(reinterpret_cast<const char*>(a->data), a->size, std::string(a->content_type) + "; charset=utf-8");
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Content-Type-Options", "nosniff");
    res.set_header("Content-Security-Policy",
                   "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'");
  });
  s.Post("/v1/chat/completions",
         [this](const httplib::Request& req, httplib::Response& res) { generate(Endpoint::Chat, req, res); });
  s.Post("/v1/completions",
         [this](const httplib::Request& req, httplib::Response& res) { generate(Endpoint::Completion, req, res); });
}

// Access-Control-Allow-Origin on every answer to an allowed Origin (post-routing); a
// preflight (OPTIONS) also gets the methods and headers it may use.
void HttpServer::cors_headers(const httplib::Request& req, httplib::Response& res, bool preflight) const {
  const std::string origin = req.get_header_value("Origin");
  if (opts_.cors_origin.empty() || origin.empty() || (opts_.cors_origin != "*" && origin != opts_.cors_origin)) return;
  if (preflight) {
    const Route* route = find_route(req.path);
    res.set_header("Access-Control-Allow-Methods", route ? route->allow : "GET, POST, OPTIONS");
    // The headers the browser asks for (the openai clients send several X-Stainless-* ones).
    const std::string asked = req.get_header_value("Access-Control-Request-Headers");
    res.set_header("Access-Control-Allow-Headers", asked.empty() ? "Authorization, Content-Type" : asked);
    res.set_header("Access-Control-Max-Age", "600");
    return;
  }
  res.set_header("Access-Control-Allow-Origin", opts_.cors_origin == "*" ? "*" : origin);
  if (opts_.cors_origin != "*") res.set_header("Vary", "Origin");
}

}  // namespace brisk::server
