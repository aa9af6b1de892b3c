// The Backend op interface: the whole set of operations the transformer forward pass may
// call. The CPU backend (backend/cpu) implements it as the reference oracle; the CUDA backend
// implements exactly the same set. Activations are float32, row-major [rows, dim], in memory
// the backend allocated; weights stay in their checkpoint dtype once uploaded.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "backend/kv_pages.hpp"
#include "brisk/types.hpp"
#include "quant/dtype.hpp"

namespace brisk {

// A weight in host memory as the model layer found it (usually inside a file mapping).
// Matrices are [rows = outputs, cols = inputs] with cols contiguous; vectors have rows = 1.
struct WeightView {
  std::string name;
  DType dtype = DType::F32;
  int64_t rows = 0;
  int64_t cols = 0;
  const void* data = nullptr;
  // I8 and F8_E4M3: one scale per row, or (scale_cols > 0) one per scale_cols columns of a
  // row, [rows][ceil(cols / scale_cols)] (FP8's block-scaled layout, expanded to rows).
  const float* scales = nullptr;
  int64_t scale_cols = 0;
  // F8_E4M3 with a static activation scale (compressed-tensors' input_scale; 0: none): the
  // product's input is rounded through E4M3 at this scale, as the checkpoint was calibrated.
  float input_scale = 0.f;
};

// A weight resident on the backend, still in its dtype.
struct DeviceWeight {
  std::string name;
  DType dtype = DType::F32;
  int64_t rows = 0;
  int64_t cols = 0;
  uint64_t row_bytes = 0;
  const void* data = nullptr;
  const void* aux = nullptr;  // backend-private companion data (e.g. scales of a repacked layout)
  const float* scales = nullptr;  // I8, F8_E4M3: scales as WeightView's, backend memory
  int64_t scale_cols = 0;         // as WeightView's
  float input_scale = 0.f;        // as WeightView's
  // F8_E4M3 in 128 x 128 blocks on a GPU with FP8 products: one scale per block,
  // [ceil(rows / 128)][ceil(cols / 128)], backend memory (null otherwise).
  const float* block_scales = nullptr;
  uint64_t aux_bytes = 0;         // bytes of aux a product reads besides rows * row_bytes
  bool present() const { return data != nullptr; }
};

enum class Activation { SiLU, GeluTanh };

// How a head's dimensions pair up for rotation. HF checkpoints rotate (i, i + d/2);
// llama-architecture GGUF files were permuted by their converter to rotate (2i, 2i + 1).
enum class RopeStyle { Half, Interleaved };

struct RopeConfig {
  int head_dim = 0;
  float theta = 10000.f;
  RopeStyle style = RopeStyle::Half;
  float linear_factor = 1.f;  // positions divided by this (Gemma 3's global layers on 4B+)
  // Llama 3 frequency scaling; off when llama3_factor == 0.
  float llama3_factor = 0.f;
  float llama3_low_freq_factor = 1.f;
  float llama3_high_freq_factor = 4.f;
  int llama3_original_context = 8192;
  // Per-pair divisors of the inverse frequencies (a GGUF file's rope_freqs tensor, which is
  // how llama.cpp's converter stores Llama 3 scaling); host memory, head_dim / 2 floats, or null.
  const float* freq_factors = nullptr;
};

struct AttentionConfig {
  int n_heads = 0;
  int n_kv_heads = 0;
  int head_dim = 0;
  float scale = 1.f;  // applied to q.k
  int window = 0;     // sliding window: a query at p sees keys in (p - window, p]; 0 = unbounded
  bool single_seq = false;  // every query of the call belongs to one sequence (a prefill chunk)
};

// Keys and values of all layers in one pool of fixed-size blocks (see kv_pages.hpp for the
// layout), in backend memory: float32, or bf16 where the backend keeps it so (the CUDA
// fast mode: half the bytes for decode attention to read; kv_elem_bytes()). A token of a
// step names its sequence by a slot index (see StepInputs); the slot's row of the block table says which pool blocks hold its
// positions. A fresh cache gives slot s the blocks [s * blocks_per_seq, (s + 1) *
// blocks_per_seq) when the pool holds that many; the serving scheduler writes its own rows
// (set_kv_blocks), sharing blocks between sequences with a common prefix.
struct KvCache {
  int n_layers = 0;
  int n_kv_heads = 0;
  int head_dim = 0;
  int64_t capacity = 0;    // positions per sequence (blocks_per_seq * block_size)
  int n_seqs = 1;
  int block_size = 16;     // positions per block, a power of two
  int blocks_per_seq = 0;  // table entries per sequence
  int64_t n_blocks = 0;    // blocks in the pool
  int elem_bytes = 4;      // 4: float32, 2: bf16
  void* k = nullptr;
  void* v = nullptr;
  int32_t* table = nullptr;  // [n_seqs][blocks_per_seq]
  // In elements (KvPages offsets count elements too).
  int64_t block_stride() const { return int64_t(n_kv_heads) * block_size * head_dim; }
  int64_t layer_stride() const { return block_stride() * n_blocks; }
  KvPages pages(int layer) const;
};

// Sampling settings of one row of logits, as the backend's sample op reads them (backend
// memory, so a captured decode step can be replayed with new values). The draw is
// counter-based: uniform(seed, step), so a run is reproducible on any backend.
struct RowSampling {
  float temperature = 0.f;  // 0: greedy (argmax, lowest id on ties)
  float top_p = 1.f;        // 1: off
  float min_p = 0.f;        // 0: off
  int32_t top_k = 0;        // <= 0: off
  uint64_t seed = 0;
  uint64_t step = 0;        // the row's token index; advances the generator
};

// A logits processor's change to one entry of one row of logits, made before sampling:
//   l = l > 0 ? l / penalty : l * penalty;   then   l -= subtract
// (llama.cpp's repetition penalty, then OpenAI's presence/frequency penalties and logit_bias
// folded into one subtraction; penalty 1 leaves l as it is, subtract +inf bans the token).
// The host merges every processor's changes into at most one edit per (row, id), so the
// result does not depend on the order in which a backend applies them.
// row[t] = -inf for every t < vocab whose bit in mask is clear (a grammar's refused tokens).
void apply_token_mask(float* row, int64_t vocab, const uint64_t* mask);

struct LogitEdit {
  int32_t row = 0;
  int32_t id = 0;
  float penalty = 1.f;
  float subtract = 0.f;
};

// The integer inputs of a forward step, in backend memory (a host copy is made by the
// Transformer after checking them): token ids, positions, and each token's KV sequence slot.
struct StepInputs {
  int32_t* tokens = nullptr;
  int32_t* positions = nullptr;
  int32_t* seqs = nullptr;
  bool single_seq = false;  // all tokens of one sequence (prefill), not one token each of many
  // The rows whose logits are wanted (backend memory, n_logit_rows of them), or null for the
  // last row (or every row, as the step asks): a prefill of several prompts wants the last
  // row of each prompt that it completes.
  const int32_t* logit_rows = nullptr;
  int64_t n_logit_rows = 0;
  // False: no output head at all (a prefill pass that completes no prompt samples nothing).
  bool logits = true;
  // A prefill of several prompts' parts (host memory): part i is rows [part_starts[i],
  // part_starts[i + 1]) of one sequence at consecutive positions. Attention runs part by
  // part, so each gets the one-sequence (tensor-core) kernel.
  const int64_t* part_starts = nullptr;
  int n_parts = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;

