// brisk._brisk: the Python bindings over include/brisk/ (the package's brisk.LLM wraps them).
// Everything that waits on the engine (loading, submitting, waiting for tokens) runs with
// the GIL released, so Python threads get real concurrency; brisk::Error becomes the
// exception class of its code from brisk._errors, carrying the message and the field.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "brisk/brisk.hpp"
#include "request_stream.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace brisk::python {
namespace {

using Release = nb::call_guard<nb::gil_scoped_release>;

void translate_errors(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const Error& e) {
    nb::object exc = nb::module_::import_("brisk._errors").attr("from_code")(error_code_name(e.code()), e.message(), e.where());
    PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
  }
}

// An engine and the model it owns.
struct PyEngine {
  std::shared_ptr<LoadedModel> model;
  std::unique_ptr<Engine> engine;

  PyEngine(const std::string& path, const LoadOptions& load, const EngineOptions& options)
      : model(load_model(path, load)), engine(std::make_unique<Engine>(model, options)) {}
  ~PyEngine() {
    nb::gil_scoped_release release;  // the engine thread may be finishing a step
    engine.reset();
    model.reset();
  }

  // Null when the queue is full (Python waits and tries again).
  std::shared_ptr<RequestStream> submit(std::vector<int32_t> prompt, const GenerateOptions& options) {
    auto s = std::make_shared<RequestStream>();
    s->keep_token_events(options.logprobs >= 0);
    auto [on_token, on_done] = RequestStream::callbacks(s);
    std::shared_ptr<RequestHandle> h = engine->submit(std::move(prompt), options, on_token, on_done);
    if (!h) return nullptr;
    s->attach(std::move(h));
    return s;
  }
};

nb::dict to_dict(const RequestResult& r) {
  nb::dict d;
  d["finish_reason"] = r.finish_reason;
  d["error"] = r.error;
  d["prompt_tokens"] = r.prompt_tokens;
  d["cached_tokens"] = r.cached_tokens;
  d["completion_tokens"] = r.completion_tokens;
  d["preemptions"] = r.preemptions;
  d["queue_seconds"] = r.queue_seconds;
  d["ttft_seconds"] = r.ttft_seconds;
  d["total_seconds"] = r.total_seconds;
  return d;
}

nb::dict to_dict(const ModelInfo& m) {
  nb::dict d;
  d["path"] = m.path;
  d["architecture"] = m.architecture;
  d["backend"] = m.backend;
  d["device_note"] = m.device_note;
  d["template_note"] = m.template_note;
  d["vocab"] = m.vocab;
  d["hidden"] = m.hidden;
  d["layers"] = m.layers;
  d["heads"] = m.heads;
  d["kv_heads"] = m.kv_heads;
  d["head_dim"] = m.head_dim;
  d["context"] = m.context;
  d["weight_bytes"] = m.weight_bytes;
  d["has_tokenizer"] = m.has_tokenizer;
  d["has_own_chat_template"] = m.has_own_chat_template;
  return d;
}

nb::dict to_dict(const EngineStats& s) {
  nb::dict d;
  d["waiting"] = s.waiting;
  d["running"] = s.running;
  d["slots_total"] = s.slots_total;
  d["context"] = s.context;
  d["kv_blocks_used"] = s.kv_blocks_used;
  d["kv_blocks_total"] = s.kv_blocks_total;
  d["preemptions"] = s.preemptions;
  d["prefix_cache_hit_tokens"] = s.prefix_cache_hit_tokens;
  d["prompt_tokens"] = s.prompt_tokens;
  d["generated_tokens"] = s.generated_tokens;
  nb::dict finished;
  for (const auto& [reason, n] : s.finished) finished[reason.c_str()] = n;
  d["finished"] = finished;
  return d;
}

nb::dict to_dict(const DeviceReport& r) {
  nb::dict d;
  d["built_with_cuda"] = r.built_with_cuda;
  d["cuda_archs"] = r.cuda_archs;
  d["cuda_runtime_version"] = r.cuda_runtime_version;
  d["driver_version"] = r.driver_version;
  d["cuda_note"] = r.cuda_note;
  d["cpu_isa"] = r.cpu_isa;
  d["cpu_threads"] = r.cpu_threads;
  nb::list gpus;
  for (const GpuInfo& g : r.gpus) {
    nb::dict x;
    x["index"] = g.index;
    x["name"] = g.name;
    x["compute_capability"] = g.compute_capability;
    x["memory_bytes"] = g.memory_bytes;
    x["has_code"] = g.has_code;
    gpus.append(x);
  }
  d["gpus"] = gpus;
  return d;
}

