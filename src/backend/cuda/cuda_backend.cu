#include "backend/cuda/cuda_backend_impl.hpp"

#include <cuda_profiler_api.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "quant/dtype.hpp"

namespace brisk {

int cuda_device_count() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

int cuda_compute_major(int device) {
  int major = 0;
  return cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess ? major : 0;
}

int cuda_compute_capability(int device) {
  int minor = 0;
  if (cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) return 0;
  return cuda_compute_major(device) * 10 + minor;
}

CudaDevices cuda_devices() {
  CudaDevices d;
  d.runtime_version = CUDART_VERSION;
  if (cudaDriverGetVersion(&d.driver_version) != cudaSuccess) d.driver_version = 0;
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    d.note = cudaGetErrorString(e);
    cudaGetLastError();
    return d;
  }
  int current = 0;
  cudaGetDevice(&current);
  for (int i = 0; i < n; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
    CudaDevices::Gpu g;
    g.name = prop.name;
    g.compute_capability = prop.major * 10 + prop.minor;
    g.memory_bytes = prop.totalGlobalMem;
    g.has_code = cudaSetDevice(i) == cudaSuccess && cuda::has_kernel_image();
    d.gpus.push_back(std::move(g));
  }
  cudaSetDevice(current);
  cudaGetLastError();
  return d;
}

std::unique_ptr<Backend> make_cuda_backend(int device, const CudaOptions& options) {
  return std::make_unique<cuda::CudaBackend>(device, options);
}

namespace cuda {

bool& pdl_enabled() {
  static bool on = false;
  return on;
}

namespace {

std::string mib(uint64_t b) { return std::to_string((b + (1u << 20) - 1) >> 20) + " MiB"; }

GpuLayout layout_of(DType t) {
  switch (t) {
    case DType::F32: return GpuLayout::F32;
    case DType::F16: return GpuLayout::F16;
    case DType::BF16: return GpuLayout::BF16;
    case DType::Q8_0: return GpuLayout::I8;
    case DType::Q4_0: return GpuLayout::Q4_0;
    case DType::Q5_0: return GpuLayout::Q5_0;
    case DType::Q4_K: return GpuLayout::Q4_K;
    case DType::Q5_K: return GpuLayout::Q5_K;
    case DType::Q6_K: return GpuLayout::Q6_K;
    case DType::I8: return GpuLayout::I8;
    case DType::F8_E4M3: return GpuLayout::F8;
  }
  throw Error(ErrorCode::kUnsupported, std::string("the CUDA backend has no kernels for ") + dtype_name(t));
}

// Bytes of one row in its GPU layout.
uint64_t gpu_row_bytes(DType t, int64_t cols, uint64_t file_row_bytes) {
  switch (t) {
    case DType::Q8_0: return uint64_t(cols);
    case DType::Q6_K: return uint64_t(cols / 256) * kQ6KPaddedBytes;
    default: return file_row_bytes;
  }
}

// Writes `rows` rows in GPU layout (data part) from file-layout rows.
void repack_rows(DType t, const uint8_t* src, uint64_t src_rb, uint8_t* dst, uint64_t dst_rb, int64_t rows,
                 int64_t cols) {
  if (t == DType::Q8_0) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t b = 0; b < cols / 32; ++b) std::memcpy(dst + r * dst_rb + b * 32, src + r * src_rb + b * 34 + 2, 32);
  } else if (t == DType::Q6_K) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t b = 0; b < cols / 256; ++b) {
        uint8_t* o = dst + r * dst_rb + b * kQ6KPaddedBytes;
        std::memcpy(o, src + r * src_rb + b * 210, 210);
        std::memset(o + 210, 0, kQ6KPaddedBytes - 210);
      }
  } else {
    for (int64_t r = 0; r < rows; ++r) std::memcpy(dst + r * dst_rb, src + r * src_rb, dst_rb);
  }
}

}  // namespace

