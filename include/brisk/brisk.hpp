// brisk's public C++ API: load a model, run an Engine over it, generate and stream text for
// a prompt or for chat messages rendered with the model's own template, cancel.
//
//   auto engine = brisk::Engine::open("model.gguf");            // the GPU when one works
//   brisk::GenerateOptions g;
//   g.max_tokens = 64;
//   brisk::Completion c = engine->generate("The capital of France is", g,
//                                          [](const std::string& piece) { std::cout << piece; return true; });
//
// An Engine batches every request submitted to it (continuous batching over paged KV
// blocks with a prefix cache; a request joins and leaves the running batch at any step),
// from any number of threads. Everything the engine refuses is a brisk::Error
// (brisk/error.hpp) with a code, a message and the field it concerns. This header and
// brisk/types.hpp, brisk/error.hpp (and brisk/files.hpp for checkpoint files) are all a
// program needs; the CLI, the server and the Python bindings use nothing else.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "brisk/chat.hpp"
#include "brisk/error.hpp"
#include "brisk/types.hpp"

namespace brisk {

struct LoadOptions {
  std::string device = "auto";  // "cpu", "cuda", "cuda:N", or "auto" (the first working GPU, else the CPU)
  int threads = 0;              // CPU threads (0: one per core)
  bool exact = false;           // float32 everywhere (the oracle): no int8 activations, no bf16 GEMMs
  std::string decode_attention = "auto";  // CUDA: "float" keeps decode attention on the float kernel
  bool pdl = true;              // CUDA: programmatic dependent launch where the GPU has it
  bool mmq = true;              // CUDA: quantized batches on the int8 / FP8 tensor cores
  std::string chat_template;    // a built-in template's name or a Jinja file; empty: the model's own
  bool tokenizer = true;        // false: weights only (score() works; text calls throw)
  std::function<void(double)> progress;  // fraction of the weights loaded (0..1)
};

struct ModelInfo {
  std::string path, architecture, backend;
  std::string device_note;          // why "auto" did not take the GPU, if it did not
  std::string template_note;        // which chat template was chosen when the file has none
  int64_t vocab = 0, hidden = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0;
  int64_t context = 0;              // trained context
  int64_t sliding_window = 0;       // 0: none
  std::vector<bool> layer_sliding;  // per layer: sliding-window attention
  uint64_t weight_bytes = 0;        // resident weights
  uint64_t matmul_weight_bytes = 0; // what one decode step streams through the products
  uint64_t layer_matmul_params = 0; // multiply-adds per token in the layers' products
  int kv_elem_bytes = 4;            // bytes per cached key or value element
  bool has_tokenizer = false;
  bool has_own_chat_template = false;
};

// A model resident on its backend (weights uploaded and repacked once), shareable by
// several engines.
class LoadedModel;
std::shared_ptr<LoadedModel> load_model(const std::string& path, const LoadOptions& options = {});
ModelInfo model_info(const LoadedModel& model);
// Teacher-forced logits of every position of `tokens` (tokens.size() x vocab floats), from one
// prefill over an empty cache: for comparisons against reference implementations.
std::vector<float> score(LoadedModel& model, const std::vector<int32_t>& tokens);
// The device's measured limits, for reporting a speed as a fraction of them.
struct DeviceCeilings {
  double copy_bytes_per_s = 0;   // device-memory copy bandwidth
  double gemm_flops_per_s = 0;   // a large bf16 GEMM's rate (0 where not measured)
};
DeviceCeilings measure_ceilings(LoadedModel& model);
uint64_t memory_peak(const LoadedModel& model);  // the backend's peak bytes in use so far

// What this build of brisk carries and the devices it sees (`python -m brisk doctor`).
struct GpuInfo {
  int index = 0;
  std::string name;
  int compute_capability = 0;   // major * 10 + minor: 90 for sm_90
  uint64_t memory_bytes = 0;
  bool has_code = false;        // this build carries machine code (or PTX) the GPU can run
};
struct DeviceReport {
  bool built_with_cuda = false;
  std::string cuda_archs;       // the architectures compiled in, e.g. "75;80;89;90a"
  int cuda_runtime_version = 0; // the CUDA runtime brisk was built with (13000: 13.0)
  int driver_version = 0;       // the CUDA version the NVIDIA driver supports (0: no driver)
  std::string cuda_note;        // why no GPU is usable, when none is
  std::vector<GpuInfo> gpus;
  std::string cpu_isa;          // the CPU kernels chosen from CPUID (avx2, avx512, ...)
  int cpu_threads = 0;          // hardware threads
};
DeviceReport device_report();

// The built-in chat templates LoadOptions::chat_template accepts: (name, the official format it reproduces).
std::vector<std::pair<std::string, std::string>> chat_template_names();

// A submitted request: cancel() from any thread; the engine frees its blocks at its next step
// and ends it with finish_reason "cancelled".
class RequestHandle {
 public:
  virtual ~RequestHandle() = default;
  virtual void cancel() = 0;
};

// What generate() and chat() return.
struct Completion {
  std::string text;             // the generated text (a stop string and what follows excluded)
  std::vector<int32_t> tokens;  // the generated ids (an ending EOS excluded)
  RequestResult result;
};

class Engine {
 public:
  using TokenCallback = std::function<void(const TokenEvent&)>;
  using DoneCallback = std::function<void(const RequestResult&)>;
  // Return false to cancel the request.
  using TextCallback = std::function<bool(const std::string&)>;

