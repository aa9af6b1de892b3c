// Chat templates from model files (the input's first part, as Jinja source) rendered with
// messages from requests (its second part, as JSON: a list is the messages, an object the
// extra variables such as tools) under small render limits: every cap of RenderLimits is
// reached within a few milliseconds, so the fuzzer explores templates that overflow
// integers, double values or nest deeply without its rate collapsing. The seeds
// (tools/make_fuzz_corpus.py) hold such templates.
#include "base/error.hpp"
#include "fuzz_input.hpp"
#include "template/chat_template.hpp"

using namespace brisk;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto parts = fuzz::split_parts(data, size, 2);
  std::unique_ptr<ChatTemplate> t;
  try {
    t = std::make_unique<ChatTemplate>(parts[0]);
  } catch (const Error&) {
    return 0;
  }
  nlohmann::ordered_json messages = nlohmann::ordered_json::parse(R"([{"role":"user","content":"hi"}])");
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
  if (!parts[1].empty()) {
    try {
      auto j = nlohmann::ordered_json::parse(parts[1]);
      if (j.is_array()) messages = std::move(j);
      else if (j.is_object()) extra = std::move(j);
    } catch (const nlohmann::ordered_json::exception&) {
    }
  }
  jinja::RenderLimits limits;
  limits.max_output = 1 << 16;
  limits.max_steps = 20000;
  limits.max_string_bytes = 1 << 18;
  limits.max_list_items = 1 << 14;
  limits.max_work = 4 << 20;
  try {
    t->render(messages, true, extra, limits);
  } catch (const Error&) {
  }
  return 0;
}