CudaBackend::CudaBackend(int device, const CudaOptions& options)
    : device_(device), exact_(options.exact), mmq_(options.mmq) {
  const bool exact = options.exact;
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess)
    throw Error(ErrorCode::kUnsupported, std::string("no usable CUDA device: ") + cudaGetErrorString(e));
  if (device < 0 || device >= count)
    throw Error(ErrorCode::kInvalidArgument, "CUDA device " + std::to_string(device) + " does not exist (" +
                                                 std::to_string(count) + " found)");
  int driver = 0;
  BRISK_CUDA_CHECK(cudaDriverGetVersion(&driver));
  if (driver < CUDART_VERSION)
    throw Error(ErrorCode::kUnsupported,
                "the NVIDIA driver supports CUDA " + std::to_string(driver / 1000) + "." +
                    std::to_string(driver % 1000 / 10) + " but this build of brisk needs CUDA " +
                    std::to_string(CUDART_VERSION / 1000) + "." + std::to_string(CUDART_VERSION % 1000 / 10) +
                    " or newer: update the driver");
  cudaDeviceProp prop{};
  BRISK_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  cc_major_ = prop.major, cc_minor_ = prop.minor;
  const std::string sm = "sm_" + std::to_string(prop.major) + std::to_string(prop.minor);
  if (prop.major * 10 + prop.minor < 75)
    throw Error(ErrorCode::kUnsupported, std::string("GPU ") + prop.name + " (" + sm +
                                             ") is not supported: brisk's CUDA backend needs compute capability 7.5 or newer");
  BRISK_CUDA_CHECK(cudaSetDevice(device));
  if (!has_kernel_image())
    throw Error(ErrorCode::kUnsupported, std::string("this brisk binary has no machine code for ") + prop.name + " (" +
                                             sm + "): rebuild with -DBRISK_CUDA_ARCHS=" +
                                             std::to_string(prop.major) + std::to_string(prop.minor));
  name_ = "cuda:" + std::to_string(device) + " (" + prop.name + ", " + sm + ", " + mib(prop.totalGlobalMem) +
          (exact ? ", exact float32" : "") + ")";
  // Programmatic dependent launch (launch.cuh) where the hardware has it, unless turned off
  // (to measure what it buys, or to rule it out).
  pdl_enabled() = prop.major >= 9 && options.pdl;
  float_decode_forced() = options.float_decode_attention;
  BRISK_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  gemm_ = std::make_unique<Gemm>(stream_);
  BRISK_CUDA_CHECK(cudaMallocHost(&staging_, kStagingBytes));
  scratch_slots_.assign(kSlotCount, nullptr);
  scratch_sizes_.assign(kSlotCount, 0);
}

CudaBackend::~CudaBackend() {
  cudaStreamSynchronize(stream_);
  for (auto g : graphs_) cudaGraphExecDestroy(g);
  for (void* p : uploads_) cudaFree(p);
  for (void* p : scratch_slots_) cudaFree(p);
  for (auto& [k, p] : inv_freq_) cudaFree(p);
  for (auto& [p, n] : sizes_) cudaFree(p);
  gemm_.reset();
  cudaFreeHost(staging_);
  cudaStreamDestroy(stream_);
}

void* CudaBackend::device_alloc(uint64_t bytes, const std::string& what) {
  if (capturing_) throw Error(ErrorCode::kInternal, "allocation of " + what + " inside a captured step");
  void* p = nullptr;
  cudaError_t e = cudaMalloc(&p, std::max<uint64_t>(bytes, 16));
  if (e != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error state
    size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    throw Error(ErrorCode::kLimit, "out of GPU memory: " + what + " needs " + mib(bytes) + " but " + mib(free_b) +
                                       " of " + mib(total_b) + " are free on " + name_);
  }
  live_bytes_ += bytes;
  peak_bytes_ = std::max(peak_bytes_, live_bytes_);
  return p;
}

GpuMatrix CudaBackend::matrix(const DeviceWeight& w) {
  GpuMatrix m;
  m.layout = layout_of(w.dtype);
  m.data = static_cast<const uint8_t*>(w.data);
  m.row_bytes = w.row_bytes;
  m.rows = w.rows, m.cols = w.cols;
  if (w.dtype == DType::Q8_0) m.aux = RowAux{static_cast<const float*>(w.aux), w.cols / 32, 32};
  if (w.dtype == DType::I8) m.aux = RowAux{static_cast<const float*>(w.aux), 1, int(w.cols)};
  if (w.dtype == DType::F8_E4M3) {
    const int64_t group = w.scale_cols ? w.scale_cols : w.cols;
    m.aux = RowAux{static_cast<const float*>(w.aux), (w.cols + group - 1) / group, int(group)};
  }
  return m;
}

DeviceWeight CudaBackend::describe(const WeightView& w) const {
  auto file_rb = dtype_bytes(w.dtype, uint64_t(w.cols));
  if (!file_rb) throw Error(ErrorCode::kFormat, "row is not whole blocks", w.name);
  layout_of(w.dtype);  // throws for a dtype without kernels
  const bool plain = w.dtype == DType::F32 || w.dtype == DType::F16 || w.dtype == DType::BF16;
  if ((w.dtype == DType::I8 || w.dtype == DType::F8_E4M3) && w.cols % 16 != 0)
    throw Error(ErrorCode::kUnsupported, std::string("the CUDA backend needs ") + dtype_name(w.dtype) +
                                             " rows of a multiple of 16 elements", w.name);
  if (w.dtype == DType::F8_E4M3 && w.scale_cols % 16 != 0)
    throw Error(ErrorCode::kUnsupported, "the CUDA backend needs FP8 scale blocks of a multiple of 16 columns", w.name);
  if (plain && w.rows > 1 && w.cols % 8 != 0)
    throw Error(ErrorCode::kUnsupported, "the CUDA backend needs matrix rows of a multiple of 8 elements, not " +
                                             std::to_string(w.cols), w.name);
  return DeviceWeight{w.name, w.dtype, w.rows, w.cols, gpu_row_bytes(w.dtype, w.cols, *file_rb), nullptr, nullptr};
}

