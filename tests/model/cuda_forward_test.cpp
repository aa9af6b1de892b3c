// Whole models on the GPU against the CPU oracle: synthetic tiny llama, qwen2, qwen3 and
// gemma3 checkpoints (GGUF and HF, several weight formats). Exact mode (float32 GEMMs)
// must give the oracle's logits within 1e-4 relative and its greedy generations token for
// token (32 tokens); the fast mode (bf16 tensor cores in prefill, int8 activations in decode
// products against quantized weights) within 3e-2, and its greedy generations through the
// captured-graph decode path must be the oracle's too, except that they may part where the
// oracle itself was all but tied between the two tokens (a gap within the fast mode's
// error), which rounding may flip. Skips without a GPU (scripts/gpu-check runs it).
#include <gtest/gtest.h>

#include <cmath>

#include "base/error.hpp"
#include "backend/factory.hpp"
#include "engine/score.hpp"
#include "engine_helpers.hpp"
#include "engine/model_runner.hpp"
#include "model/model.hpp"
#include "synthetic/synthetic.hpp"
#include "test_paths.hpp"

#if BRISK_WITH_CUDA
#include "backend/cuda/cuda_backend.hpp"

namespace brisk {
namespace {

struct Case {
  const char* arch;
  const char* format;
  DType dtype;
  const char* fp8_scales = "";  // F8_E4M3: tensor, channel or block
  bool static_activations = false;  // F8_E4M3: input_scale in the checkpoint
};

double rel_err(const std::vector<float>& got, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    num += (double(got[i]) - ref[i]) * (double(got[i]) - ref[i]);
    den += double(ref[i]) * ref[i];
  }
  return std::sqrt(num / den);
}

std::vector<int32_t> greedy(Model& m, const std::vector<int32_t>& prompt, int n) {
  GenerateOptions g;
  g.max_tokens = n;
  g.sampling.temperature = 0;
  g.ignore_eos = true;
  return test::generate(m, prompt, g).tokens;
}

// Sampled with a repetition penalty: the one sampler, the same (seed, index) draw everywhere.
std::vector<int32_t> sampled(Model& m, const std::vector<int32_t>& prompt, int n, uint64_t seed) {
  GenerateOptions g;
  g.max_tokens = n;
  g.ignore_eos = true;
  g.sampling.temperature = 0.8f;
  g.sampling.top_p = 0.9f;
  g.sampling.top_k = 0;
  g.sampling.min_p = 0;
  g.sampling.repeat_penalty = 1.3f;
  g.sampling.repeat_last_n = -1;
  g.sampling.seed = seed;
  return test::generate(m, prompt, g).tokens;
}

// Empty when `got` is `want`, or parts from it only where the oracle's logits of the two
// tokens were within `tol` * rms(logits); else says where and by how much they differ.
std::string same_or_near_tie(Model& oracle, const std::vector<int32_t>& prompt, const std::vector<int32_t>& want,
                             const std::vector<int32_t>& got, double tol) {
  size_t i = 0;
  while (i < want.size() && i < got.size() && want[i] == got[i]) ++i;
  if (i == want.size() && i == got.size()) return "";
  if (i == want.size() || i == got.size()) return "lengths differ";
  std::vector<int32_t> ctx(prompt);
  ctx.insert(ctx.end(), want.begin(), want.begin() + int64_t(i));
  const auto all = score_tokens(oracle, ctx);
  const int64_t V = oracle.hparams().vocab;
  const float* l = all.data() + (int64_t(ctx.size()) - 1) * V;
  double ss = 0;
  for (int64_t j = 0; j < V; ++j) ss += double(l[j]) * l[j];
  const double gap = double(l[want[i]]) - l[got[i]], rms = std::sqrt(ss / double(V));
  if (gap <= tol * rms) return "";
  return "token " + std::to_string(i) + ": " + std::to_string(got[i]) + " instead of " + std::to_string(want[i]) +
         ", oracle logit gap " + std::to_string(gap) + " (rms " + std::to_string(rms) + ")";
}

class CudaForward : public ::testing::TestWithParam<Case> {};

TEST_P(CudaForward, MatchesTheCpuOracle) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device (scripts/gpu-check runs this on a GPU)";
  const Case& c = GetParam();
  SyntheticSpec spec;
  spec.arch = c.arch;
  spec.format = c.format;
  spec.dtype = c.dtype;
  if (*c.fp8_scales) spec.fp8_scales = c.fp8_scales;
  if (c.static_activations) spec.fp8_activations = "static";
  spec.seed = 3;
  const std::string path = test::scratch_dir() + "/" + c.arch + "_" + dtype_name(c.dtype) + c.fp8_scales +
                           (c.static_activations ? "_static" : "") + (spec.format == "gguf" ? ".gguf" : "_hf");
  write_synthetic_checkpoint(spec, path);

