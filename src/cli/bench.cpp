// brisk bench: prefill and decode speed of a model on a backend, as fractions of the
// device's own ceilings, which it measures first (a large device copy for bandwidth, a large
// bf16 GEMM for the tensor-core rate). Everything runs through the Engine: decode is B requests
// decoding together (the step times come from its step records); its bytes per step are the weights every step streams plus
// the KV cache each sequence reads. Prefill counts 2 FLOPs per weight per token (the output
// head for the last token only) plus 4 * head_dim per visible query-key pair.
#include <algorithm>
#include <cstdlib>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>

#include <nlohmann/json.hpp>

#include "brisk/brisk.hpp"
#include "cli/options.hpp"
#include "cli/verbs.hpp"

namespace brisk::cli {
namespace {

struct BenchOptions {
  std::string model;
  std::string prompts = "512";
  int gen = 128;
  std::string batches = "1";
  int repeat = 3;
  LoadOptions load;
  bool skip_ceilings = false;
  bool profile_step = false;
  std::string json;
  ConstraintFlags constraint;  // every decoded sequence under this grammar (the mask cost)
};

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// "512,2048" -> {512, 2048}; every value >= 1.
std::vector<int> int_list(const std::string& s, const char* flag) {
  std::vector<int> out;
  size_t i = 0;
  while (i <= s.size()) {
    const size_t j = std::min(s.find(',', i), s.size());
    const std::string item = s.substr(i, j - i);
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 1 || v > (1 << 24))
      throw Error(ErrorCode::kInvalidArgument, "expected a comma-separated list of positive integers, not '" + s + "'",
                  flag);
    out.push_back(int(v));
    i = j + 1;
  }
  return out;
}

// int_list's complaint as a usage error (exit 2) before anything loads.
CLI::Validator list_check(const char* flag) {
  return CLI::Validator(
      [flag](std::string& s) -> std::string {
        try {
          int_list(s, flag);
          return "";
        } catch (const Error& e) {
          return e.message();
        }
      },
      "N[,N...]");
}

// Query-key pairs a query at each of positions [p0, p1) sees on a layer.
double visible_pairs(int64_t p0, int64_t p1, int window) {
  double s = 0;
  for (int64_t p = p0; p < p1; ++p) s += double(window > 0 ? std::min<int64_t>(p + 1, window) : p + 1);
  return s;
}

// The CPU's ceilings are its memory read bandwidth and its Q8_0 product rate (cpu_ceilings.cpp).
bool on_cpu(const ModelInfo& m) { return m.backend.rfind("cpu", 0) == 0; }

// Prints (and appends to --json) one case: what the work was and how fast it went, as
// fractions of the measured ceilings.
void report_case(const BenchOptions& o, const ModelInfo& m, const DeviceCeilings& c, int prompt_len, int batch,
                 double pre_s, double step_s, uint64_t peak) {
  const double kv_row_bytes = double(m.kv_heads) * double(m.head_dim) * m.kv_elem_bytes * 2;  // K and V
  double kv_pairs_prefill = 0, kv_read_decode = 0;
  for (int64_t il = 0; il < m.layers; ++il) {
    const int w = m.layer_sliding[size_t(il)] ? int(m.sliding_window) : 0;
    kv_pairs_prefill += visible_pairs(0, prompt_len, w);
    kv_read_decode += visible_pairs(prompt_len, prompt_len + o.gen, w) / o.gen;  // positions per step, average
  }
  const double step_bytes = double(m.matmul_weight_bytes) + kv_read_decode * kv_row_bytes * batch;
  const double flops = 2.0 * double(m.layer_matmul_params) * prompt_len + 2.0 * double(m.vocab) * double(m.hidden) +
                       4.0 * double(m.head_dim) * double(m.heads) * kv_pairs_prefill;
  const double pre_tps = pre_s > 0 ? prompt_len / pre_s : 0, dec_tps = step_s > 0 ? batch / step_s : 0;
  const double achieved_bw = step_s > 0 ? step_bytes / step_s : 0, achieved_rate = pre_s > 0 ? flops / pre_s : 0;
  std::printf("prefill    %d tokens: %.1f tok/s, %.2f ms", prompt_len, pre_tps, pre_s * 1e3);
  if (c.gemm_flops_per_s > 0)
    std::printf(on_cpu(m) ? ", %.0f GFLOP/s = %.1f%% of the Q8_0 matmul rate" : ", %.0f TFLOP/s = %.1f%% of the GEMM rate",
                achieved_rate / (on_cpu(m) ? 1e9 : 1e12), 100 * achieved_rate / c.gemm_flops_per_s);
  std::printf("\ndecode     batch %d x %d tokens after %d: %.1f tok/s, %.3f ms/step, %.2f GB/step", batch, o.gen,
              prompt_len, dec_tps, step_s * 1e3, step_bytes / 1e9);
  if (c.copy_bytes_per_s > 0)
    std::printf(", %.0f GB/s = %.1f%% of the %s bandwidth", achieved_bw / 1e9, 100 * achieved_bw / c.copy_bytes_per_s,
                on_cpu(m) ? "memory read" : "copy");
  std::printf("\nmemory     peak %.2f GiB on the backend\n", double(peak) / (1ull << 30));
  std::fflush(stdout);
  if (o.json.empty()) return;
  nlohmann::json j = {{"model", o.model},
                      {"backend", m.backend},
                      {"prompt", prompt_len},
                      {"gen", o.gen},
                      {"batch", batch},
                      {"repeat", o.repeat},
                      {"copy_bytes_per_s", c.copy_bytes_per_s},
                      {"gemm_flops_per_s", c.gemm_flops_per_s},
                      {"prefill_tok_s", pre_tps},
                      {"prefill_s", pre_s},
                      {"prefill_flops", flops},
                      {"prefill_fraction", c.gemm_flops_per_s > 0 ? achieved_rate / c.gemm_flops_per_s : 0},
                      {"decode_tok_s", dec_tps},
                      {"decode_ms_per_step", step_s * 1e3},
                      {"decode_bytes_per_step", step_bytes},
                      {"decode_fraction", c.copy_bytes_per_s > 0 ? achieved_bw / c.copy_bytes_per_s : 0},
                      {"peak_bytes", peak}};
  std::ofstream(o.json, std::ios::app) << j.dump() << "\n";
}

// Random prompt tokens, distinct per sequence (the prefix cache is off anyway).
std::vector<int32_t> random_prompt(int n, int64_t vocab, uint64_t seed) {
  std::vector<int32_t> p(static_cast<size_t>(n));
  uint64_t z = 12345 + seed * 0x9e3779b97f4a7c15ull;
  for (auto& t : p) z = z * 6364136223846793005ull + 1442695040888963407ull, t = int32_t((z >> 33) % uint64_t(vocab));
  return p;
}

// Each request submitted at once; waits for all of them.
// Every sequence runs to `gen` tokens (ignore_eos: a grammar never offers the end of
// sequence either) unless its grammar lets nothing follow (a step with fewer rows, not counted).
void run_requests(Engine& e, int count, int prompt_len, int gen, int64_t vocab, uint64_t seed,
                  const OutputConstraint& constraint) {
  std::mutex mu;
  std::condition_variable cv;
  int left = count;
  GenerateOptions g;
  g.max_tokens = gen;
  g.constraint = constraint;
  g.ignore_eos = true;
  g.sampling.temperature = 0;
  for (int i = 0; i < count; ++i) {
    auto h = e.submit(random_prompt(prompt_len, vocab, seed + uint64_t(i)), g, {}, [&](const RequestResult&) {
      std::lock_guard<std::mutex> lock(mu);
      if (--left == 0) cv.notify_all();
    });
    if (!h) throw Error(ErrorCode::kInternal, "the bench engine refused a request");
  }
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return left == 0; });
}

