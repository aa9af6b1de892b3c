// FP8 E4M3 matrices as Hugging Face's FP8 checkpoints store them, for the synthetic
// generator: the values and their scale tensor in one of three layouts.
//   tensor:  <name>_scale, one float32 ([1]), compressed-tensors' "tensor" strategy
//   channel: <name>_scale, float32 [rows, 1], compressed-tensors' "channel" strategy
//   block:   <name>_scale_inv, float32 [ceil(rows / 128), ceil(cols / 128)], the
//            block-scaled layout of Qwen3's and DeepSeek's FP8 releases
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "format/safetensors_writer.hpp"

namespace brisk {

constexpr int64_t kFp8Block = 128;

// The weight and its scale tensor, named after `name` (the weight's).
std::vector<SafetensorsTensor> encode_fp8_matrix(const std::string& name, const std::vector<float>& v, int64_t rows,
                                                 int64_t cols, const std::string& scheme);

// config.json's quantization_config for the scheme and the activations' scales, dynamic or
// static (throws Error for an unknown one, or static with block scales).
nlohmann::json fp8_quantization_config(const std::string& scheme, const std::string& activations);

// A static activation scale for the weight `name` (<layer>.weight -> <layer>.input_scale):
// the same for every matrix, one that a random model's inputs (a few units at most) rarely
// saturate, as a calibration would choose.
SafetensorsTensor fp8_static_input_scale(const std::string& name);
constexpr float kFp8SyntheticInputScale = 8.f / 448.f;

}  // namespace brisk
