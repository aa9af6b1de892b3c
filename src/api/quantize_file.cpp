// brisk::quantize_file (brisk quantize): rewrite a GGUF checkpoint's matrices in another format. The target may be
// any format brisk reads (q8_0, q4_k, q6_k, bf16, ...), brisk's packed int8 (i8) or FP8
// E4M3 (fp8): int8 or fp8 values with one float32 scale per output row (written as a
// companion tensor <name>_scale), which the GPU streams at one byte per weight. Vectors
// (norms, biases), matrices that already carry scales (i8, fp8) and
// matrices whose rows are not whole blocks of the target stay as they are. Metadata is
// copied unchanged.
#include <cstring>
#include <memory>

#include "base/error.hpp"
#include "base/thread_pool.hpp"
#include "brisk/files.hpp"
#include "format/checkpoint.hpp"
#include "format/gguf_writer.hpp"
#include "quant/fp8.hpp"
#include "quant/quantize.hpp"

namespace brisk {
namespace {

// Types whose rows carry a float32 scale in a companion tensor.
bool row_scaled(DType t) { return t == DType::I8 || t == DType::F8_E4M3; }

bool is_matrix(const TensorInfo& t) {
  return t.shape.size() == 2 && t.shape[0] > 1 && t.name.size() > 6 && t.name.compare(t.name.size() - 6, 6, "weight") == 0;
}

}  // namespace

QuantizeResult quantize_file(const QuantizeRequest& o) {
  auto target = dtype_from_name(o.type);
  if (!target) throw Error(ErrorCode::kInvalidArgument, "unknown type '" + o.type + "'", "--type");
  auto ckpt = open_checkpoint(o.in);
  if (ckpt->format != "gguf")
    throw Error(ErrorCode::kUnsupported, "brisk quantize reads GGUF files (this is " + ckpt->format + ")", o.in);
  GgufWriter w;
  for (const auto& [key, value] : ckpt->metadata)
    if (key != "general.alignment") w.add(key, value);
  ThreadPool pool(o.threads);
  int converted = 0, kept = 0;
  for (const TensorInfo& t : ckpt->tensors) {
    const int64_t cols = t.shape.empty() ? 0 : t.shape.back();
    const bool fits = dtype_bytes(*target, uint64_t(cols)).has_value();
    if (!is_matrix(t) || t.dtype == *target || !fits || row_scaled(t.dtype)) {
      w.add_tensor(t.name, t.dtype, t.shape, std::span<const uint8_t>(t.data, t.nbytes));
      ++kept;
      continue;
    }
    // Converted when the file is written, one matrix at a time (a 7B model never sits in
    // memory whole); an I8 or FP8 matrix's scales are written right after it.
    const int64_t rows = t.shape[0];
    const DType from = t.dtype, to = *target;
    const uint8_t* src = t.data;
    auto scales = std::make_shared<std::vector<float>>();
    w.add_tensor_lazy(t.name, to, t.shape, [&pool, from, to, src, rows, cols, scales] {
      const uint64_t in_rb = *dtype_bytes(from, uint64_t(cols)), out_rb = *dtype_bytes(to, uint64_t(cols));
      std::vector<uint8_t> bytes(out_rb * uint64_t(rows));
      scales->assign(row_scaled(to) ? size_t(rows) : 0, 0.f);
      pool.parallel_for(rows, [&](int64_t r0, int64_t r1) {
        std::vector<float> row(static_cast<size_t>(cols));
        for (int64_t r = r0; r < r1; ++r) {
          dequantize_row(from, src + uint64_t(r) * in_rb, row.data(), cols);
          uint8_t* dst = bytes.data() + uint64_t(r) * out_rb;
          if (to == DType::I8) (*scales)[size_t(r)] = quantize_row_i8(row.data(), reinterpret_cast<int8_t*>(dst), cols);
          else if (to == DType::F8_E4M3) (*scales)[size_t(r)] = quantize_row_fp8(row.data(), dst, cols);
          else quantize_row(to, row.data(), dst, cols);
        }
      });
      return bytes;
    });
    if (row_scaled(to))
      w.add_tensor_lazy(t.name + "_scale", DType::F32, {rows}, [scales] {
        std::vector<uint8_t> sb(scales->size() * 4);
        std::memcpy(sb.data(), scales->data(), sb.size());
        return sb;
      });
    ++converted;
  }
  w.write(o.out);
  return QuantizeResult{converted, kept, dtype_name(*target)};
}

bool is_weight_type(const std::string& name) { return dtype_from_name(name).has_value(); }

}  // namespace brisk