  // Make a weight resident. The CPU backend keeps the caller's memory (zero copy), so the
  // view's data must outlive the backend's use of it.
  virtual DeviceWeight upload(const WeightView& w) = 0;
  // Uploads several weights (absent ones stay absent). A backend may place them end to end
  // so that one product covers them all (q/k/v, gate/up); by default one by one.
  virtual void upload_adjacent(const WeightView* const* ws, int count, DeviceWeight* out);

  // Raw backend memory (activations, step inputs); copies between it and the host.
  virtual void* alloc_bytes(uint64_t bytes) = 0;
  virtual void release_bytes(void* p) = 0;
  virtual void copy_to_host(const void* src, void* host_dst, uint64_t bytes) = 0;
  virtual void copy_from_host(const void* host_src, void* dst, uint64_t bytes) = 0;
  // Waits for all queued work (a no-op where work is synchronous).
  virtual void synchronize() {}

  float* alloc(int64_t n_floats) { return static_cast<float*>(alloc_bytes(uint64_t(n_floats) * 4)); }
  void release(float* p) { release_bytes(p); }
  void to_host(const float* src, float* host_dst, int64_t n) { copy_to_host(src, host_dst, uint64_t(n) * 4); }
  void from_host(const float* host_src, float* dst, int64_t n) { copy_from_host(host_src, dst, uint64_t(n) * 4); }

