// Plans each engine step (nano-vllm's Scheduler), and nothing else: which waiting
// sequences are admitted (a free block-table slot, and KV blocks for their tokens less the
// cached prefix, plus one to grow into), which prompt chunks one prefill pass packs (up to
// prefill_chunk tokens over up to prefill_seqs sequences, so a long prompt never stalls the
// running streams for more than a chunk), and which sequences decode one token. A decoding
// sequence takes a block when it crosses into one; when none is left, the most recently
// admitted running sequence is preempted: its blocks go back (its full blocks stay in the
// prefix cache), and it returns to the front of the queue to be recomputed later.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "engine/block_manager.hpp"
#include "engine/sequence.hpp"

namespace brisk {

struct SchedulerLimits {
  int slots = 4;                // sequences running at once (block-table rows)
  int64_t context = 4096;       // positions per sequence (its block-table row's reach)
  int64_t prefill_chunk = 256;  // prompt tokens per step
  int prefill_seqs = 1;         // sequences one prefill pass may pack
  bool prefix_cache = true;
};

struct StepPlan {
  struct Chunk {
    Sequence* seq;
    int64_t n;  // tokens from seq->computed
  };
  std::vector<Chunk> prefill;
  std::vector<Sequence*> decode;     // oldest first
  std::vector<Sequence*> admitted;   // this step, in order
  std::vector<Sequence*> preempted;  // this step; already back in the queue
  bool empty() const { return prefill.empty() && decode.empty(); }
};

class Scheduler {
 public:
  Scheduler(const SchedulerLimits& limits, BlockManager& blocks);

  void add(std::unique_ptr<Sequence> s);  // to the back of the queue
  StepPlan schedule();
  // Takes a finished (or cancelled) sequence out, giving back its slot and blocks.
  std::unique_ptr<Sequence> remove(Sequence& s);
  // Every sequence, waiting first then running, for sweeps (cancellation, shutdown).
  std::vector<Sequence*> all() const;

  size_t waiting() const { return waiting_.size(); }
  size_t running() const { return running_.size(); }
  uint64_t preemptions() const { return preemptions_; }

 private:
  void admit(StepPlan& plan);
  void plan_prefill(StepPlan& plan);
  void plan_decode(StepPlan& plan);
  void preempt(Sequence& s, StepPlan& plan);

  SchedulerLimits lim_;
  BlockManager& blocks_;
  std::deque<std::unique_ptr<Sequence>> waiting_;
  std::vector<std::unique_ptr<Sequence>> running_;  // in order of admission
  std::vector<int> free_slots_;
  uint64_t preemptions_ = 0;
};

}  // namespace brisk