// Repacks w's rows (gpu_row_bytes apart) into dst through the pinned staging buffer.
void CudaBackend::copy_rows(const WeightView& w, const DeviceWeight& d, uint8_t* dst) {
  const uint64_t file_rb = *dtype_bytes(w.dtype, uint64_t(w.cols));
  const auto* src = static_cast<const uint8_t*>(w.data);
  const int64_t chunk = std::max<int64_t>(1, int64_t(kStagingBytes / std::max<uint64_t>(d.row_bytes, 1)));
  for (int64_t r = 0; r < w.rows; r += chunk) {
    const int64_t n = std::min(chunk, w.rows - r);
    repack_rows(w.dtype, src + uint64_t(r) * file_rb, file_rb, static_cast<uint8_t*>(staging_), d.row_bytes, n,
                w.cols);
    BRISK_CUDA_CHECK(cudaMemcpy(dst + uint64_t(r) * d.row_bytes, staging_, uint64_t(n) * d.row_bytes,
                                cudaMemcpyHostToDevice));
  }
}

// 16-bit matrices of one width go end to end in one allocation: the GEMM path then runs one
// product over all of them (matmul_multi), which small matrices (k, v) need to fill the GPU.
void CudaBackend::upload_adjacent(const WeightView* const* ws, int count, DeviceWeight* out) {
  bool adjacent = count > 1;
  for (int i = 0; i < count && adjacent; ++i)
    adjacent = ws[i]->data && (ws[i]->dtype == DType::BF16 || ws[i]->dtype == DType::F16) &&
               ws[i]->dtype == ws[0]->dtype && ws[i]->cols == ws[0]->cols && ws[i]->rows > 1;
  if (!adjacent) return Backend::upload_adjacent(ws, count, out);
  uint64_t total = 0;
  for (int i = 0; i < count; ++i) {
    out[i] = describe(*ws[i]);
    total += out[i].row_bytes * uint64_t(out[i].rows);
  }
  auto* dst = static_cast<uint8_t*>(device_alloc(total, "weights " + ws[0]->name + " and the next"));
  uploads_.push_back(dst);
  for (int i = 0; i < count; ++i) {
    copy_rows(*ws[i], out[i], dst);
    out[i].data = dst;
    dst += out[i].row_bytes * uint64_t(out[i].rows);
  }
}

DeviceWeight CudaBackend::upload(const WeightView& w) {
  DeviceWeight d = describe(w);
  const uint64_t file_rb = *dtype_bytes(w.dtype, uint64_t(w.cols));
  auto* dst = static_cast<uint8_t*>(device_alloc(d.row_bytes * uint64_t(w.rows), "weight " + w.name));
  uploads_.push_back(dst);
  const auto* src = static_cast<const uint8_t*>(w.data);
  copy_rows(w, d, dst);
  d.data = dst;
  if (w.dtype == DType::Q8_0) {  // the blocks' f16 scales, as floats [rows][cols / 32]
    const int64_t groups = w.cols / 32;
    auto* scales = static_cast<float*>(device_alloc(uint64_t(w.rows * groups) * 4, "scales of " + w.name));
    uploads_.push_back(scales);
    const int64_t per = int64_t(kStagingBytes / 4) / groups;
    for (int64_t r = 0; r < w.rows; r += per) {
      const int64_t n = std::min(per, w.rows - r);
      auto* out = static_cast<float*>(staging_);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t b = 0; b < groups; ++b) {
          uint16_t h;
          std::memcpy(&h, src + uint64_t(r + i) * file_rb + b * 34, 2);
          out[i * groups + b] = __half2float(__ushort_as_half(h));
        }
      BRISK_CUDA_CHECK(cudaMemcpy(scales + r * groups, staging_, uint64_t(n * groups) * 4, cudaMemcpyHostToDevice));
    }
    d.aux = scales;
    d.aux_bytes = uint64_t(w.rows * groups) * 4;
  }
  if (w.dtype == DType::I8 || w.dtype == DType::F8_E4M3) {  // the scales, as they are
    if (!w.scales) throw Error(ErrorCode::kFormat, std::string(dtype_name(w.dtype)) + " weight without scales", w.name);
    const int64_t groups = w.scale_cols ? (w.cols + w.scale_cols - 1) / w.scale_cols : 1;
    const uint64_t bytes = uint64_t(w.rows * groups) * 4;
    auto* scales = static_cast<float*>(device_alloc(bytes, "scales of " + w.name));
    uploads_.push_back(scales);
    BRISK_CUDA_CHECK(cudaMemcpy(scales, w.scales, bytes, cudaMemcpyHostToDevice));
    d.aux = d.scales = scales;
    d.scale_cols = w.scale_cols;
    d.aux_bytes = bytes;
    d.input_scale = w.input_scale;
    if (!exact_ && cc_major_ * 10 + cc_minor_ >= 89) d.block_scales = upload_fp8_blocks(w);
  }
  return d;
}

