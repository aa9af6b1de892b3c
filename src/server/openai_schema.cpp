#include "server/openai_schema.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "base/error.hpp"
#include "base/random_id.hpp"
#include "server/request_checks.hpp"
#include "server/structured_output.hpp"
#include "base/utf8.hpp"

namespace brisk::server {
namespace {

double number(const ojson& body, const char* key, double lo, double hi, double fallback) {
  const ojson* v = json_field(body, key);
  if (!v) return fallback;
  if (!v->is_number()) bad_field(key, std::string("'") + key + "' must be a number");
  const double x = v->get<double>();
  if (!std::isfinite(x) || x < lo || x > hi)
    bad_field(key, std::string("'") + key + "' must be between " + std::to_string(lo) + " and " + std::to_string(hi));
  return x;
}

int64_t integer(const ojson& body, const char* key, int64_t lo, int64_t hi, int64_t fallback) {
  const ojson* v = json_field(body, key);
  if (!v) return fallback;
  if (!v->is_number_integer() && !v->is_number_unsigned()) bad_field(key, std::string("'") + key + "' must be an integer");
  if (v->is_number_unsigned() && v->get<uint64_t>() > uint64_t(INT64_MAX))
    bad_field(key, std::string("'") + key + "' is out of range");
  const int64_t x = v->get<int64_t>();
  if (x < lo || x > hi)
    bad_field(key, std::string("'") + key + "' must be between " + std::to_string(lo) + " and " + std::to_string(hi));
  return x;
}

bool boolean(const ojson& body, const char* key, bool fallback) {
  const ojson* v = json_field(body, key);
  if (!v) return fallback;
  if (!v->is_boolean()) bad_field(key, std::string("'") + key + "' must be true or false");
  return v->get<bool>();
}

std::vector<std::string> stop_strings(const ojson& body) {
  const ojson* v = json_field(body, "stop");
  if (!v) return {};
  if (v->is_string()) return {v->get<std::string>()};
  if (!v->is_array()) bad_field("stop", "'stop' must be a string or a list of strings");
  if (v->size() > 16) bad_field("stop", "at most 16 stop strings");
  std::vector<std::string> out;
  for (const auto& s : *v) {
    if (!s.is_string()) bad_field("stop", "'stop' must be a string or a list of strings");
    out.push_back(s.get<std::string>());
  }
  return out;
}

// Chat messages as templates expect them: role and content as strings (a list of text
// parts joined), other fields (tool_calls, name, tool_call_id) passed through.
ojson normalize_messages(const ojson& body) {
  const ojson* v = json_field(body, "messages");
  if (!v) bad_field("messages", "'messages' is required");
  if (!v->is_array() || v->empty()) bad_field("messages", "'messages' must be a non-empty list");
  ojson out = ojson::array();
  for (const auto& m : *v) {
    if (!m.is_object()) bad_field("messages", "each message must be an object");
    const ojson* role = json_field(m, "role");
    if (!role || !role->is_string()) bad_field("messages", "each message needs a 'role' string");
    std::string r = role->get<std::string>();
    if (r == "developer") r = "system";
    if (r != "system" && r != "user" && r != "assistant" && r != "tool")
      bad_field("messages", "unknown role '" + r + "' (system, user, assistant, tool)");
    ojson msg = m;
    msg["role"] = r;
    const ojson* content = json_field(m, "content");
    std::string text;
    if (content && content->is_string()) {
      text = content->get<std::string>();
    } else if (content && content->is_array()) {
      for (const auto& part : *content) {
        if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") || !part["text"].is_string())
          bad_field("messages", "only text content parts are supported");
        text += part["text"].get<std::string>();
      }
    } else if (content) {
      bad_field("messages", "message content must be a string or a list of text parts");
    } else if (r != "assistant") {
      bad_field("messages", "a " + r + " message needs 'content'");
    }
    msg["content"] = text;
    out.push_back(std::move(msg));
  }
  return out;
}

// The prompt of a chat request: its messages with the model's template, the tools (unless
// tool_choice is "none") and chat_template_kwargs as template variables. Notes in r how the
// answer is to be read.
std::string render_chat_prompt(const ojson& body, const Engine& engine, const PromptLimits& limits, ApiRequest& r) {
  ojson extra = ojson::object();
  if (const ojson* kw = json_field(body, "chat_template_kwargs")) {
    if (!kw->is_object()) bad_field("chat_template_kwargs", "'chat_template_kwargs' must be an object");
    extra = *kw;
  }
  if (ojson tools = checked_tools(body); !tools.is_null()) {
    for (const ojson& t : tools) r.tool_names.push_back(t["function"]["name"].get<std::string>());
    extra["tools"] = std::move(tools);
  }
  const std::string text = engine.render_chat(dump(normalize_messages(body)), dump(extra), limits.cancel);
  r.format = engine.chat_format();
  r.parse_answer = !r.tool_names.empty() || r.format.reasoning;
  r.reasoning_open = prompt_opens_reasoning(r.format, text);
  return text;
}

}  // namespace

ojson parse_body(const std::string& body) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < body.size(); ++i) {
    const char c = body[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth)
        throw Error(ErrorCode::kInvalidArgument, "the JSON nests deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  try {
    return ojson::parse(body);
  } catch (const ojson::exception& e) {
    throw Error(ErrorCode::kInvalidArgument, std::string("the body is not valid JSON: ") + e.what());
  }
}

