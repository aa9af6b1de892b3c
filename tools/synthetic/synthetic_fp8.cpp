#include "synthetic/synthetic_fp8.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/error.hpp"
#include "quant/fp8.hpp"

namespace brisk {
namespace {

std::vector<uint8_t> float_bytes(const std::vector<float>& f) {
  std::vector<uint8_t> b(f.size() * 4);
  std::memcpy(b.data(), f.data(), b.size());
  return b;
}

float scale_for(float amax) { return amax > 0.f ? amax / kFp8E4M3Max : 1.f; }

// One scale per 128 x 128 block; block (i, j) covers rows 128i.. and columns 128j...
std::vector<float> block_scales(const std::vector<float>& v, int64_t rows, int64_t cols) {
  const int64_t gr = (rows + kFp8Block - 1) / kFp8Block, gc = (cols + kFp8Block - 1) / kFp8Block;
  std::vector<float> amax(size_t(gr * gc), 0.f);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      float& a = amax[size_t((r / kFp8Block) * gc + c / kFp8Block)];
      a = std::max(a, std::fabs(v[size_t(r * cols + c)]));
    }
  for (float& a : amax) a = scale_for(a);
  return amax;
}

}  // namespace

std::vector<SafetensorsTensor> encode_fp8_matrix(const std::string& name, const std::vector<float>& v, int64_t rows,
                                                 int64_t cols, const std::string& scheme) {
  std::vector<uint8_t> q(size_t(rows * cols));
  std::vector<float> scales;
  auto scale_of = [&](int64_t r, int64_t c) -> float {
    if (scheme == "tensor") return scales[0];
    if (scheme == "channel") return scales[size_t(r)];
    return scales[size_t((r / kFp8Block) * ((cols + kFp8Block - 1) / kFp8Block) + c / kFp8Block)];
  };
  if (scheme == "tensor") {
    float amax = 0.f;
    for (float x : v) amax = std::max(amax, std::fabs(x));
    scales = {scale_for(amax)};
  } else if (scheme == "channel") {
    scales.resize(size_t(rows));
    for (int64_t r = 0; r < rows; ++r) {
      float amax = 0.f;
      for (int64_t c = 0; c < cols; ++c) amax = std::max(amax, std::fabs(v[size_t(r * cols + c)]));
      scales[size_t(r)] = scale_for(amax);
    }
  } else if (scheme == "block") {
    scales = block_scales(v, rows, cols);
  } else {
    throw Error(ErrorCode::kInvalidArgument, "unknown FP8 scale layout '" + scheme + "' (tensor, channel or block)");
  }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) q[size_t(r * cols + c)] = float_to_fp8_e4m3(v[size_t(r * cols + c)] / scale_of(r, c));
  std::vector<int64_t> scale_shape = scheme == "tensor"  ? std::vector<int64_t>{1}
                                     : scheme == "channel" ? std::vector<int64_t>{rows, 1}
                                                           : std::vector<int64_t>{(rows + kFp8Block - 1) / kFp8Block,
                                                                                  (cols + kFp8Block - 1) / kFp8Block};
  return {{name, DType::F8_E4M3, {rows, cols}, std::move(q)},
          {name + (scheme == "block" ? "_scale_inv" : "_scale"), DType::F32, scale_shape, float_bytes(scales)}};
}

nlohmann::json fp8_quantization_config(const std::string& scheme, const std::string& activations) {
  if (activations != "dynamic" && activations != "static")
    throw Error(ErrorCode::kInvalidArgument, "unknown FP8 activation scales '" + activations + "' (dynamic or static)");
  const bool dynamic = activations == "dynamic";
  if (scheme == "block") {
    if (!dynamic) throw Error(ErrorCode::kInvalidArgument, "static FP8 activation scales go with tensor or channel scales");
    return {{"quant_method", "fp8"}, {"fmt", "e4m3"}, {"activation_scheme", "dynamic"},
            {"weight_block_size", {kFp8Block, kFp8Block}}};
  }
  if (scheme != "tensor" && scheme != "channel")
    throw Error(ErrorCode::kInvalidArgument, "unknown FP8 scale layout '" + scheme + "' (tensor, channel or block)");
  nlohmann::json weights{{"num_bits", 8}, {"type", "float"}, {"strategy", scheme}, {"symmetric", true},
                         {"dynamic", false}};
  nlohmann::json acts{{"num_bits", 8}, {"type", "float"}, {"strategy", dynamic ? "token" : "tensor"},
                      {"symmetric", true}, {"dynamic", dynamic}};
  return {{"quant_method", "compressed-tensors"}, {"format", "float-quantized"},
          {"config_groups", {{"group_0", {{"weights", weights}, {"input_activations", acts}, {"targets", {"Linear"}}}}}},
          {"ignore", {"lm_head"}}};
}

SafetensorsTensor fp8_static_input_scale(const std::string& name) {
  const std::string base = name.ends_with(".weight") ? name.substr(0, name.size() - 6) : name + ".";
  return {base + "input_scale", DType::F32, {1}, float_bytes({kFp8SyntheticInputScale})};
}

}  // namespace brisk
