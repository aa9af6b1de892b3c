#include "server/http_server.hpp"

#include <httplib.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <condition_variable>
#include <deque>
#include <mutex>

#include "base/error.hpp"
#include "server/openai_schema.hpp"

namespace brisk::server {
namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

void send_error(httplib::Response& res, int status, const std::string& message, const std::string& type,
                const std::string& param = {}, const std::string& code = {}) {
  res.status = status;
  res.set_content(dump(error_body(message, type, param, code)), "application/json");
}

const char* error_type(int status) {
  if (status == 401) return "authentication_error";
  if (status == 404) return "not_found_error";
  if (status == 429 || status == 503) return "overloaded_error";
  return status < 500 ? "invalid_request_error" : "server_error";
}

// What the engine thread hands a connection: token events, then the result.
struct Channel {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<TokenEvent> events;
  bool done = false;
  RequestResult result;
  double t_submit = 0, t_last = 0;
};

std::string sse(const ojson& j) { return "data: " + dump(j) + "\n\n"; }

// The client-visible end of a request that did not finish normally.
ojson failure(const RequestResult& r) {
  const std::string why = r.finish_reason == "cancelled" ? "the request was cancelled (the server is shutting down)"
                                                         : "generation failed: " + r.error;
  return error_body(why, "server_error");
}

}  // namespace

HttpServer::HttpServer(ServerOptions opts) : opts_(std::move(opts)), http_(std::make_unique<httplib::Server>()) {
  routes();
}

HttpServer::~HttpServer() { stop(); }