// OpenAI's logit_bias: {"token id": bias in [-100, 100]}.
std::vector<std::pair<int32_t, float>> logit_bias(const ojson& body, int64_t vocab) {
  std::vector<std::pair<int32_t, float>> out;
  const ojson* lb = json_field(body, "logit_bias");
  if (!lb) return out;
  if (!lb->is_object()) bad_field("logit_bias", "'logit_bias' must be an object of token ids to biases");
  for (const auto& [key, value] : lb->items()) {
    int64_t id = -1;
    const bool digits = !key.empty() && key.size() <= 10 && key.find_first_not_of("0123456789") == std::string::npos;
    if (digits) id = std::stoll(key);
    if (id < 0 || id >= vocab) bad_field("logit_bias", "'logit_bias' key '" + key + "' is not a token id of this model");
    if (!value.is_number()) bad_field("logit_bias", "'logit_bias' values must be numbers");
    const double b = value.get<double>();
    if (!(b >= -100 && b <= 100)) bad_field("logit_bias", "'logit_bias' values must be in [-100, 100]");
    out.emplace_back(int32_t(id), float(b));
  }
  return out;
}

ApiRequest parse_request(Endpoint endpoint, const ojson& body, const Engine& engine, const PromptLimits& limits) {
  const int64_t context = engine.options().context;
  const int64_t vocab = engine.model_info().vocab;
  if (!body.is_object()) bad_field("", "the request body must be a JSON object");
  ApiRequest r;
  r.endpoint = endpoint;
  if (const ojson* m = json_field(body, "model")) {
    if (!m->is_string()) bad_field("model", "'model' must be a string");
    r.model = m->get<std::string>();
  }
  if (integer(body, "n", 1, 1, 1) != 1) bad_field("n", "only n = 1 is supported");
  refuse_unimplemented_fields(endpoint, body);
  const std::string param = endpoint == Endpoint::Chat ? "messages" : "prompt";
  if (endpoint == Endpoint::Chat) {
    const std::string text = render_chat_prompt(body, engine, limits, r);
    check_prompt_bytes(text.size(), limits.bytes_per_token, context, param);
    r.prompt = engine.tokenize(text, /*add_special=*/false, /*parse_special=*/true);
  } else {
    const ojson* p = json_field(body, "prompt");
    if (!p) bad_field("prompt", "'prompt' is required");
    if (p->is_string()) {
      check_prompt_bytes(p->get_ref<const std::string&>().size(), limits.bytes_per_token, context, param);
      r.prompt = engine.tokenize(p->get<std::string>(), true, true);
    } else if (p->is_array() && !p->empty() && std::all_of(p->begin(), p->end(), [](const ojson& x) { return x.is_number_integer(); })) {
      for (const auto& x : *p) {
        const int64_t id = x.get<int64_t>();
        if (id < 0 || id >= vocab) bad_field("prompt", "token id " + std::to_string(id) + " is out of range");
        r.prompt.push_back(int32_t(id));
      }
    } else {
      bad_field("prompt", "'prompt' must be a string or a list of token ids (one prompt per request)");
    }
    if (boolean(body, "echo", false)) bad_field("echo", "'echo' is not supported");
    if (json_field(body, "suffix")) bad_field("suffix", "'suffix' is not supported");
  }
  if (r.prompt.empty()) bad_field(param, "the prompt is empty");
  check_prompt_tokens(r.prompt.size(), context, param);

  // Token budget: OpenAI's names for it; chat defaults to the rest of the context.
  // (blocks are taken as a sequence grows, so the default costs no memory up front; it is
  // bounded by the whole KV pool, which one sequence may not outgrow)
  const EngineOptions& eo = engine.options();
  const int64_t positions = std::min<int64_t>(context, eo.kv_blocks * eo.kv_block_size);
  const int64_t room = std::max<int64_t>(1, positions - int64_t(r.prompt.size()));
  int64_t max_tokens = endpoint == Endpoint::Chat ? room : 16;
  max_tokens = integer(body, "max_tokens", 1, INT32_MAX, max_tokens);
  max_tokens = integer(body, "max_completion_tokens", 1, INT32_MAX, max_tokens);
  r.opts.max_tokens = int(std::min<int64_t>(max_tokens, INT32_MAX));

  SamplingParams& sp = r.opts.sampling;  // OpenAI's defaults: plain sampling at temperature 1
  sp.temperature = float(number(body, "temperature", 0, 2, 1));
  sp.top_p = float(number(body, "top_p", 0, 1, 1));
  if (sp.top_p <= 0.f) bad_field("top_p", "'top_p' must be greater than 0");
  sp.top_k = int(integer(body, "top_k", 0, 1 << 20, 0));
  sp.min_p = float(number(body, "min_p", 0, 1, 0));
  sp.presence_penalty = float(number(body, "presence_penalty", -2, 2, 0));
  sp.frequency_penalty = float(number(body, "frequency_penalty", -2, 2, 0));
  sp.repeat_penalty = float(number(body, "repetition_penalty", 0.01, 10, 1));
  sp.repeat_last_n = sp.presence_penalty != 0.f || sp.frequency_penalty != 0.f || sp.repeat_penalty != 1.f ? -1 : 0;
  if (json_field(body, "seed")) sp.seed = uint64_t(integer(body, "seed", INT64_MIN, INT64_MAX, 0));
  sp.logit_bias = logit_bias(body, vocab);
  r.opts.stop = stop_strings(body);
  r.opts.ignore_eos = boolean(body, "ignore_eos", false);  // an extension (llama.cpp's): for benchmarks
  r.opts.constraint = output_constraint(body);
  if (endpoint == Endpoint::Chat) {
    const ToolChoice choice = tool_choice(body);
    if (choice.mode == "required" || choice.mode == "function") {
      if (r.opts.constraint.kind != OutputConstraint::Kind::None)
        bad_field("tool_choice", "'tool_choice' \"" + choice.mode + "\" cannot be combined with 'response_format'");
      r.opts.constraint = engine.tool_call_constraint(dump(*json_field(body, "tools")), choice.function, choice.parallel);
    }
  }

  if (endpoint == Endpoint::Chat) {
    const bool lp = boolean(body, "logprobs", false);
    const int64_t top = integer(body, "top_logprobs", 0, 20, 0);
    if (json_field(body, "top_logprobs") && !lp) bad_field("top_logprobs", "'top_logprobs' needs 'logprobs': true");
    r.opts.logprobs = lp ? int(top) : -1;
  } else if (const ojson* lp = json_field(body, "logprobs")) {
    if (lp->is_boolean()) r.opts.logprobs = lp->get<bool>() ? 0 : -1;
    else r.opts.logprobs = int(integer(body, "logprobs", 0, 20, 0));
  }
  r.stream = boolean(body, "stream", false);
  if (const ojson* so = json_field(body, "stream_options")) {
    if (!so->is_object()) bad_field("stream_options", "'stream_options' must be an object");
    r.include_usage = boolean(*so, "include_usage", false);
  }
  return r;
}