// The GEMV streams any format for up to kGemvMaxTokens tokens; 16-bit weights go to the
// tensor cores from 2 tokens on (they need no dequantizing, and cuBLASLt reads them once),
// except in exact mode, whose GEMMs are float32.
bool CudaBackend::use_gemv(const DeviceWeight& w, int64_t n) const {
  if (n > kGemvMaxTokens) return false;
  const bool sixteen = w.dtype == DType::BF16 || w.dtype == DType::F16;
  return n == 1 || exact_ || !sixteen;
}

// Decode products against 8-bit and K-quant weights take int8 activations (formats_q8.cuh),
// as llama.cpp's do; exact mode keeps every product in float32.
const Q8Activations* CudaBackend::quantized_input(const DeviceWeight& w, const float* x, int64_t n) {
  if (exact_ || !use_gemv(w, n) || !has_q8_dot(layout_of(w.dtype)) || w.cols % 32 != 0) return nullptr;
  return &quantize_input(x, n, w.cols);
}

const Q8Activations& CudaBackend::quantize_input(const float* x, int64_t n, int64_t cols) {
  void* buf = scratch(scratch_slots_, kSlotXQ, q8_activation_bytes(n, cols));
  q8_view_ = q8_activations_in(buf, n, cols);
  quantize_activations(x, n, cols, q8_view_, stream_);
  return q8_view_;
}

// Batches above the GEMV's on planar int8 (Q8_0, I8) and Q4_K weights take the integer tensor cores
// (mmq.cu), which read the weights once per 64 tokens; dequantizing to bf16 for cuBLASLt
// moves ~4x their bytes. Larger batches (prefill) stay on cuBLASLt, whose bf16 rate the
// int8 kernel does not reach once the weights are reused across many token tiles.
bool CudaBackend::use_mmq(const DeviceWeight& w, int64_t n) const {
  return !exact_ && mmq_ && n > kGemvMaxTokens && n <= kMmqMaxTokens && w.cols % 32 == 0 &&
         has_mmq(layout_of(w.dtype), cc_major_);
}

void CudaBackend::run_mmq(const DeviceWeight& w, const Q8Activations& xq, int64_t n, float* y, const float* bias,
                          bool accumulate) {
  const int splits = mmq_splits(w.rows, n, w.cols);
  float* partial = nullptr;
  if (splits > 1)
    partial = static_cast<float*>(scratch(scratch_slots_, kSlotSplitK, uint64_t(splits) * uint64_t(n * w.rows) * 4));
  mmq(matrix(w), xq, n, y, bias, accumulate, splits, partial, stream_);
}

void* CudaBackend::alloc_bytes(uint64_t bytes) {
  void* p = device_alloc(bytes, "a buffer of " + mib(bytes));
  sizes_[p] = bytes;
  return p;
}

void CudaBackend::release_bytes(void* p) {
  x16_of_ = nullptr;  // its memory may come back as another buffer
  if (!p) return;
  auto it = sizes_.find(p);
  if (it == sizes_.end()) return;
  live_bytes_ -= it->second;
  sizes_.erase(it);
  cudaFree(p);
}

void CudaBackend::copy_to_host(const void* src, void* dst, uint64_t bytes) {
  if (capturing_) throw Error(ErrorCode::kInternal, "copy to the host inside a captured step");
  BRISK_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
  BRISK_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaBackend::copy_from_host(const void* src, void* dst, uint64_t bytes) {
  x16_of_ = nullptr;
  if (capturing_) throw Error(ErrorCode::kInternal, "copy from the host inside a captured step");
  BRISK_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_));
}

