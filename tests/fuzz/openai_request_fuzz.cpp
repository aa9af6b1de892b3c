// OpenAI request bodies from anywhere, against a small model with a real chat template:
// the JSON, every field's type and range, the messages through the template, and (when a
// body is accepted) the response builder on a made-up result.
#include <unistd.h>

#include <filesystem>

#include "base/error.hpp"
#include "brisk/brisk.hpp"
#include "synthetic/synthetic.hpp"
#include "server/openai_schema.hpp"

using namespace brisk;

namespace {
// A one-slot engine over a small synthetic Qwen2 with its real chat template.
Engine& engine() {
  static std::unique_ptr<Engine> e = [] {
    const auto path = std::filesystem::temp_directory_path() / ("brisk-fuzz-model-" + std::to_string(::getpid()) + ".gguf");
    SyntheticSpec spec;
    spec.arch = "qwen2";
    write_synthetic_checkpoint(spec, path.string());
    LoadOptions lo;
    lo.device = "cpu";
    lo.threads = 1;
    EngineOptions eo;
    eo.parallel = 1;
    eo.context = 256;
    auto made = Engine::open(path.string(), lo, eo);
    std::filesystem::remove(path);
    return made;
  }();
  return *e;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const auto endpoint = data[0] % 2 ? server::Endpoint::Chat : server::Endpoint::Completion;
  server::ojson body;
  try {
    body = server::ojson::parse(std::string(reinterpret_cast<const char*>(data + 1), size - 1));
  } catch (const server::ojson::exception&) {  // not JSON, or a number JSON cannot hold
    return 0;
  }
  try {
    const server::ApiRequest r = server::parse_request(endpoint, body, engine());
    server::ResponseBuilder b(endpoint, r.model, engine());
    RequestResult res;
    res.finish_reason = "stop";
    TokenEvent e;
    e.id = r.prompt.back();
    e.top = {{e.id, -0.5f}};
    b.complete("x", {b.token_out(e)}, r.opts.logprobs >= 0, res).dump(-1, ' ', false, server::ojson::error_handler_t::replace);
  } catch (const Error&) {
  }
  return 0;
}