  static std::unique_ptr<Engine> open(const std::string& model_path, const LoadOptions& load = {},
                                      const EngineOptions& options = {});
  Engine(std::shared_ptr<LoadedModel> model, const EngineOptions& options = {});
  ~Engine();  // shutdown(false)
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Text <-> tokens with the model's tokenizer. parse_special: special-token text in `text`
  // becomes those tokens (else it is plain text).
  std::vector<int32_t> tokenize(std::string_view text, bool add_special = true, bool parse_special = true) const;
  std::string detokenize(const std::vector<int32_t>& ids) const;
  std::string token_bytes(int32_t id) const;  // the raw bytes one token stands for
  // Renders OpenAI-style chat messages (a JSON array) with the model's template and the
  // generation prompt. extra_json: an object of further template variables (tools,
  // enable_thinking, ...). cancel, when set, abandons the render. Throws Error
  // (kInvalidArgument) when the template refuses the messages, kLimit past its limits.
  std::string render_chat(const std::string& messages_json, const std::string& extra_json = "{}",
                          const std::atomic<bool>* cancel = nullptr) const;
  // How the model's template writes tool calls and reasoning (ChatOutputParser reads answers
  // with it). render_chat() describes `tools` in a system preamble where the template has none.
  ChatFormat chat_format() const;
  // A constraint that makes the answer calls of the OpenAI `tools` (a JSON list) in the
  // template's syntax: of `function` only when not empty; several calls with parallel.
  OutputConstraint tool_call_constraint(const std::string& tools_json, const std::string& function, bool parallel) const;
  // Bytes of text one token covers at most: a prompt of more bytes than context x this
  // cannot fit, so it can be refused before tokenizing.
  size_t max_bytes_per_token() const;

  // Queues a tokenized request. Throws Error(kInvalidArgument) for one that can never run;
  // returns null when the queue is full or the engine is shutting down. Otherwise on_done
  // is called exactly once; the callbacks run on the engine thread and must be quick.
  std::shared_ptr<RequestHandle> submit(std::vector<int32_t> prompt, const GenerateOptions& options,
                                        TokenCallback on_token, DoneCallback on_done);
  // Blocking conveniences: the whole completion, streaming its text to on_text as it comes.
  Completion generate(const std::string& prompt, const GenerateOptions& options, TextCallback on_text = {});
  Completion generate(std::vector<int32_t> prompt, const GenerateOptions& options, TextCallback on_text = {});
  Completion chat(const std::string& messages_json, const GenerateOptions& options, TextCallback on_text = {});

  EngineStats stats() const;
  const EngineOptions& options() const;  // with every default resolved
  ModelInfo model_info() const;
  // Stops taking requests; with drain the running ones finish, without it they are cancelled.
  void shutdown(bool drain);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace brisk