ResponseBuilder::ResponseBuilder(Endpoint endpoint, std::string model_name, const Engine& engine)
    : endpoint_(endpoint),
      model_name_(std::move(model_name)),
      engine_(engine),
      id_(random_id(endpoint == Endpoint::Chat ? "chatcmpl-" : "cmpl-")),
      created_(std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
                   .count()) {}

TokenOut ResponseBuilder::token_out(const TokenEvent& e) const {
  TokenOut t;
  t.id = e.id;
  const std::string raw = engine_.token_bytes(e.id);
  t.text = utf8::lossy(raw);
  t.bytes.assign(raw.begin(), raw.end());
  t.logprob = e.logprob;
  t.top = e.top;
  return t;
}

namespace {
// OpenAI's usage object; cached_tokens counts the prompt tokens the prefix cache supplied.
ojson usage_json(const RequestResult& result) {
  return ojson{{"prompt_tokens", result.prompt_tokens},
               {"completion_tokens", result.completion_tokens},
               {"total_tokens", result.prompt_tokens + result.completion_tokens},
               {"prompt_tokens_details", ojson{{"cached_tokens", result.cached_tokens}}}};
}
}  // namespace

ojson ResponseBuilder::envelope(bool chunk) const {
  ojson j;
  j["id"] = id_;
  j["object"] = endpoint_ == Endpoint::Chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion";
  j["created"] = created_;
  j["model"] = model_name_;
  return j;
}