void CudaBackend::synchronize() { BRISK_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

void* CudaBackend::scratch(std::vector<void*>& slots, size_t index, uint64_t bytes) {
  if (scratch_sizes_[index] < bytes) {
    if (slots[index] && !graphs_.empty()) {
      uploads_.push_back(slots[index]);  // a captured step may still use it: free at the end
      slots[index] = nullptr;
    } else if (slots[index]) {
      BRISK_CUDA_CHECK(cudaStreamSynchronize(stream_));
      cudaFree(slots[index]);
      live_bytes_ -= scratch_sizes_[index];
      slots[index] = nullptr;
      scratch_sizes_[index] = 0;
    }
    slots[index] = device_alloc(bytes, "scratch of " + mib(bytes));
    scratch_sizes_[index] = bytes;
  }
  return slots[index];
}

void CudaBackend::embed(const DeviceWeight& table, const int32_t* ids, int64_t n, float scale, float* out) {
  x16_of_ = nullptr;
  embed_rows(matrix(table), ids, n, scale, out, stream_);
}

void CudaBackend::rmsnorm(const float* x, int64_t rows, const DeviceWeight& w, float eps, float* out) {
  __nv_bfloat16* out16 = out != x ? offer16(rows, rows * w.cols) : nullptr;
  x16_of_ = nullptr;
  if (cuda::rmsnorm(x, rows, w.cols, static_cast<const float*>(w.data), eps, out, stream_, out16))
    x16_of_ = out, x16_elems_ = rows * w.cols;
}

// The X16 scratch for a producer to leave a bf16 copy of its output in, when a bf16 GEMM
// over the same number of tokens is what ran last (so most likely what reads it next).
__nv_bfloat16* CudaBackend::offer16(int64_t rows, int64_t elems) {
  if (exact_ || rows != gemm16_rows_) return nullptr;
  return static_cast<__nv_bfloat16*>(scratch(scratch_slots_, kSlotX16, uint64_t(elems) * 2));
}

// x as the GEMM's input: 16-bit for the tensor cores, as it is (float32) in exact mode.
const void* CudaBackend::gemm_input(const float* x, int64_t n, const DeviceWeight& w) {
  const bool half = w.dtype == DType::F16;
  const bool ready = !exact_ && !half && x == x16_of_ && n * w.cols == x16_elems_;  // its producer wrote it
  x16_of_ = nullptr;
  if (exact_) return x;
  void* x16 = scratch(scratch_slots_, kSlotX16, uint64_t(n * w.cols) * 2);
  if (!half) gemm16_rows_ = n;
  if (!ready) convert_activations(x, x16, n * w.cols, half, stream_);
  return x16;
}

// y [n][rows] = xs W^T, W being `rows` rows from w's data on (more than w.rows covers the
// matrices placed after it by upload_adjacent). Quantized weights are dequantized first.
void CudaBackend::gemm(const void* xs, int64_t n, const DeviceWeight& w, int64_t rows, float* y, bool accumulate) {
  using Op = Gemm::Operands;
  const Op type = exact_ ? Op::F32 : w.dtype == DType::F16 ? Op::F16 : Op::BF16;
  const void* ws = w.data;
  const bool direct = exact_ ? w.dtype == DType::F32 : (w.dtype == DType::BF16 || w.dtype == DType::F16);
  if (!direct) {
    void* dq = scratch(scratch_slots_, kSlotW16, uint64_t(w.rows * w.cols) * (exact_ ? 4 : 2));
    dequantize_matrix(matrix(w), dq, exact_, stream_);
    ws = dq;
  }
  gemm_->run(ws, xs, y, rows, n, w.cols, type, accumulate);
}

void CudaBackend::matmul(const float* x, int64_t n, const DeviceWeight& w, float* y, const DeviceWeight* bias,
                         bool accumulate) {
  const float* b = bias ? static_cast<const float*>(bias->data) : nullptr;
  x = fp8_static_input(x, n, w);
  if (use_gemv(w, n)) {
    x16_of_ = nullptr;
    gemv(matrix(w), x, n, y, b, accumulate, stream_, quantized_input(w, x, n));
    return;
  }
  if (use_mmq(w, n)) {
    x16_of_ = nullptr;
    run_mmq(w, quantize_input(x, n, w.cols), n, y, b, accumulate);
    return;
  }
  if (use_fp8_gemm(w, n)) {
    x16_of_ = nullptr;
    run_fp8_gemm(w, quantize_fp8_input(x, n, w), n, y, b, accumulate);
    return;
  }
  gemm(gemm_input(x, n, w), n, w, w.rows, y, accumulate);
  if (b) add_bias(y, b, n, w.rows, stream_);
}

// Several matrices of one format and width over the same x (q, k, v): one GEMV pass, or x
// converted once for the GEMMs, one GEMM when the matrices lie end to end.
void CudaBackend::matmul_multi(const float* x, int64_t n, const DeviceWeight* const* ws, float* const* ys,
                               const DeviceWeight* const* biases, int count) {
  bool same = count <= 3;
  for (int i = 1; i < count; ++i)
    same &= ws[i]->dtype == ws[0]->dtype && ws[i]->cols == ws[0]->cols && ws[i]->input_scale == ws[0]->input_scale &&
            ws[i]->scale_cols == ws[0]->scale_cols;
  if (!same) return Backend::matmul_multi(x, n, ws, ys, biases, count);  // (each product forgets x16_of_)
  const float* b[3];
  for (int i = 0; i < count; ++i) b[i] = biases[i] ? static_cast<const float*>(biases[i]->data) : nullptr;
  x = fp8_static_input(x, n, *ws[0]);
  if (use_gemv(*ws[0], n)) {
    x16_of_ = nullptr;
    GpuMatrix m[3];
    const GpuMatrix* mp[3];
    for (int i = 0; i < count; ++i) m[i] = matrix(*ws[i]), mp[i] = &m[i];
    gemv_multi(mp, ys, b, count, x, n, false, stream_, quantized_input(*ws[0], x, n));
    return;
  }
  if (use_mmq(*ws[0], n)) {
    x16_of_ = nullptr;
    const Q8Activations& xq = quantize_input(x, n, ws[0]->cols);  // once for all of them
    for (int i = 0; i < count; ++i) run_mmq(*ws[i], xq, n, ys[i], b[i], false);
    return;
  }
  bool fp8 = true;
  for (int i = 0; i < count; ++i) fp8 &= use_fp8_gemm(*ws[i], n);
  if (fp8) {
    x16_of_ = nullptr;
    const Fp8Activations& xq = quantize_fp8_input(x, n, *ws[0]);  // once for all of them
    for (int i = 0; i < count; ++i) run_fp8_gemm(*ws[i], xq, n, ys[i], b[i], false);
    return;
  }
  const void* xs = gemm_input(x, n, *ws[0]);
  if (one_product(ws, count)) {
    RowSplit parts;
    parts.count = count;
    int64_t total = 0;
    for (int i = 0; i < count; ++i) {
      parts.rows[i] = ws[i]->rows, parts.outs[i] = ys[i], parts.biases[i] = b[i];
      total += ws[i]->rows;
    }
    auto* y = static_cast<float*>(scratch(scratch_slots_, kSlotFused, uint64_t(n * total) * 4));
    gemm(xs, n, *ws[0], total, y, false);
    split_rows(y, n, parts, stream_);
    return;
  }
  for (int i = 0; i < count; ++i) {
    gemm(xs, n, *ws[i], ws[i]->rows, ys[i], false);
    if (b[i]) add_bias(ys[i], b[i], n, ws[i]->rows, stream_);
  }
}

// Whether 16-bit matrices of one width lie end to end (upload_adjacent), so that one product
// covers them all. (Only 16-bit: others are dequantized one matrix at a time, and separate
// allocations can happen to lie end to end.)
bool CudaBackend::one_product(const DeviceWeight* const* ws, int count) const {
  bool ok = !exact_ && count > 1 && (ws[0]->dtype == DType::BF16 || ws[0]->dtype == DType::F16);
  for (int i = 1; i < count; ++i)
    ok &= ws[i]->dtype == ws[0]->dtype && ws[i]->cols == ws[0]->cols &&
          ws[i]->data == static_cast<const uint8_t*>(ws[i - 1]->data) + ws[i - 1]->rows * ws[i - 1]->row_bytes;
  return ok;
}

// On the GEMM path with q/k/v end to end: one product, then the split (with the biases) folded
// into the rope pass, which reads the product's rows where they are.
void CudaBackend::qkv_rope_kv_write(const float* x, int64_t n, const DeviceWeight* const* ws,
                                    const DeviceWeight* const* biases, float* const* qkv, int n_heads,
                                    const int32_t* positions, const int32_t* seqs, const RopeConfig& cfg, KvCache& kv,
                                    int layer) {
  const int64_t kvd = int64_t(kv.n_kv_heads) * kv.head_dim;  // (the fused pass reads rows of q | k | v)
  const bool shaped = ws[0]->rows == int64_t(n_heads) * kv.head_dim && ws[1]->rows == kvd && ws[2]->rows == kvd;
  if (use_gemv(*ws[0], n) || !shaped || !one_product(ws, 3))
    return Backend::qkv_rope_kv_write(x, n, ws, biases, qkv, n_heads, positions, seqs, cfg, kv, layer);
  const void* xs = gemm_input(x, n, *ws[0]);
  const int64_t total = ws[0]->rows + ws[1]->rows + ws[2]->rows;
  auto* y = static_cast<float*>(scratch(scratch_slots_, kSlotFused, uint64_t(n * total) * 4));
  gemm(xs, n, *ws[0], total, y, false);
  const float* b[3];
  for (int i = 0; i < 3; ++i) b[i] = biases[i] ? static_cast<const float*>(biases[i]->data) : nullptr;
  cuda::qkv_rope_kv_write(y, b, qkv[0], qkv[1], n, n_heads, positions, seqs, inv_freq(cfg), cfg.linear_factor,
                          cfg.style, kv, layer, stream_);
}

void CudaBackend::matmul_gated(const float* x, int64_t n, const DeviceWeight& gate, const DeviceWeight& up,
                               Activation act, float* out, float* scratch) {
  if (gate.dtype != up.dtype || gate.rows != up.rows || gate.cols != up.cols || gate.input_scale != up.input_scale ||
      gate.scale_cols != up.scale_cols)
    return Backend::matmul_gated(x, n, gate, up, act, out, scratch);
  x = fp8_static_input(x, n, gate);
  if (use_gemv(gate, n)) {
    x16_of_ = nullptr;
    gemv_gated(matrix(gate), matrix(up), x, n, act, out, stream_, quantized_input(gate, x, n));
    return;
  }
  if (use_mmq(gate, n)) {
    x16_of_ = nullptr;
    const Q8Activations& xq = quantize_input(x, n, gate.cols);
    run_mmq(gate, xq, n, out, nullptr, false);
    run_mmq(up, xq, n, scratch, nullptr, false);
    cuda::act_mul(out, scratch, n * gate.rows, act, out, stream_);
    return;
  }
  if (use_fp8_gemm(gate, n) && use_fp8_gemm(up, n)) {
    x16_of_ = nullptr;
    const Fp8Activations& xq = quantize_fp8_input(x, n, gate);
    run_fp8_gemm(gate, xq, n, out, nullptr, false);
    run_fp8_gemm(up, xq, n, scratch, nullptr, false);
    cuda::act_mul(out, scratch, n * gate.rows, act, out, stream_);
    return;
  }
  // Two products, even where gate and up lie end to end: cuBLASLt's best algorithm for the
  // one [2 x rows] product ran 5% slower than two (H200, Qwen2.5-7B shapes at batch 64,
  // bench/RESULTS.md), more than the launch it saves.
  const void* xs = gemm_input(x, n, gate);  // converted once for both products
  gemm(xs, n, gate, gate.rows, out, false);
  gemm(xs, n, up, up.rows, scratch, false);
  // The activation also leaves its output as bf16 for the down projection's GEMM (in the
  // input scratch, which may move now that the products have read it).
  __nv_bfloat16* out16 = offer16(n, n * gate.rows);
  cuda::act_mul(out, scratch, n * gate.rows, act, out, stream_, out16);
  if (out16) x16_of_ = out, x16_elems_ = n * gate.rows;
}

const float* CudaBackend::inv_freq(const RopeConfig& cfg) {
  std::vector<float> table(size_t(cfg.head_dim / 2));
  rope_inverse_frequencies(cfg, table.data());
  auto it = inv_freq_.find(table);
  if (it != inv_freq_.end()) return it->second;
  float* d = static_cast<float*>(device_alloc(table.size() * 4, "rope frequencies"));
  BRISK_CUDA_CHECK(cudaMemcpy(d, table.data(), table.size() * 4, cudaMemcpyHostToDevice));
  inv_freq_.emplace(std::move(table), d);
  return d;
}

void CudaBackend::rope(float* x, int64_t n, int n_heads, const int32_t* positions, const RopeConfig& cfg) {
  x16_of_ = nullptr;
  cuda::rope(x, n, n_heads, cfg.head_dim, positions, inv_freq(cfg), cfg.linear_factor, cfg.style, stream_);
}

void CudaBackend::rope_kv_write(float* q, float* k, const float* v, int64_t n, int n_heads, const int32_t* positions,
                                const int32_t* seqs, const RopeConfig& cfg, KvCache& kv, int layer) {
  x16_of_ = nullptr;
  cuda::rope_kv_write(q, k, v, n, n_heads, positions, seqs, inv_freq(cfg), cfg.linear_factor, cfg.style, kv, layer,
                      stream_);
}

void CudaBackend::kv_write(KvCache& kv, int layer, const float* k, const float* v, int64_t n,
                           const int32_t* positions, const int32_t* seqs) {
  x16_of_ = nullptr;
  cuda::kv_write(kv, layer, k, v, n, positions, seqs, stream_);
}

void CudaBackend::attention(const float* q, const KvCache& kv, int layer, int64_t n, const int32_t* positions,
                            const int32_t* seqs, const AttentionConfig& cfg, float* out) {
  constexpr int64_t kPrefillFrom = 16;  // queries from which the tensor-core kernel pays
  x16_of_ = nullptr;
  if (!exact_ && n >= kPrefillFrom && cfg.single_seq && attention_prefill(q, kv, layer, n, positions, seqs, cfg, out, cc_major_, stream_))
    return;
  float* partial = static_cast<float*>(
      scratch(scratch_slots_, kSlotAttn, uint64_t(attention_decode_scratch_floats(n, cfg)) * 4));
  const int64_t elems = n * cfg.n_heads * cfg.head_dim;
  __nv_bfloat16* out16 = offer16(n, elems);  // for the output projection
  attention_decode(q, kv, layer, n, positions, seqs, cfg, !exact_ && cc_major_ >= 8, partial, out, stream_, out16);
  if (out16) x16_of_ = out, x16_elems_ = elems;
}

void CudaBackend::act_mul(const float* gate, const float* up, int64_t n, Activation act, float* out) {
  x16_of_ = nullptr;
  cuda::act_mul(gate, up, n, act, out, stream_);
}

void CudaBackend::add(float* x, const float* y, int64_t n) {
  x16_of_ = nullptr;
  cuda::add(x, y, n, stream_);
}

void CudaBackend::take_tokens(int32_t* tokens, const int32_t* from, const int32_t* prev, int64_t n) {
  x16_of_ = nullptr;
  cuda::take_tokens(tokens, from, prev, n, stream_);
}

void CudaBackend::edit_logits(float* logits, int64_t stride, const LogitEdit* edits, int64_t n) {
  x16_of_ = nullptr;
  cuda::edit_logits(logits, stride, edits, n, stream_);
}

// The masks and their rows go up in one copy (the host buffers may be reused at once: a copy
// from pageable memory is staged before it returns), then one kernel over every row.
void CudaBackend::mask_logits(float* logits, int64_t stride, int64_t vocab, const uint64_t* bits, const int32_t* rows,
                              int64_t n) {
  if (n <= 0) return;
  const uint64_t mask_bytes = uint64_t(n) * uint64_t((vocab + 63) / 64) * 8;
  auto* dev = static_cast<uint8_t*>(scratch(scratch_slots_, kSlotMask, mask_bytes + uint64_t(n) * 4));
  copy_from_host(bits, dev, mask_bytes);
  copy_from_host(rows, dev + mask_bytes, uint64_t(n) * 4);
  cuda::mask_logits(logits, stride, vocab, reinterpret_cast<const uint64_t*>(dev),
                    reinterpret_cast<const int32_t*>(dev + mask_bytes), n, stream_);
}

void CudaBackend::sample(const float* logits, int64_t rows, int64_t stride, int64_t vocab, const RowSampling* params,
                         int32_t* ids) {
  x16_of_ = nullptr;
  cuda::sample(logits, rows, stride, vocab, params, ids, stream_);
}

void CudaBackend::begin_capture() {
  x16_of_ = nullptr;
  BRISK_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  capturing_ = true;
}

int CudaBackend::end_capture() {
  capturing_ = false;
  cudaGraph_t graph = nullptr;
  BRISK_CUDA_CHECK(cudaStreamEndCapture(stream_, &graph));
  cudaGraphExec_t exec = nullptr;
  cudaError_t e = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  BRISK_CUDA_CHECK(e);
  graphs_.push_back(exec);
  return int(graphs_.size()) - 1;
}

void CudaBackend::replay(int graph) {
  x16_of_ = nullptr;
  if (graph < 0 || graph >= int(graphs_.size())) throw Error(ErrorCode::kInternal, "no such captured step");
  BRISK_CUDA_CHECK(cudaGraphLaunch(graphs_[size_t(graph)], stream_));
}

void CudaBackend::profile(bool on) {
  BRISK_CUDA_CHECK(cudaStreamSynchronize(stream_));
  BRISK_CUDA_CHECK(on ? cudaProfilerStart() : cudaProfilerStop());
}

double CudaBackend::measure_bandwidth() {
  const uint64_t bytes = 2ull << 30;
  void* a = device_alloc(bytes, "the bandwidth probe");
  void* b = device_alloc(bytes, "the bandwidth probe");
  fill_random(a, bytes / 2, 1, stream_);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0), cudaEventCreate(&e1);
  std::vector<float> ms;
  for (int i = 0; i < 12; ++i) {
    cudaEventRecord(e0, stream_);
    BRISK_CUDA_CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, stream_));
    cudaEventRecord(e1, stream_);
    BRISK_CUDA_CHECK(cudaEventSynchronize(e1));
    float t = 0;
    cudaEventElapsedTime(&t, e0, e1);
    if (i >= 2) ms.push_back(t);
  }
  cudaEventDestroy(e0), cudaEventDestroy(e1);
  cudaFree(a), cudaFree(b);
  live_bytes_ -= 2 * bytes;
  std::sort(ms.begin(), ms.end());
  return 2.0 * double(bytes) / (double(ms[ms.size() / 2]) * 1e-3);
}

