// Deterministic synthetic checkpoints: real file formats (GGUF, or an HF directory with
// config.json + model.safetensors + tokenizer.json), random weights. Tests compare them
// against transformers; GPU benchmarks use them at real shapes (e.g. Qwen2.5-7B) without
// downloading anything. The same seed gives the same weights in both formats.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "quant/dtype.hpp"

namespace brisk {

struct SyntheticSpec {
  std::string arch = "llama";     // llama, qwen2, qwen3, gemma3
  std::string size = "tiny";      // tiny, small, or a real shape: qwen2.5-7b, llama3-8b, gemma3-27b, gemma3-270m
  std::string format = "gguf";    // gguf or hf
  DType dtype = DType::F32;       // matrices; norms and biases stay F32
  // F8_E4M3 (hf only): the layers' matrices in FP8 with scales per tensor, channel or
  // block (synthetic_fp8.hpp); the embeddings and the output head in BF16, as FP8 releases.
  std::string fp8_scales = "channel";
  // dynamic (per token, scales computed at run time) or static (tensor and channel layouts:
  // one input_scale per matrix, as compressed-tensors writes a calibrated model).
  std::string fp8_activations = "dynamic";
  uint64_t seed = 1;
};

// Names accepted by SyntheticSpec::size for an arch.
std::vector<std::string> synthetic_sizes(const std::string& arch);

// Writes the checkpoint: a .gguf file, or a directory for format "hf". Throws Error on
// an unknown arch/size/format or a dtype the format cannot hold.
void write_synthetic_checkpoint(const SyntheticSpec& spec, const std::string& out_path);

}  // namespace brisk