// One prompt length and batch size through the engine: prefill = one prompt's pass
// (timed by the engine's step record), decode = the steps in which all `batch` sequences
// decode together, each with its prompt in the cache.
void bench_case(const BenchOptions& o, const OutputConstraint& constraint, std::shared_ptr<LoadedModel> model,
                const DeviceCeilings& c, int prompt_len, int batch) {
  const ModelInfo info = model_info(*model);
  std::mutex mu;
  std::vector<double> pre, dec, masks;  // ms of each prefill pass / full decode step / its masks
  EngineOptions eo;
  eo.parallel = batch;
  eo.context = int64_t(prompt_len) + o.gen + 1;
  eo.prefill_chunk = prompt_len;
  eo.prefill_seqs = 1;
  eo.prefix_cache = false;
  eo.max_queue = size_t(batch);
  eo.profile_step = o.profile_step ? int64_t(o.gen) * (o.repeat + 1) + 1 : -1;  // the last run's second step
  eo.on_step = [&](const StepRecord& r) {
    std::lock_guard<std::mutex> lock(mu);
    if (r.prefill_parts == 1 && r.decode_rows == 0) pre.push_back(r.prefill_ms);
    else if (r.prefill_parts == 0 && r.decode_rows == batch) dec.push_back(r.step_ms), masks.push_back(r.mask_ms);
  };
  if (eo.context > info.context)
    throw Error(ErrorCode::kInvalidArgument, "-p + -n exceeds the model's context of " + std::to_string(info.context));
  Engine e(model, eo);
  // The first run of each warms up (algorithm choice, allocation, graph capture).
  std::vector<double> pre_runs, dec_runs, mask_runs;
  for (int r = 0; r < o.repeat + 1; ++r) {
    run_requests(e, 1, prompt_len, 1, info.vocab, uint64_t(r) * 7919, constraint);
    std::lock_guard<std::mutex> lock(mu);
    if (r > 0 && !pre.empty()) pre_runs.push_back(pre.back() / 1e3);
    pre.clear();
  }
  for (int r = 0; r < o.repeat + 1; ++r) {
    run_requests(e, batch, prompt_len, o.gen + 1, info.vocab, 1000 + uint64_t(r) * 7919, constraint);
    std::lock_guard<std::mutex> lock(mu);
    if (r > 0 && !dec.empty()) dec_runs.push_back(median(dec) / 1e3), mask_runs.push_back(median(masks));
    dec.clear(), masks.clear();
  }
  if (constraint.kind != OutputConstraint::Kind::None && dec_runs.empty())
    std::fprintf(stderr, "every run's grammar ended before a full decode step: no decode figure\n");
  report_case(o, info, c, prompt_len, batch, median(pre_runs), median(dec_runs), memory_peak(*model));
  if (constraint.kind != OutputConstraint::Kind::None)
    std::printf("grammar    masks %.3f ms/step on the host, median (while the step's forward pass runs)\n",
                median(mask_runs));
}

