// Decode steps for a batch of sequences through one path on every backend (nano-vllm's
// ModelRunner): the step's inputs are staged on the host and copied to backend memory in one
// transfer, the step (forward pass for one token per sequence + sampling) runs, and only the
// sampled ids come back. Where the backend can capture, each batch-size bucket's step is run
// once directly, captured on its second use and replayed from then on: positions, slots and
// sampling settings live in device buffers, so a replay needs no host work but the copy in.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "backend/backend.hpp"
#include "model/transformer.hpp"

namespace brisk {

class ModelRunner {
 public:
  // Batch-size buckets: powers of two up to max_batch; a batch runs in the smallest bucket
  // that holds it (the extra rows repeat the last real one, which writes the same cache slot
  // with the same values). Reserves the transformer's scratch for max(max_batch, min_scratch)
  // tokens up front, so captured steps never see it move.
  ModelRunner(Transformer& t, KvCache& kv, int max_batch, int64_t min_scratch = 0, bool use_graphs = true);
  ~ModelRunner();
  ModelRunner(const ModelRunner&) = delete;
  ModelRunner& operator=(const ModelRunner&) = delete;

  // One decode step for b <= max_batch sequences; ids receives b sampled tokens.
  void decode(const int32_t* tokens, const int32_t* positions, const int32_t* seqs, const RowSampling* params, int b,
              int32_t* ids);

  // The same step in two halves, so the host can work while the device runs: launch()
  // queues the step and returns; collect() waits for it and gives its b ids. Where
  // from_prev[i] >= 0, row i's token is the id the previously launched step sampled in row
  // from_prev[i], taken on the device: step k + 1 can be launched before the host has read
  // step k's ids. Prefill passes may run between a launch and its collect.
  void launch(const int32_t* tokens, const int32_t* from_prev, const int32_t* positions, const int32_t* seqs,
              const RowSampling* params, int b);
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
  // sampled); returns the sampled ids in order, their logits rows in logits().
  std::vector<int32_t> prefill(const std::vector<PrefillPart>& parts);

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
  void run_step(int bucket);

  Transformer& t_;
  Backend& be_;
  KvCache& kv_;
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
  Staging host_;
  std::map<int, Bucket> buckets_;
};

// The backend's sampling settings for token `step` of a request.
RowSampling row_sampling(float temperature, int top_k, float top_p, float min_p, uint64_t seed, uint64_t step);

}  // namespace brisk