ojson ResponseBuilder::logprobs_json(const std::vector<TokenOut>& tokens, size_t text_offset) const {
  if (endpoint_ == Endpoint::Chat) {
    auto entry = [&](int32_t id, float lp) {
      const std::string raw = engine_.token_bytes(id);
      std::vector<int> bytes;
      for (unsigned char c : raw) bytes.push_back(c);
      ojson e;
      e["token"] = utf8::lossy(raw);
      e["logprob"] = lp;
      e["bytes"] = bytes;
      return e;
    };
    ojson content = ojson::array();
    for (const auto& t : tokens) {
      ojson e = entry(t.id, t.logprob);
      e["top_logprobs"] = ojson::array();
      for (const auto& [id, lp] : t.top) e["top_logprobs"].push_back(entry(id, lp));
      content.push_back(std::move(e));
    }
    return ojson{{"content", content}};
  }
  ojson out{{"tokens", ojson::array()}, {"token_logprobs", ojson::array()}, {"top_logprobs", ojson::array()},
            {"text_offset", ojson::array()}};
  size_t offset = text_offset;
  for (const auto& t : tokens) {
    out["tokens"].push_back(t.text);
    out["token_logprobs"].push_back(t.logprob);
    ojson top = ojson::object();
    for (const auto& [id, lp] : t.top) top[utf8::lossy(engine_.token_bytes(id))] = lp;
    out["top_logprobs"].push_back(std::move(top));
    out["text_offset"].push_back(offset);
    offset += t.text.size();
  }
  return out;
}

ojson ResponseBuilder::complete(const std::string& text, const std::vector<TokenOut>& tokens, bool logprobs,
                                const RequestResult& result) const {
  ojson j = envelope(false);
  ojson choice;
  if (endpoint_ == Endpoint::Chat) {
    choice["index"] = 0;
    choice["message"] = ojson{{"role", "assistant"}, {"content", text}};
  } else {
    choice["text"] = text;
    choice["index"] = 0;
  }
  choice["logprobs"] = logprobs ? logprobs_json(tokens, 0) : ojson(nullptr);
  choice["finish_reason"] = result.finish_reason;
  j["choices"] = ojson::array({choice});
  j["usage"] = usage_json(result);
  return j;
}

