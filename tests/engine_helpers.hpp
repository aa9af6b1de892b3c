// Tests' one-request generation: a fresh one-slot EngineCore over the model, so every test
// goes through the engine's single generation path.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "engine/engine_core.hpp"
#include "synthetic/synthetic.hpp"
#include "test_paths.hpp"

namespace brisk::test {

// The engine tests' model: a small synthetic Llama in Q8_0 (the serving configuration's
// format), written to the scratch folder as `name`; returns its path.
inline std::string small_llama_q8(uint64_t seed, const std::string& name) {
  SyntheticSpec spec;
  spec.arch = "llama";
  spec.size = "small";
  spec.dtype = DType::Q8_0;
  spec.seed = seed;
  const std::string path = scratch_dir() + "/" + name;
  write_synthetic_checkpoint(spec, path);
  return path;
}

struct Generated {
  std::vector<int32_t> tokens;
  RequestResult result;
};

inline Generated generate(Model& m, const std::vector<int32_t>& prompt, const GenerateOptions& g, int64_t context = 256) {
  EngineOptions o;
  o.parallel = 1;
  o.context = context;
  o.max_queue = 0;
  EngineCore engine(m, o);
  auto out = std::make_shared<Generated>();
  auto r = std::make_shared<Request>();
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  r->prompt = prompt;
  r->opts = g;
  r->on_token = [out](const TokenEvent& e) { out->tokens.push_back(e.id); };
  r->on_done = [&](const RequestResult& res) {
    std::lock_guard<std::mutex> lock(mu);
    out->result = res;
    done = true;
    cv.notify_all();
  };
  if (!engine.submit(r)) throw Error(ErrorCode::kInternal, "the engine refused a request");
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return done; });
  return *out;
}

}  // namespace brisk::test
