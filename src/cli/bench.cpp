// brisk bench: prefill and decode speed of a model on a backend, as fractions of the
// device's own ceilings, which it measures first (a large device copy for bandwidth, a large
// bf16 GEMM for the tensor-core rate). Decode runs B sequences through the ModelRunner (the
// captured-graph path on a GPU); its bytes per step are the weights every step streams plus
// the KV cache each sequence reads. Prefill counts 2 FLOPs per weight per token (the output
// head for the last token only) plus 4 * head_dim per visible query-key pair.
#include <algorithm>
#include <cstdlib>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "cli/load_progress.hpp"
#include "cli/options.hpp"
#include "cli/verbs.hpp"
#include "engine/device.hpp"
#include "engine/model_runner.hpp"
#include "model/model.hpp"

namespace brisk::cli {
namespace {

struct BenchOptions {
  std::string model;
  std::string prompts = "512";
  int gen = 128;
  std::string batches = "1";
  int repeat = 3;
  std::string device = "auto";
  int threads = 0;
  bool exact = false;
  bool skip_ceilings = false;
  std::string json;
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

struct Ceilings {
  double bandwidth = 0, matmul_rate = 0;
};

// One prompt length and batch size: prefill of the prompt (timed for one sequence), then
// `gen` decode steps of `batch` sequences, each with that prompt in its cache.
void bench_case(const BenchOptions& o, Backend& backend, Model& model, const Ceilings& c, int prompt_len, int batch) {
  const HParams& hp = model.hparams();
  Transformer& tf = model.transformer();
  const int64_t ctx = int64_t(prompt_len) + o.gen + 1;
  if (ctx > hp.context)
    throw Error(ErrorCode::kInvalidArgument, "-p + -n exceeds the model's context of " + std::to_string(hp.context));

  KvCache kv = tf.new_kv_cache(ctx, batch);
  std::vector<int32_t> prompt(static_cast<size_t>(prompt_len));
  uint64_t z = 12345;
  for (auto& t : prompt) z = z * 6364136223846793005ull + 1442695040888963407ull, t = int32_t((z >> 33) % uint64_t(hp.vocab));

  // Prefill: the whole prompt as one pass, R times (the cache is simply overwritten).
  ModelRunner runner(tf, kv, batch, prompt_len);
  const RowSampling greedy{};
  std::vector<double> pre;
  int32_t first = 0;
  for (int r = 0; r < o.repeat + 1; ++r) {
    backend.synchronize();
    double t0 = now();
    first = runner.prefill(prompt.data(), prompt_len, 0, 0, greedy);
    if (r > 0) pre.push_back(now() - t0);  // the first run warms up (algorithm choice, allocation)
  }
  for (int s = 1; s < batch; ++s) runner.prefill(prompt.data(), prompt_len, 0, s, greedy);

  // Decode: B sequences, one token each per step, from position prompt on.
  std::vector<int32_t> tokens(static_cast<size_t>(batch), first), pos(static_cast<size_t>(batch)),
      seqs(static_cast<size_t>(batch)), ids(static_cast<size_t>(batch));
  std::iota(seqs.begin(), seqs.end(), 0);
  std::vector<RowSampling> params(static_cast<size_t>(batch), greedy);
  std::vector<double> dec;
  const bool profile_step = std::getenv("BRISK_PROFILE_STEP") != nullptr;
  for (int r = 0; r < o.repeat + 1; ++r) {
    std::fill(tokens.begin(), tokens.end(), first);
    backend.synchronize();
    double t0 = now();
    for (int step = 0; step < o.gen; ++step) {
      // BRISK_PROFILE_STEP=1: a profiler started with --profile-from-start off sees the
      // second decode step of the last repeat, a replayed graph where there are graphs.
      const bool profiled = profile_step && r == o.repeat && step == 1;
      if (profiled) backend.profile(true);
      std::fill(pos.begin(), pos.end(), prompt_len + step);
      runner.decode(tokens.data(), pos.data(), seqs.data(), params.data(), batch, ids.data());
      if (profiled) backend.profile(false);
      tokens = ids;
    }
    if (r > 0) dec.push_back(now() - t0);  // the first run also captures the graph
  }
  tf.free_kv_cache(kv);

  // What the work was.
  const double pre_s = median(pre), dec_s = median(dec);
  const double step_s = dec_s / o.gen;
  const double kv_row_bytes = double(hp.n_kv_heads) * hp.head_dim * backend.kv_elem_bytes() * 2;  // K and V
  double kv_pairs_prefill = 0, kv_read_decode = 0;
  for (int il = 0; il < hp.n_layers; ++il) {
    const int w = hp.layer_sliding[size_t(il)] ? hp.sliding_window : 0;
    kv_pairs_prefill += visible_pairs(0, prompt_len, w);
    kv_read_decode += visible_pairs(prompt_len, prompt_len + o.gen, w) / o.gen;  // positions per step, average
  }
  const double weight_bytes = double(tf.matmul_weight_bytes());
  const double step_bytes = weight_bytes + kv_read_decode * kv_row_bytes * batch;
  const double flops = 2.0 * double(tf.layer_matmul_params()) * prompt_len + 2.0 * double(hp.vocab) * hp.hidden +
                       4.0 * hp.head_dim * hp.n_heads * kv_pairs_prefill;
  const double pre_tps = prompt_len / pre_s, dec_tps = double(batch) * o.gen / dec_s;
  const double achieved_bw = step_bytes / step_s, achieved_rate = flops / pre_s;

  std::printf("prefill    %d tokens: %.1f tok/s, %.2f ms", prompt_len, pre_tps, pre_s * 1e3);
  if (c.matmul_rate > 0)
    std::printf(", %.0f TFLOP/s = %.1f%% of the GEMM rate", achieved_rate / 1e12, 100 * achieved_rate / c.matmul_rate);
  std::printf("\ndecode     batch %d x %d tokens after %d: %.1f tok/s, %.3f ms/step, %.2f GB/step", batch, o.gen,
              prompt_len, dec_tps, step_s * 1e3, step_bytes / 1e9);
  if (c.bandwidth > 0)
    std::printf(", %.0f GB/s = %.1f%% of the copy bandwidth", achieved_bw / 1e9, 100 * achieved_bw / c.bandwidth);
  std::printf("\nmemory     peak %.2f GiB on the backend\n", double(backend.memory_peak()) / (1ull << 30));
  std::fflush(stdout);

  if (!o.json.empty()) {
    nlohmann::json j = {{"model", o.model},
                        {"backend", backend.name()},
                        {"prompt", prompt_len},
                        {"gen", o.gen},
                        {"batch", batch},
                        {"repeat", o.repeat},
                        {"copy_bytes_per_s", c.bandwidth},
                        {"gemm_flops_per_s", c.matmul_rate},
                        {"prefill_tok_s", pre_tps},
                        {"prefill_s", pre_s},
                        {"prefill_flops", flops},
                        {"prefill_fraction", c.matmul_rate > 0 ? achieved_rate / c.matmul_rate : 0},
                        {"decode_tok_s", dec_tps},
                        {"decode_ms_per_step", step_s * 1e3},
                        {"decode_bytes_per_step", step_bytes},
                        {"decode_fraction", c.bandwidth > 0 ? achieved_bw / c.bandwidth : 0},
                        {"peak_bytes", backend.memory_peak()}};
    std::ofstream(o.json, std::ios::app) << j.dump() << "\n";
  }
}

int bench(BenchOptions& o) {
  if (o.model.empty()) o.model = default_model_path();
  const std::vector<int> prompts = int_list(o.prompts, "-p"), batches = int_list(o.batches, "--batch");
  if (o.gen < 1 || o.repeat < 1) throw Error(ErrorCode::kInvalidArgument, "-n and --repeat must be >= 1");
  std::string note;
  auto backend = make_backend(DeviceOptions{o.device, o.threads, o.exact}, &note);
  if (!note.empty()) std::fprintf(stderr, "%s\n", note.c_str());
  Ceilings c;
  if (!o.skip_ceilings) {
    c.bandwidth = backend->measure_bandwidth();
    c.matmul_rate = backend->measure_matmul_rate();
  }
  LoadOptions lo;
  auto progress = std::make_shared<LoadProgress>();
  lo.progress = [progress](double f) { (*progress)(f); };
  lo.load_tokenizer = false;
  const double t0 = now();
  auto model = Model::load(o.model, *backend, lo);
  std::printf("model      %s (loaded in %.1f s)\n", std::filesystem::path(o.model).filename().c_str(), now() - t0);
  std::printf("backend    %s\n", backend->name().c_str());
  if (c.bandwidth > 0)
    std::printf("ceilings   copy %.0f GB/s, bf16 GEMM %.0f TFLOP/s (measured now)\n", c.bandwidth / 1e9,
                c.matmul_rate / 1e12);
  for (int p : prompts)
    for (int b : batches) bench_case(o, *backend, *model, c, p, b);
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
  add_device_option(app, o->device, "cpu, cuda, cuda:N or auto");
  add_threads_option(app, o->threads);
  app.add_flag("--exact", o->exact, "float32 everywhere (the oracle)");
  app.add_flag("--no-ceilings", o->skip_ceilings, "skip measuring the device's bandwidth and GEMM rate");
  app.add_option("--json", o->json, "append the results as one JSON line to this file");
  return [o]() { return bench(*o); };
}

}  // namespace brisk::cli