void HttpServer::attach(Model& model, Scheduler& scheduler) {
  scheduler_ = &scheduler;
  model_ = &model;
}

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

  s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (opts_.api_key.empty() || req.path.rfind("/v1/", 0) != 0) return httplib::Server::HandlerResponse::Unhandled;
    const std::string auth = req.get_header_value("Authorization");
    if (auth == "Bearer " + opts_.api_key) return httplib::Server::HandlerResponse::Unhandled;
    send_error(res, 401, auth.empty() ? "missing API key: send 'Authorization: Bearer <key>'" : "invalid API key",
               "authentication_error", {}, "invalid_api_key");
    metrics_.request_done(req.path, 401);
    return httplib::Server::HandlerResponse::Handled;
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
    metrics_.request_done(req.path, res.status);
  });
  s.set_exception_handler([this](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "internal error";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    }
    send_error(res, 500, what, "server_error");
    metrics_.request_done(req.path, 500);
  });

  s.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    const bool ready = model_.load() != nullptr;
    res.status = ready ? 200 : 503;
    res.set_content(ready ? R"({"status":"ok"})" : R"({"status":"loading"})", "application/json");
  });
  s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    Scheduler* sch = scheduler_.load();
    res.set_content(metrics_.render(sch ? sch->stats() : SchedulerStats{}, model_.load() != nullptr),
                    "text/plain; version=0.0.4");
  });
  s.Get("/v1/models", [this](const httplib::Request& req, httplib::Response& res) {
    ojson list{{"object", "list"}, {"data", ojson::array()}};
    if (model_.load())
      list["data"].push_back(ojson{{"id", opts_.model_name}, {"object", "model"}, {"created", 0}, {"owned_by", "brisk"}});
    res.set_content(dump(list), "application/json");
    metrics_.request_done(req.path, 200);
  });

  auto generate = [this](Endpoint endpoint, const httplib::Request& req, httplib::Response& res) {
    const std::string path = req.path;
    Model* model = model_.load();
    Scheduler* sched = scheduler_.load();
    if (!model || !sched) {
      res.set_header("Retry-After", std::to_string(opts_.retry_after_seconds));
      send_error(res, 503, "the model is still loading", "overloaded_error");
      return metrics_.request_done(path, 503);
    }
    ApiRequest api;
    try {
      api = parse_request(endpoint, parse_body(req.body), *model, sched->options().context);
    } catch (const Error& e) {
      send_error(res, http_status(e.code()), e.message(), error_type(http_status(e.code())), e.where());
      return metrics_.request_done(path, http_status(e.code()));
    }
    auto request = std::make_shared<Request>();
    auto ch = std::make_shared<Channel>();
    request->prompt = api.prompt;
    request->opts = api.opts;
    request->logprobs = api.logprobs;
    request->on_token = [this, ch](const TokenEvent& e) {
      std::lock_guard<std::mutex> lock(ch->mu);
      const double t = now();
      if (ch->t_last == 0) metrics_.first_token(t - ch->t_submit);
      else metrics_.inter_token(t - ch->t_last);
      ch->t_last = t;
      ch->events.push_back(e);
      ch->cv.notify_one();
    };
    request->on_done = [this, ch](const RequestResult& r) {
      metrics_.tokens(r.prompt_tokens, r.completion_tokens);
      std::lock_guard<std::mutex> lock(ch->mu);
      ch->result = r;
      ch->done = true;
      ch->cv.notify_one();
    };
    ch->t_submit = now();
    try {
      if (!sched->submit(request)) {
        res.set_header("Retry-After", std::to_string(opts_.retry_after_seconds));
        send_error(res, 503, "the server is at capacity: every slot is busy and the queue is full; retry later",
                   "overloaded_error");
        return metrics_.request_done(path, 503);
      }
    } catch (const Error& e) {  // a request that can never run (a prompt longer than the context)
      send_error(res, http_status(e.code()), e.message(), error_type(http_status(e.code())), e.where());
      return metrics_.request_done(path, http_status(e.code()));
    }
    metrics_.request_done(path, 200);

    // The body is written as the tokens come, by this connection's thread. Waiting wakes at
    // least once a second to write a keep-alive (an SSE comment, or JSON-neutral whitespace),
    // so a client that has gone is noticed even before its first token.
    auto builder = std::make_shared<ResponseBuilder>(endpoint, opts_.model_name, *model);
    struct Progress {
      bool started = false;
      std::string text;
      std::vector<TokenOut> tokens;
    };
    auto progress = std::make_shared<Progress>();
    const bool logprobs = api.logprobs >= 0, stream = api.stream, usage = api.include_usage;
    auto provider = [=](size_t, httplib::DataSink& sink) {
      std::deque<TokenEvent> events;
      bool done;
      RequestResult result;
      {
        std::unique_lock<std::mutex> lock(ch->mu);
        ch->cv.wait_for(lock, std::chrono::seconds(1), [&] { return !ch->events.empty() || ch->done; });
        events.swap(ch->events);
        done = ch->done;
        result = ch->result;
      }
      std::string out;
      if (stream && !progress->started) out += sse(builder->first_chunk());
      progress->started = true;
      for (const TokenEvent& e : events) {
        TokenOut t = builder->token_out(e);
        if (stream) {
          // One chunk per token, as OpenAI streams: a token that completes no character yet
          // (part of a UTF-8 sequence, or text held back for a stop string) has empty text.
          out += sse(builder->text_chunk(e.text, {t}, logprobs));
        } else {
          progress->text += e.text;
          progress->tokens.push_back(std::move(t));
        }
      }
      if (done) {
        const bool ok = result.finish_reason == "stop" || result.finish_reason == "length";
        if (stream) {
          if (!result.tail_text.empty()) out += sse(builder->text_chunk(result.tail_text, {}, false));
          out += ok ? sse(builder->final_chunk(result.finish_reason)) : sse(failure(result));
          if (ok && usage) out += sse(builder->usage_chunk(result));
          out += "data: [DONE]\n\n";
        } else {
          progress->text += result.tail_text;
          out += dump(ok ? builder->complete(progress->text, progress->tokens, logprobs, result) : failure(result));
        }
      } else if (events.empty() && out.empty()) {  // a second without news: is the client still there?
        out = stream ? ": keep-alive\n\n" : "\n";
      }
      if (out.empty()) return true;
      if (!sink.write(out.data(), out.size())) {
        request->cancelled = true;  // the client is gone: free its slot
        return false;
      }
      if (done) sink.done();
      return true;
    };
    res.set_chunked_content_provider(stream ? "text/event-stream" : "application/json", provider,
                                     [request](bool success) {
                                       if (!success) request->cancelled = true;
                                     });
    if (stream) res.set_header("Cache-Control", "no-cache");
  };
  s.Post("/v1/chat/completions",
         [generate](const httplib::Request& req, httplib::Response& res) { generate(Endpoint::Chat, req, res); });
  s.Post("/v1/completions",
         [generate](const httplib::Request& req, httplib::Response& res) { generate(Endpoint::Completion, req, res); });
}

}  // namespace brisk::server
