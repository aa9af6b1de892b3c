// The generation endpoints: a request body becomes an Engine request whose tokens flow
// back through a channel. A stream is written as the tokens come (its 200 goes out first, so
// a failure after that is an error event before [DONE], as vLLM and OpenAI do); a whole
// response waits for the end, so its status is the outcome's: 200, or 503 when the request
// was cancelled (shutdown), 500 when generation failed - never 200 with an error body.
#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <functional>
#include <mutex>

#include "base/error.hpp"
#include "server/http_common.hpp"
#include "server/http_server.hpp"
#include "server/openai_schema.hpp"
#include "server/request_reader.hpp"

namespace brisk::server {
namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// What the engine thread hands a connection: token events, then the result.
struct Channel {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<TokenEvent> events;
  bool done = false;
  RequestResult result;
  double t_submit = 0, t_last = 0;

  // Waits up to `seconds` for news; moves the events out. True once the result is in.
  bool wait(double seconds, std::deque<TokenEvent>* out, RequestResult* result_out) {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return !events.empty() || done; });
    out->clear();
    out->swap(events);
    if (done) *result_out = result;
    return done;
  }
};

std::string sse(const ojson& j) { return "data: " + dump(j) + "\n\n"; }

bool finished_ok(const RequestResult& r) { return r.finish_reason == "stop" || r.finish_reason == "length"; }

// The status of a request that did not finish normally: cancelled only by a shutdown here
// (a client that leaves gets no answer at all), else the generation failed.
int failure_status(const RequestResult& r) { return r.finish_reason == "cancelled" ? 503 : 500; }

ojson failure(const RequestResult& r) {
  const int status = failure_status(r);
  const std::string why = status == 503 ? "the request was cancelled (the server is shutting down)"
                                        : "generation failed: " + r.error;
  return error_body(why, error_type(status));
}

// Waits for the end in the handler's thread, so that the status can say how it ended. The
// client is not written to meanwhile; the gate tells whether it is still there.
int answer_whole(const ApiRequest& api, RequestHandle& request, Channel& ch, const ResponseBuilder& builder,
                 const std::function<bool()>& client_here, httplib::Response& res) {
  std::string text;
  std::vector<TokenOut> tokens;
  std::deque<TokenEvent> events;
  RequestResult result;
  for (bool done = false; !done;) {
    done = ch.wait(0.25, &events, &result);
    for (const TokenEvent& e : events) {
      text += e.text;
      tokens.push_back(builder.token_out(e));
    }
    if (!done && !client_here()) {
      request.cancel();  // the client is gone: free its slot; nobody reads an answer
      send_error(res, 499, "the client closed the connection", "invalid_request_error");
      return 499;  // nginx's code for it: what the metrics count
    }
  }
  if (!finished_ok(result)) {
    res.status = failure_status(result);
    res.set_content(dump(failure(result)), "application/json");
    return res.status;
  }
  text += result.tail_text;
  const bool logprobs = api.opts.logprobs >= 0;
  if (api.parse_answer) {
    ChatOutputParser parser(api.format, api.tool_names, api.reasoning_open);
    std::vector<ChatDelta> deltas = parser.feed(text);
    for (ChatDelta& d : parser.finish()) deltas.push_back(std::move(d));
    res.set_content(dump(builder.complete_chat(ChatMessage::from(deltas), tokens, logprobs, result)), "application/json");
  } else {
    res.set_content(dump(builder.complete(text, tokens, logprobs, result)), "application/json");
  }
  return 200;
}

// The stream of a parsed chat answer: each token's text goes through the parser, and each
// delta that comes out is a chunk (the token's logprobs ride on its first).
struct ParsedStream {
  ChatOutputParser parser;
  bool called = false;  // a tool call went out: the finish reason is "tool_calls"

  std::string chunks(const ResponseBuilder& b, std::vector<ChatDelta> deltas, const std::vector<TokenOut>& tokens,
                     bool logprobs) {
    std::string out;
    if (deltas.empty() && logprobs && !tokens.empty()) out += sse(b.text_chunk("", tokens, true));
    for (size_t i = 0; i < deltas.size(); ++i) {
      called = called || deltas[i].kind == ChatDelta::Kind::kToolCall;
      out += sse(b.delta_chunk(deltas[i], i == 0 ? tokens : std::vector<TokenOut>{}, logprobs && i == 0));
    }
    return out;
  }
};