int bench(BenchOptions& o) {
  if (o.model.empty()) o.model = default_model_path();
  const std::vector<int> prompts = int_list(o.prompts, "-p"), batches = int_list(o.batches, "--batch");
  if (o.gen < 1 || o.repeat < 1) throw Error(ErrorCode::kInvalidArgument, "-n and --repeat must be >= 1");
  const OutputConstraint constraint = constraint_of(o.constraint);
  LoadOptions lo = o.load;
  lo.tokenizer = constraint.kind != OutputConstraint::Kind::None;  // (a grammar needs the vocabulary)
  const double t0 = now();
  auto model = load_with_progress(o.model, lo);
  const ModelInfo info = model_info(*model);
  std::printf("model      %s (loaded in %.1f s)\n", std::filesystem::path(o.model).filename().c_str(), now() - t0);
  std::printf("backend    %s\n", info.backend.c_str());
  DeviceCeilings c;
  if (!o.skip_ceilings) c = measure_ceilings(*model);
  if (c.copy_bytes_per_s > 0 && on_cpu(info))
    std::printf("ceilings   memory read %.1f GB/s, Q8_0 matmul %.0f GFLOP/s (measured now)\n",
                c.copy_bytes_per_s / 1e9, c.gemm_flops_per_s / 1e9);
  else if (c.copy_bytes_per_s > 0)
    std::printf("ceilings   copy %.0f GB/s, bf16 GEMM %.0f TFLOP/s (measured now)\n", c.copy_bytes_per_s / 1e9,
                c.gemm_flops_per_s / 1e12);
  for (int p : prompts)
    for (int b : batches) bench_case(o, constraint, model, c, p, b);
  return 0;
}

}  // namespace

Action add_bench(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  app.add_option("-m,--model", o->model, "GGUF file or HF directory (default: the model scripts/setup installed)");
  app.add_option("-p,--prompt", o->prompts, "prompt tokens (prefill); a list such as 512,2048 runs each")
      ->capture_default_str()
      ->check(list_check("-p"));
  app.add_option("-n,--n-gen", o->gen, "generated tokens per sequence (decode)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--batch", o->batches, "sequences decoded together; a list such as 1,8,64 runs each")
      ->capture_default_str()
      ->check(list_check("--batch"));
  app.add_option("--repeat", o->repeat, "timed runs (median reported)")->capture_default_str()->check(CLI::Range(1, 1000));
  add_device_option(app, o->load.device, "cpu, cuda, cuda:N or auto");
  add_threads_option(app, o->load.threads);
  add_cuda_tuning_options(app, o->load);
  app.add_flag("--exact", o->load.exact, "float32 everywhere (the oracle)");
  app.add_flag("--profile-step", o->profile_step,
               "run the last repeat's second decode step under the backend's profiler (nsys --capture-range=cudaProfilerApi)");
  app.add_flag("--no-ceilings", o->skip_ceilings, "skip measuring the device's bandwidth and GEMM rate");
  app.add_option("--json", o->json, "append the results as one JSON line to this file");
  add_constraint_options(app, o->constraint);
  return [o]() { return bench(*o); };
}

}  // namespace brisk::cli