// A whole answer read with the template's syntax: content, reasoning, tool calls.
nb::dict parse_chat(const ChatFormat& format, std::vector<std::string> tool_names, bool reasoning_open,
                    const std::string& text) {
  ChatOutputParser parser(format, std::move(tool_names), reasoning_open);
  std::vector<ChatDelta> deltas = parser.feed(text);
  for (ChatDelta& d : parser.finish()) deltas.push_back(std::move(d));
  const ChatMessage m = ChatMessage::from(deltas);
  nb::dict d;
  d["content"] = m.content;
  d["reasoning"] = m.reasoning;
  nb::list calls;
  for (const ToolCall& c : m.tool_calls) calls.append(nb::make_tuple(c.id, c.name, c.arguments));
  d["tool_calls"] = calls;
  return d;
}

void bind_options(nb::module_& m) {
  nb::class_<LoadOptions>(m, "LoadOptions")
      .def(nb::init<>())
      .def_rw("device", &LoadOptions::device)
      .def_rw("threads", &LoadOptions::threads)
      .def_rw("exact", &LoadOptions::exact)
      .def_rw("mmq", &LoadOptions::mmq)
      .def_rw("chat_template", &LoadOptions::chat_template);
  nb::class_<EngineOptions>(m, "EngineOptions")
      .def(nb::init<>())
      .def_rw("parallel", &EngineOptions::parallel)
      .def_rw("context", &EngineOptions::context)
      .def_rw("max_queue", &EngineOptions::max_queue)
      .def_rw("kv_memory", &EngineOptions::kv_memory)
      .def_rw("prefix_cache", &EngineOptions::prefix_cache)
      .def_rw("warm_up", &EngineOptions::warm_up);
  nb::enum_<OutputConstraint::Kind>(m, "ConstraintKind")
      .value("NONE", OutputConstraint::Kind::None)
      .value("JSON_SCHEMA", OutputConstraint::Kind::JsonSchema)
      .value("JSON_OBJECT", OutputConstraint::Kind::JsonObject)
      .value("GBNF", OutputConstraint::Kind::Gbnf)
      .value("REGEX", OutputConstraint::Kind::Regex)
      .value("CHOICE", OutputConstraint::Kind::Choice);
  nb::class_<OutputConstraint>(m, "OutputConstraint")
      .def(nb::init<>())
      .def_rw("kind", &OutputConstraint::kind)
      .def_rw("text", &OutputConstraint::text)
      .def_rw("choices", &OutputConstraint::choices)
      .def_rw("strict", &OutputConstraint::strict);
  nb::class_<SamplingParams>(m, "Sampling")
      .def(nb::init<>())
      .def_rw("temperature", &SamplingParams::temperature)
      .def_rw("top_k", &SamplingParams::top_k)
      .def_rw("top_p", &SamplingParams::top_p)
      .def_rw("min_p", &SamplingParams::min_p)
      .def_rw("repeat_penalty", &SamplingParams::repeat_penalty)
      .def_rw("repeat_last_n", &SamplingParams::repeat_last_n)
      .def_rw("presence_penalty", &SamplingParams::presence_penalty)
      .def_rw("frequency_penalty", &SamplingParams::frequency_penalty)
      .def_rw("logit_bias", &SamplingParams::logit_bias)
      .def_rw("seed", &SamplingParams::seed);
  nb::class_<GenerateOptions>(m, "GenerateOptions")
      .def(nb::init<>())
      .def_rw("max_tokens", &GenerateOptions::max_tokens)
      .def_rw("constraint", &GenerateOptions::constraint)
      .def_rw("sampling", &GenerateOptions::sampling)
      .def_rw("stop", &GenerateOptions::stop)
      .def_rw("ignore_eos", &GenerateOptions::ignore_eos)
      .def_rw("logprobs", &GenerateOptions::logprobs);
  nb::enum_<ToolSyntax>(m, "ToolSyntax").value("HERMES", ToolSyntax::kHermes).value("LLAMA3_JSON", ToolSyntax::kLlama3Json);
  nb::class_<ChatFormat>(m, "ChatFormat")
      .def_ro("tool_syntax", &ChatFormat::tool_syntax)
      .def_ro("template_renders_tools", &ChatFormat::template_renders_tools)
      .def_ro("reasoning", &ChatFormat::reasoning);
}