// Server-sent events as the tokens come. Waiting wakes at least once a second to write a
// keep-alive comment, so a client that has gone is noticed even before its first token.
void answer_stream(const ApiRequest& api, const std::shared_ptr<RequestHandle>& request, const std::shared_ptr<Channel>& ch,
                   const std::shared_ptr<ResponseBuilder>& builder, httplib::Response& res) {  auto started = std::make_shared<bool>(false);
  const bool logprobs = api.opts.logprobs >= 0, usage = api.include_usage;
  auto parsed = api.parse_answer
                    ? std::make_shared<ParsedStream>(ParsedStream{ChatOutputParser(api.format, api.tool_names, api.reasoning_open)})
                    : nullptr;
  auto provider = [=](size_t, httplib::DataSink& sink) {
    std::deque<TokenEvent> events;
    RequestResult result;
    const bool done = ch->wait(1.0, &events, &result);
    std::string out;
    if (!*started) out += sse(builder->first_chunk());
    *started = true;
    // One chunk per token, as OpenAI streams: a token that completes no character yet (part
    // of a UTF-8 sequence, or text held back for a stop string) has empty text.
    for (const TokenEvent& e : events) {
      if (parsed) out += parsed->chunks(*builder, parsed->parser.feed(e.text), {builder->token_out(e)}, logprobs);
      else out += sse(builder->text_chunk(e.text, {builder->token_out(e)}, logprobs));
    }
    if (done) {
      const bool ok = finished_ok(result);
      std::string reason = result.finish_reason;
      if (parsed) {
        out += parsed->chunks(*builder, parsed->parser.feed(result.tail_text), {}, false);
        out += parsed->chunks(*builder, parsed->parser.finish(), {}, false);
        if (parsed->called && reason == "stop") reason = "tool_calls";
      } else if (!result.tail_text.empty()) {
        out += sse(builder->text_chunk(result.tail_text, {}, false));
      }
      out += ok ? sse(builder->final_chunk(reason)) : sse(failure(result));
      if (ok && usage) out += sse(builder->usage_chunk(result));
      out += "data: [DONE]\n\n";
    } else if (out.empty()) {  // a second without news: is the client still there?
      out = ": keep-alive\n\n";
    }
    if (!sink.write(out.data(), out.size())) {
      request->cancel();  // the client is gone: free its slot
      return false;
    }
    if (done) sink.done();
    return true;
  };
  res.set_chunked_content_provider("text/event-stream", provider, [request](bool success) {
    if (!success) request->cancel();
  });
  res.set_header("Cache-Control", "no-cache");
}

}  // namespace

bool HttpServer::client_connected(const httplib::Request& req) const {
  const std::string id = req.get_header_value(std::string(kConnHeader).c_str());
  return id.empty() || !gate_ || gate_->connected(std::strtoull(id.c_str(), nullptr, 10));
}

void HttpServer::generate(Endpoint endpoint, const httplib::Request& req, httplib::Response& res) {
  const std::string path = req.path;
  Engine* engine = engine_.load();
  auto refuse = [&](int status, const std::string& message, const std::string& param = {}) {
    if (status == 503) res.set_header("Retry-After", std::to_string(opts_.retry_after_seconds));
    send_error(res, status, message, error_type(status), param);
    metrics_.request_done(path, status);
  };
  if (!engine) return refuse(503, "the model is still loading");
  if (stopping_.load()) return refuse(503, "the server is shutting down");
  ApiRequest api;
  try {
    api = parse_request(endpoint, parse_body(req.body), *engine, PromptLimits{engine->max_bytes_per_token(), &stopping_});
  } catch (const Error& e) {
    if (stopping_.load()) return refuse(503, "the server is shutting down");  // the render was abandoned
    return refuse(http_status(e.code()), e.message(), e.where());
  }
  auto ch = std::make_shared<Channel>();
  auto on_token = [this, ch](const TokenEvent& e) {
    std::lock_guard<std::mutex> lock(ch->mu);
    const double t = now();
    if (ch->t_last == 0) metrics_.first_token(t - ch->t_submit);
    else metrics_.inter_token(t - ch->t_last);
    ch->t_last = t;
    ch->events.push_back(e);
    ch->cv.notify_one();
  };
  auto on_done = [this, ch](const RequestResult& r) {
    metrics_.tokens(r.prompt_tokens, r.completion_tokens);
    std::lock_guard<std::mutex> lock(ch->mu);
    ch->result = r;
    ch->done = true;
    ch->cv.notify_one();
  };
  ch->t_submit = now();
  std::shared_ptr<RequestHandle> request;
  try {
    request = engine->submit(api.prompt, api.opts, on_token, on_done);
    if (!request) {
      if (stopping_.load()) return refuse(503, "the server is shutting down");
      return refuse(503, "the server is at capacity: every slot is busy and the queue is full; retry later");
    }
  } catch (const Error& e) {  // a request that can never run (more KV positions than the pool)
    return refuse(http_status(e.code()), e.message(), e.where());
  }
  auto builder = std::make_shared<ResponseBuilder>(endpoint, opts_.model_name, *engine);
  if (api.stream) {
    metrics_.request_done(path, 200);  // the status goes out before the tokens
    return answer_stream(api, request, ch, builder, res);
  }
  metrics_.request_done(path, answer_whole(api, *request, *ch, *builder, [&] { return client_connected(req); }, res));
}

}  // namespace brisk::server