  // Bytes per cached key or value element: 4 (float32), or 2 (bf16) where attention reads it so.
  virtual int kv_elem_bytes() const { return 4; }
  // Backend memory one KV block takes (keys and values of every layer), for sizing a pool.
  uint64_t kv_bytes_per_block(int n_layers, int n_kv_heads, int head_dim, int block_size) const {
    return 2ull * uint64_t(kv_elem_bytes()) * uint64_t(n_layers) * uint64_t(n_kv_heads) * uint64_t(head_dim) *
           uint64_t(block_size);
  }
  // Throws Error(kInvalidArgument) unless block_size is a power of two up to kMaxKvBlockSize:
  // the one check of a KV block size.
  static void check_kv_block_size(int block_size);

  // How an engine drives this backend unless told otherwise. A GPU prefills thousands of
  // tokens in the time of a few decode steps, packs a burst of prompts into one pass, and
  // chooses algorithms and captures graphs on its first steps (so it warms up before
  // serving); a CPU takes short chunks, one prompt per pass (where a pass of another
  // length may round differently). Decode rows per step are capped where the CPU's int8
  // path still computes each row exactly as alone (so batching never changes a result).
  struct StepDefaults {
    int max_decode_rows = 64;
    int64_t prefill_chunk = 256;
    int prefill_seqs = 1;
    bool warm_up = false;
  };
  virtual StepDefaults step_defaults() const { return {}; }
  // A cache of n_seqs slots of `capacity` positions (rounded up to whole blocks) over a pool
  // of n_blocks blocks (0: one private run per slot, n_seqs * blocks_per_seq).
  KvCache alloc_kv(int n_layers, int n_kv_heads, int head_dim, int64_t capacity, int n_seqs = 1,
                   int64_t n_blocks = 0, int block_size = 16);
  void release_kv(KvCache& kv);
  // Slot `seq`'s table row: blocks[i] holds positions [i * block_size, ...); count <=
  // blocks_per_seq, every entry < n_blocks (checked). Ordered with the backend's queued work.
  void set_kv_blocks(KvCache& kv, int seq, const int32_t* blocks, int count);

  // ids, positions and seqs below are backend memory, already checked by the caller
  // (ids < table.rows, positions < kv.capacity, seqs < kv.n_seqs, every table entry a position
  // reaches < kv.n_blocks); seqs null means slot 0.