  auto cpu = make_cpu_backend(0, false);
  auto exact = make_cuda_backend(0, CudaOptions{true});
  auto fast = make_cuda_backend(0, CudaOptions{false});
  auto mc = Model::load(path, *cpu), me = Model::load(path, *exact), mf = Model::load(path, *fast);

  std::vector<int32_t> prompt;
  for (int i = 0; i < 40; ++i) prompt.push_back(int32_t((i * 37 + 11) % mc->hparams().vocab));
  auto ref = score_tokens(*mc, prompt);
  EXPECT_LT(rel_err(score_tokens(*me, prompt), ref), 1e-4) << "exact";
  // The fast mode's prefill of FP8 weights takes FP8 activations (3 mantissa bits) on sm_90.
  const double fast_tol = c.dtype == DType::F8_E4M3 && cuda_compute_major() == 9 ? 8e-2 : 3e-2;
  EXPECT_LT(rel_err(score_tokens(*mf, prompt), ref), fast_tol) << "fast";

  const std::vector<int32_t> short_prompt(prompt.begin(), prompt.begin() + 6);
  auto want = greedy(*mc, short_prompt, 32);
  EXPECT_EQ(same_or_near_tie(*mc, short_prompt, want, greedy(*mf, short_prompt, 32), 3e-2), "") << "fast, graph decode";
  EXPECT_EQ(greedy(*me, short_prompt, 32), want) << "exact";
  // Same seed, same text: the exact mode samples what the CPU samples.
  for (uint64_t seed : {1u, 7u, 1234u}) {
    const auto on_cpu = sampled(*mc, short_prompt, 24, seed);
    EXPECT_EQ(sampled(*me, short_prompt, 24, seed), on_cpu) << "exact, sampled, seed " << seed;
    // (The synthetic gemma3's logits are peaked enough that top-p 0.9 keeps the argmax alone.)
    if (std::string(c.arch) != "gemma3") {
      EXPECT_NE(on_cpu, greedy(*mc, short_prompt, 24)) << "seed " << seed << " sampled the greedy text";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Archs, CudaForward,
    ::testing::Values(Case{"llama", "gguf", DType::F32}, Case{"llama", "hf", DType::BF16}, Case{"llama", "gguf", DType::Q8_0},
                      Case{"qwen2", "gguf", DType::Q8_0}, Case{"qwen2", "hf", DType::BF16}, Case{"qwen3", "gguf", DType::F16},
                      Case{"qwen3", "hf", DType::BF16}, Case{"gemma3", "gguf", DType::Q8_0}, Case{"gemma3", "hf", DType::BF16},
                      Case{"llama", "hf", DType::F8_E4M3, "channel"}, Case{"qwen3", "hf", DType::F8_E4M3, "block"},
                      Case{"qwen2", "hf", DType::F8_E4M3, "tensor", true}),
    [](const auto& info) {
      return std::string(info.param.arch) + "_" + info.param.format + "_" + dtype_name(info.param.dtype) +
             info.param.fp8_scales + (info.param.static_activations ? "_static" : "");
    });

// Several prompts prefilled in one pass (each part's attention on the tensor-core kernel)
// give each prompt's last-row logits as its own pass does, within the fast mode's error;
// and so does a batched decode step against each sequence's step alone.
TEST(CudaPackedPrefill, MatchesEachPromptAlone) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  SyntheticSpec spec;
  spec.arch = "qwen2";
  spec.format = "hf";
  spec.dtype = DType::BF16;
  spec.seed = 5;
  const std::string path = test::scratch_dir() + "/packed_qwen2_hf";
  write_synthetic_checkpoint(spec, path);
  auto gpu = make_cuda_backend(0);
  auto m = Model::load(path, *gpu);
  Transformer& tf = m->transformer();
  const int64_t V = m->hparams().vocab;
  const std::vector<int64_t> lengths{40, 17, 5, 64};
  std::vector<std::vector<int32_t>> prompts;
  for (size_t p = 0; p < lengths.size(); ++p) {
    prompts.emplace_back();
    for (int64_t i = 0; i < lengths[p]; ++i) prompts.back().push_back(int32_t((i * 31 + p * 7 + 3) % V));
  }
  std::vector<std::vector<float>> alone;
  {
    RunnerConfig rc;
    rc.context = 128;
    rc.slots = int(lengths.size());
    rc.max_batch = int(lengths.size());
    rc.min_scratch = 128;
    ModelRunner runner(tf, rc);
    for (size_t p = 0; p < prompts.size(); ++p) {
      runner.prefill(prompts[p].data(), int64_t(prompts[p].size()), 0, int32_t(p), RowSampling{});
      alone.emplace_back(size_t(V));
      gpu->to_host(runner.logits(), alone.back().data(), V);
    }
    std::vector<ModelRunner::PrefillPart> parts;
    for (size_t p = 0; p < prompts.size(); ++p)
      parts.push_back({prompts[p].data(), int64_t(prompts[p].size()), 0, int32_t(p), true, RowSampling{}});
    runner.prefill(parts);
    std::vector<float> packed(size_t(V) * prompts.size());
    gpu->to_host(runner.logits(), packed.data(), V * int64_t(prompts.size()));
    for (size_t p = 0; p < prompts.size(); ++p) {
      const std::vector<float> row(packed.begin() + int64_t(p) * V, packed.begin() + int64_t(p + 1) * V);
      EXPECT_LT(rel_err(row, alone[p]), 3e-2) << "prompt " << p;
    }
    // Then one decode token for each: alone (GEMV), and all four together (GEMM, whose
    // inputs the norm, activation and attention kernels leave in bf16), direct, captured
    // and replayed.
    const int b = int(prompts.size());
    std::vector<int32_t> tokens(static_cast<size_t>(b)), pos(static_cast<size_t>(b)), seqs(static_cast<size_t>(b)),
        ids(static_cast<size_t>(b));
    std::vector<RowSampling> params(static_cast<size_t>(b));
    std::vector<std::vector<float>> one;
    for (int i = 0; i < b; ++i) {
      tokens[size_t(i)] = int32_t((i * 11 + 5) % V), pos[size_t(i)] = int32_t(lengths[size_t(i)]), seqs[size_t(i)] = i;
      runner.decode(&tokens[size_t(i)], &pos[size_t(i)], &seqs[size_t(i)], &params[size_t(i)], 1, &ids[size_t(i)]);
      one.emplace_back(size_t(V));
      gpu->to_host(runner.logits(), one.back().data(), V);
    }
    for (int run = 0; run < 3; ++run) {
      runner.decode(tokens.data(), pos.data(), seqs.data(), params.data(), b, ids.data());
      std::vector<float> together(size_t(V) * size_t(b));
      gpu->to_host(runner.logits(), together.data(), V * b);
      for (int i = 0; i < b; ++i) {
        const std::vector<float> row(together.begin() + int64_t(i) * V, together.begin() + int64_t(i + 1) * V);
        EXPECT_LT(rel_err(row, one[size_t(i)]), 3e-2) << "decode run " << run << " sequence " << i;
      }
    }
  }
}

// A model too large for the GPU, or a context too long for its memory: a clear error.
TEST(CudaLimits, ContextTooLongForMemoryIsAClearError) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  SyntheticSpec spec;
  spec.arch = "llama";
  const std::string path = test::scratch_dir() + "/limits.gguf";
  write_synthetic_checkpoint(spec, path);
  auto gpu = make_cuda_backend(0);
  auto m = Model::load(path, *gpu);
  try {
    KvCache kv = m->transformer().new_kv_cache(int64_t(1) << 31, 1024);
    m->transformer().free_kv_cache(kv);
    FAIL() << "expected an out-of-memory error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kLimit);
    EXPECT_NE(std::string(e.what()).find("KV cache"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace brisk
#endif