double CudaBackend::measure_matmul_rate() {
  const int64_t n = 8192;
  const uint64_t in_bytes = uint64_t(n * n) * 2, out_bytes = uint64_t(n * n) * 4;
  void* a = device_alloc(in_bytes, "the GEMM probe");
  void* b = device_alloc(in_bytes, "the GEMM probe");
  void* c = device_alloc(out_bytes, "the GEMM probe");
  fill_random(a, uint64_t(n * n), 2, stream_);
  fill_random(b, uint64_t(n * n), 3, stream_);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0), cudaEventCreate(&e1);
  std::vector<float> ms;
  for (int i = 0; i < 13; ++i) {
    cudaEventRecord(e0, stream_);
    gemm_->run(a, b, static_cast<float*>(c), n, n, n, Gemm::Operands::BF16, false);
    cudaEventRecord(e1, stream_);
    BRISK_CUDA_CHECK(cudaEventSynchronize(e1));
    float t = 0;
    cudaEventElapsedTime(&t, e0, e1);
    if (i >= 3) ms.push_back(t);
  }
  cudaEventDestroy(e0), cudaEventDestroy(e1);
  cudaFree(a), cudaFree(b), cudaFree(c);
  live_bytes_ -= 2 * in_bytes + out_bytes;
  std::sort(ms.begin(), ms.end());
  return 2.0 * double(n) * double(n) * double(n) / (double(ms[ms.size() / 2]) * 1e-3);
}

}  // namespace cuda
}  // namespace brisk