void bind_request(nb::module_& m) {
  nb::class_<RequestStream>(m, "Request")
      .def("wait_piece",
           [](RequestStream& s, double timeout) {
             std::string piece;
             RequestStream::Got got;
             {
               nb::gil_scoped_release release;
               got = s.wait_piece(timeout, &piece);
             }
             return std::make_pair(int(got), piece);
           },
           "timeout"_a, "(0, '') on timeout, (1, piece) for a text piece, (2, '') at the end")
      .def("wait_done", &RequestStream::wait_done, "timeout"_a, Release())
      .def("cancel", &RequestStream::cancel)
      .def("text", &RequestStream::text)
      .def("token_ids", &RequestStream::token_ids)
      .def("result", [](const RequestStream& s) { return to_dict(s.result()); })
      .def("logprobs", [](const RequestStream& s) {
        nb::list out;
        for (const TokenEvent& e : s.token_events()) out.append(nb::make_tuple(e.id, e.logprob, e.top));
        return out;
      });
}

void bind_engine(nb::module_& m) {
  nb::class_<PyEngine>(m, "Engine")
      .def(nb::init<const std::string&, const LoadOptions&, const EngineOptions&>(), "path"_a, "load"_a, "options"_a,
           Release())
      .def("submit", &PyEngine::submit, "prompt"_a, "options"_a, Release())
      .def("tokenize", [](const PyEngine& e, const std::string& text, bool add_special, bool parse_special) {
             return e.engine->tokenize(text, add_special, parse_special);
           }, "text"_a, "add_special"_a, "parse_special"_a, Release())
      .def("detokenize", [](const PyEngine& e, const std::vector<int32_t>& ids) {
             const std::string text = e.engine->detokenize(ids);
             return nb::bytes(text.data(), text.size());  // may end inside a character: Python decodes
           }, "ids"_a)
      .def("render_chat", [](const PyEngine& e, const std::string& messages, const std::string& extra) {
             return e.engine->render_chat(messages, extra);
           }, "messages_json"_a, "extra_json"_a, Release())
      .def("chat_format", [](const PyEngine& e) { return e.engine->chat_format(); })
      .def("tool_call_constraint", [](const PyEngine& e, const std::string& tools, const std::string& function, bool parallel) {
             return e.engine->tool_call_constraint(tools, function, parallel);
           }, "tools_json"_a, "function"_a, "parallel"_a)
      .def("model_info", [](const PyEngine& e) { return to_dict(e.engine->model_info()); })
      .def("stats", [](const PyEngine& e) { return to_dict(e.engine->stats()); })
      .def("shutdown", [](PyEngine& e, bool drain) { e.engine->shutdown(drain); }, "drain"_a, Release());
}

}  // namespace
}  // namespace brisk::python

NB_MODULE(_brisk, m) {
  using namespace brisk;
  using namespace brisk::python;
  nb::register_exception_translator(translate_errors);
  bind_options(m);
  bind_request(m);
  bind_engine(m);
  m.def("parse_chat", &parse_chat, "format"_a, "tool_names"_a, "reasoning_open"_a, "text"_a);
  m.def("prompt_opens_reasoning", [](const ChatFormat& f, const std::string& prompt) { return prompt_opens_reasoning(f, prompt); });
  m.def("device_report", [] { return to_dict(device_report()); });
  m.def("score", [](const std::string& path, const LoadOptions& load, const std::vector<int32_t>& tokens) {
          std::vector<float> logits;
          {
            nb::gil_scoped_release release;
            LoadOptions weights_only = load;
            weights_only.tokenizer = false;
            std::shared_ptr<LoadedModel> model = load_model(path, weights_only);
            logits = score(*model, tokens);
          }
          return logits;
        }, "path"_a, "load"_a, "tokens"_a, "teacher-forced logits of every position (len(tokens) x vocab floats)");
  m.def("chat_template_names", &chat_template_names);
}