  // out[t] = table[ids[t]] * scale, dequantized.
  virtual void embed(const DeviceWeight& table, const int32_t* ids, int64_t n, float scale, float* out) = 0;
  // out[r] = x[r] / rms(x[r]) * w, over `rows` rows of w.cols elements (w is an F32 vector).
  virtual void rmsnorm(const float* x, int64_t rows, const DeviceWeight& w, float eps, float* out) = 0;
  // y[t] = W x[t] (+ bias) (+ y[t] when accumulate), for t < n. bias is an F32 vector or null.
  virtual void matmul(const float* x, int64_t n, const DeviceWeight& w, float* y,
                      const DeviceWeight* bias = nullptr, bool accumulate = false) = 0;
  // Projections of one input by several weights (q, k, v): ys[i] = W_i x (+ biases[i]), count
  // <= 3, bias entries may be null. A backend may run them as one pass.
  virtual void matmul_multi(const float* x, int64_t n, const DeviceWeight* const* ws, float* const* ys,
                            const DeviceWeight* const* biases, int count);
  // The gated MLP input: out = act(W_gate x) * (W_up x), both [n][rows]; `scratch` (as large
  // as out) may be used for the up projection.
  virtual void matmul_gated(const float* x, int64_t n, const DeviceWeight& gate, const DeviceWeight& up,
                            Activation act, float* out, float* scratch);
  // Rotate each of n_heads heads of each of n tokens in place by its token's position.
  virtual void rope(float* x, int64_t n, int n_heads, const int32_t* positions, const RopeConfig& cfg) = 0;
  virtual void kv_write(KvCache& kv, int layer, const float* k, const float* v, int64_t n,
                        const int32_t* positions, const int32_t* seqs) = 0;
  // rope on q (n_heads) and k (kv.n_kv_heads) of n tokens, then k and v into the layer's
  // cache: the three ops above in one pass where a backend fuses them.
  virtual void rope_kv_write(float* q, float* k, const float* v, int64_t n, int n_heads, const int32_t* positions,
                             const int32_t* seqs, const RopeConfig& cfg, KvCache& kv, int layer);
  // An attention block's input side without q/k norms: q/k/v = matmul_multi(x, ws, biases)
  // (qkv[0..2] are [n] rows of each), then rope_kv_write. q and k end rotated; v may be left
  // unwritten (its values are in the cache). A backend may fuse the split of one product
  // for all three into the rope pass.
  virtual void qkv_rope_kv_write(const float* x, int64_t n, const DeviceWeight* const* ws,
                                 const DeviceWeight* const* biases, float* const* qkv, int n_heads,
                                 const int32_t* positions, const int32_t* seqs, const RopeConfig& cfg, KvCache& kv,
                                 int layer);
  // Causal attention of n queries (at `positions`, of sequences `seqs`) over the layer's cache.
  // q and out are [n, n_heads * head_dim]; every key of the query's sequence at a position <=
  // the query's must already be written.
  virtual void attention(const float* q, const KvCache& kv, int layer, int64_t n, const int32_t* positions,
                         const int32_t* seqs, const AttentionConfig& cfg, float* out) = 0;
  // out = act(gate) * up, elementwise over n values.
  virtual void act_mul(const float* gate, const float* up, int64_t n, Activation act, float* out) = 0;
  // x += y over n values.
  virtual void add(float* x, const float* y, int64_t n) = 0;
  // Applies n edits (backend memory) to rows of `stride` logits each (see LogitEdit).
  virtual void edit_logits(float* logits, int64_t stride, const LogitEdit* edits, int64_t n) = 0;
  // Grammar masks: for each of n masks, logits row rows[i] gets -inf at every token t < vocab
  // whose bit is clear in bits[i * words ...] (words = ceil(vocab / 64)). bits and rows are
  // host memory. The default takes each row through the host.
  virtual void mask_logits(float* logits, int64_t stride, int64_t vocab, const uint64_t* bits, const int32_t* rows,
                           int64_t n);
  // ids[r] = a token drawn from the first `vocab` entries of logits row r (rows of `stride`
  // floats; vocab <= stride: a checkpoint's embedding may be padded beyond its tokenizer's
  // ids, which are never drawn) under params[r] (see RowSampling).
  virtual void sample(const float* logits, int64_t rows, int64_t stride, int64_t vocab, const RowSampling* params,
                      int32_t* ids) = 0;

  // tokens[i] = prev[from[i]] wherever from[i] >= 0, n rows: the next step's input tokens
  // taken from the ids the previous step sampled, which the host has not read yet.
  virtual void take_tokens(int32_t* tokens, const int32_t* from, const int32_t* prev, int64_t n) = 0;

  // Step capture: a backend that can record the ops of a step and replay them (CUDA graphs).
  // Between begin and end nothing may allocate or copy to or from the host.
  virtual bool can_capture() const { return false; }
  virtual void begin_capture() {}
  virtual int end_capture() { return -1; }  // a handle for replay
  virtual void replay(int graph) {}

  // Diagnostics for benchmarks: backend memory, and the device's own ceilings measured now
  // (bytes/s of a large device copy counting read + write; FLOP/s of a large bf16 GEMM).
  virtual uint64_t memory_in_use() const { return 0; }
  virtual uint64_t memory_peak() const { return 0; }
  virtual double measure_bandwidth() { return 0; }
  virtual double measure_matmul_rate() { return 0; }
  // Marks the span a profiler attached from outside records (Nsight's --profile-from-start off).
  virtual void profile(bool on) {}
};

// The inverse frequencies of a rope configuration, one per rotated pair (head_dim / 2),
// with Llama 3 scaling applied. Shared so every backend rotates by the same angles.
void rope_inverse_frequencies(const RopeConfig& cfg, float* inv_freq);

// int8_activations: every matmul against quantized weights (decode steps and prefill alike)
// quantizes the activations to int8 blocks and uses integer dot products in tiles of rows x
// tokens (as llama.cpp does): about twice as fast, at a small cost in accuracy. A token's
// result still does not depend on the other tokens of its batch. Off, the backend is the
// exact float32 oracle.
std::unique_ptr<Backend> make_cpu_backend(int n_threads, bool int8_activations = false);

}  // namespace brisk