ojson ResponseBuilder::complete_chat(const ChatMessage& m, const std::vector<TokenOut>& tokens, bool logprobs,
                                     const RequestResult& result) const {
  ojson j = complete(m.content, tokens, logprobs, result);
  ojson& choice = j["choices"][0];
  ojson& message = choice["message"];
  if (!m.reasoning.empty()) message["reasoning_content"] = m.reasoning;
  if (!m.tool_calls.empty()) {
    if (m.content.empty()) message["content"] = nullptr;
    ojson calls = ojson::array();
    for (const ToolCall& c : m.tool_calls)
      calls.push_back(ojson{{"id", c.id}, {"type", "function"}, {"function", ojson{{"name", c.name}, {"arguments", c.arguments}}}});
    message["tool_calls"] = std::move(calls);
    if (result.finish_reason == "stop") choice["finish_reason"] = "tool_calls";
  }
  return j;
}

ojson ResponseBuilder::delta_chunk(const ChatDelta& d, const std::vector<TokenOut>& tokens, bool logprobs) const {
  ojson j = text_chunk("", tokens, logprobs);
  ojson& delta = j["choices"][0]["delta"];
  delta = ojson::object();
  switch (d.kind) {
    case ChatDelta::Kind::kContent: delta["content"] = d.text; break;
    case ChatDelta::Kind::kReasoning: delta["reasoning_content"] = d.text; break;
    case ChatDelta::Kind::kToolCall:
      delta["tool_calls"] = ojson::array({ojson{{"index", d.index}, {"id", d.id}, {"type", "function"},
                                                {"function", ojson{{"name", d.name}, {"arguments", ""}}}}});
      break;
    case ChatDelta::Kind::kToolArguments:
      delta["tool_calls"] = ojson::array({ojson{{"index", d.index}, {"function", ojson{{"arguments", d.text}}}}});
      break;
  }
  return j;
}

ojson ResponseBuilder::first_chunk() const {
  ojson j = envelope(true);
  ojson choice;
  choice["index"] = 0;
  if (endpoint_ == Endpoint::Chat) choice["delta"] = ojson{{"role", "assistant"}, {"content", ""}};
  else choice["text"] = "";
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = nullptr;
  j["choices"] = ojson::array({choice});
  return j;
}

ojson ResponseBuilder::text_chunk(const std::string& text, const std::vector<TokenOut>& tokens, bool logprobs) const {
  ojson j = envelope(true);
  ojson choice;
  choice["index"] = 0;
  if (endpoint_ == Endpoint::Chat) choice["delta"] = ojson{{"content", text}};
  else choice["text"] = text;
  choice["logprobs"] = logprobs ? logprobs_json(tokens, 0) : ojson(nullptr);
  choice["finish_reason"] = nullptr;
  j["choices"] = ojson::array({choice});
  return j;
}

ojson ResponseBuilder::final_chunk(const std::string& finish_reason) const {
  ojson j = envelope(true);
  ojson choice;
  choice["index"] = 0;
  if (endpoint_ == Endpoint::Chat) choice["delta"] = ojson::object();
  else choice["text"] = "";
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = finish_reason;
  j["choices"] = ojson::array({choice});
  return j;
}

ojson ResponseBuilder::usage_chunk(const RequestResult& result) const {
  ojson j = envelope(true);
  j["choices"] = ojson::array();
  j["usage"] = usage_json(result);
  return j;
}

std::string dump(const ojson& j) { return j.dump(-1, ' ', false, ojson::error_handler_t::replace); }

ojson error_body(const std::string& message, const std::string& type, const std::string& param,
                 const std::string& code) {
  return ojson{{"error",
                ojson{{"message", message},
                      {"type", type},
                      {"param", param.empty() ? ojson(nullptr) : ojson(param)},
                      {"code", code.empty() ? ojson(nullptr) : ojson(code)}}}};
}

int http_status(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kUnsupported:
    case ErrorCode::kLimit: return 400;
    default: return 500;  // kFormat here means the model's own files (its chat template)
  }
}

}  // namespace brisk::server
