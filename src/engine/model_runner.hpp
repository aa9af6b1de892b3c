// Runs the engine's steps on the backend, one path for every backend (nano-vllm's
// ModelRunner). It owns the paged KV cache and its block table (one row per sequence slot,
// written when a sequence's blocks change), the step buffers and the graph buckets. A step's
// inputs are staged on the host and copied to backend memory in one transfer; the forward
// pass runs (replayed from a captured graph where the backend can capture: each batch-size
// bucket is run once directly, captured on its second use, replayed from then on, with
// positions and slots in device buffers); then the logits processors' edits are applied to
// the rows and the rows are sampled, outside the graph, so the edits may differ per step.
// Only the sampled ids come back.
#pragma once

#include <cstdint>
#include <map>
#include <functional>
#include <span>
#include <vector>

#include "backend/backend.hpp"
#include "model/transformer.hpp"

namespace brisk {

struct RunnerConfig {
  int64_t context = 256;   // positions per sequence at most
  int slots = 1;           // sequences (block-table rows)
  int64_t kv_blocks = 0;   // blocks in the pool (0: slots x context's worth)
  int block_size = 16;     // positions per block
  int max_batch = 1;       // decode rows per step at most
  int64_t min_scratch = 0; // tokens of scratch to reserve up front (the prefill chunk)
  bool use_graphs = true;
};

// Grammar masks for some rows of a step (Backend::mask_logits; host memory): n masks of
// ceil(vocab / 64) words each, for rows rows[0..n).
struct TokenMasks {
  const uint64_t* bits = nullptr;
  const int32_t* rows = nullptr;
  int64_t n = 0;
};
// A decode step's masks, asked for once its forward pass is queued, so that the host
// computes them while the device runs the pass (empty: no masks).
using MaskSource = std::function<TokenMasks()>;

class ModelRunner {
 public:
  // Batch-size buckets: powers of two up to max_batch; a batch runs in the smallest bucket
  // that holds it (the extra rows repeat the last real one, which writes the same cache slot
  // with the same values). Reserves the transformer's scratch for max(max_batch, min_scratch)
  // tokens up front, so captured steps never see it move.
  ModelRunner(Transformer& t, const RunnerConfig& config);
  ~ModelRunner();
  ModelRunner(const ModelRunner&) = delete;
  ModelRunner& operator=(const ModelRunner&) = delete;

  // Slot `seq`'s blocks (block i holds its positions [i * block_size, (i + 1) * block_size)).
  void set_blocks(int seq, const std::vector<int32_t>& blocks);
  const KvCache& kv() const { return kv_; }

  // One decode step for b <= max_batch sequences; ids receives b sampled tokens.
  void decode(const int32_t* tokens, const int32_t* positions, const int32_t* seqs, const RowSampling* params, int b,
              int32_t* ids, std::span<const LogitEdit> edits = {}, const TokenMasks* masks = nullptr);

  // The same step in two halves, so the host can work while the device runs: launch()
  // queues the step and returns; collect() waits for it and gives its b ids. Where
  // from_prev[i] >= 0, row i's token is the id the previously launched step sampled in row
  // from_prev[i], taken on the device: step k + 1 can be launched before the host has read
  // step k's ids. Prefill passes may run between a launch and its collect.
  // edits: the logits processors' changes, by row of this step; masks: the grammar masks.
  void launch(const int32_t* tokens, const int32_t* from_prev, const int32_t* positions, const int32_t* seqs,
              const RowSampling* params, int b, std::span<const LogitEdit> edits = {},
              const MaskSource& masks = {});
  void collect(int32_t* ids);
  // Forgets a launched step after a failure (its ids are not wanted).
  void abandon() { launched_ = 0; }

  // Prefills n tokens of sequence `seq` (positions start at `pos0`) and samples the token
  // after them on the backend.
  int32_t prefill(const int32_t* tokens, int64_t n, int32_t pos0, int32_t seq, const RowSampling& params);

  // One part of a prefill pass: n prompt tokens of sequence `seq` from position pos0; with
  // `sample`, the token after them is drawn under `params`.
  struct PrefillPart {
    const int32_t* tokens = nullptr;
    int64_t n = 0;
    int32_t pos0 = 0;
    int32_t seq = 0;
    bool sample = false;
    RowSampling params;
  };
  // Prefills several sequences' parts in one forward pass (at most max_batch of them
  // sampled); returns the sampled ids in order, their logits rows in logits() (edited).
  // edits: by sampled row (the i-th part with `sample`).
  std::vector<int32_t> prefill(const std::vector<PrefillPart>& parts, std::span<const LogitEdit> edits = {},
                               const TokenMasks* masks = nullptr);

  // Runs every batch bucket's decode step twice (directly, then captured) and one prefill pass
  // of prefill_tokens, all on slot 0 from position 0, so that the first requests find the
  // products' algorithms chosen, the kernels loaded and the graphs captured, instead of
  // paying for it in their time to first token. The KV rows it writes are never read: a
  // sequence reads only positions it has written first. Call it before any sequence holds
  // KV blocks.
  void warm_up(int64_t prefill_tokens);

  int max_batch() const { return max_batch_; }
  // Backend memory: the last step's logits, one row of `vocab` per batch row (decode), or
  // one per sampled prompt (prefill; none, null, when the pass sampled nothing); valid
  // until the next step.
  const float* logits() const { return logits_; }
  bool graphs() const { return use_graphs_; }

 private:
  struct Bucket {
    int uses = 0;
    int graph = -1;
    const float* logits = nullptr;  // where its step leaves the logits
  };
  // Host-side mirror of the device buffer, copied in one transfer.
  struct Staging {
    std::vector<int32_t> ints;  // tokens | positions | seqs | from_prev, each `capacity` long
    std::vector<RowSampling> params;
  };
  int bucket_for(int b) const;
  void init_buffers(int64_t min_scratch);
  void run_forward(int bucket);
  // Applies the masks, then the edits to the first `rows` rows of `logits`, then samples them
  // into `ids`.
  void edit_and_sample(const float* logits, int rows, std::span<const LogitEdit> edits, const TokenMasks* masks,
                       int32_t* ids);

  Transformer& t_;
  Backend& be_;
  KvCache kv_;
  int max_batch_;
  int64_t capacity_;  // rows in the device buffers
  bool use_graphs_;
  void* dev_ = nullptr;
  StepInputs in_;
  RowSampling* params_ = nullptr;
  int32_t* from_ = nullptr;          // device: from_prev of the launched step
  int32_t* ids_ = nullptr;           // device: the last decode step's ids
  int32_t* prefill_ids_ = nullptr;   // device: a prefill pass's ids (ids_ may still be needed)
  int launched_ = 0;                 // rows of the step launched and not collected
  void* prefill_buf_ = nullptr;      // device: a prefill pass's tokens, positions, seqs, rows
  uint64_t prefill_bytes_ = 0;
  const float* logits_ = nullptr;
  LogitEdit* edits_ = nullptr;       // device: this step's edits (grow-only; no graph reads it)
  int64_t edits_cap_ = 0;
  Staging host_;
  std::map<int, Bucket> buckets_;
};

}  // namespace brisk
