// Continuous batching (nano-vllm's Scheduler): one engine thread runs step() in a loop.
// Each step admits waiting requests into free sequence slots, prefills one chunk of prompt
// tokens (of one or several prompts; a long prompt never stalls the running streams for
// more than a chunk), then decodes one token for every sequence whose prompt is in the
// cache, as one batch through the ModelRunner (the captured-graph path on a GPU). Requests
// join and leave the batch at any step; a cancelled request frees its blocks at the next
// one. Decode steps overlap the host's work: step k + 1 is launched (its tokens taken from
// step k's ids on the device) before step k's tokens are handed out, unless a request needs
// its logits on the host.
//
// KV memory is one pool of fixed-size blocks (KvBlockPool over the backend's paged cache).
// A request is admitted when a slot is free and the pool can give it the blocks for its
// prompt and max_tokens; until then it waits in a bounded queue (past it, submit() refuses
// at once, and a request larger than the whole pool is refused outright). A prompt's full
// blocks are published when its prefill ends, so a later prompt with the same prefix (a
// shared system prompt) shares those blocks and starts its prefill after them.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/kv_blocks.hpp"
#include "engine/model_runner.hpp"
#include "engine/request.hpp"
#include "engine/step_trace.hpp"
#include "model/model.hpp"

namespace brisk {

struct SchedulerOptions {
  int parallel = 4;             // sequences decoded together (slots)
  int64_t context = 4096;       // positions per sequence at most: prompt + generated tokens
  int64_t prefill_chunk = 256;  // prompt tokens per step
  size_t max_queue = 64;        // requests waiting for a slot or for KV blocks
  int64_t kv_blocks = 0;        // blocks in the KV pool (0: parallel x context's worth)
  int block_size = 16;          // positions per KV block
  bool prefix_cache = true;     // share the full blocks of common prompt prefixes
  // Sequences whose prompt chunks share one prefill pass. More makes a burst of arrivals
  // reach its first tokens sooner; 1 keeps each prompt's pass the same as alone (on the
  // CPU backend a pass of a different length may round differently).
  int prefill_seqs = 1;
  // Before taking requests, run each decode bucket and a prefill chunk once (ModelRunner::
  // warm_up), so the first requests do not pay for choosing algorithms and capturing graphs.
  bool warm_up = false;
  std::string trace_path{};     // a JSON line per step goes here (step_trace.hpp); empty: none
};

struct SchedulerStats {
  size_t waiting = 0;              // accepted, not yet running
  size_t running = 0;              // holding a slot (= slots_used)
  int slots_used = 0;
  int slots_total = 0;
  int64_t kv_positions_used = 0;   // prompt + generated positions held by running sequences
  int64_t kv_positions_total = 0;  // the pool's positions
  int64_t kv_blocks_used = 0;      // held by running sequences (a shared block counts once)
  int64_t kv_blocks_cached = 0;    // held by no sequence, keeping a prefix for reuse
  int64_t kv_blocks_total = 0;
  uint64_t prefix_cache_queries = 0;      // prompts looked up
  uint64_t prefix_cache_hits = 0;         // prompts that found at least one cached block
  uint64_t prefix_cache_hit_tokens = 0;   // prompt tokens not prefilled thanks to the cache
  uint64_t prompt_tokens = 0;      // prefilled, all time
  uint64_t generated_tokens = 0;   // all time
  std::map<std::string, uint64_t> finished;  // by finish reason
};

class Scheduler {
 public:
  // Starts the engine thread. The model must outlive the scheduler.
  Scheduler(Model& model, const SchedulerOptions& opts);
  ~Scheduler();  // shutdown(false)
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues a request. Throws Error(kInvalidArgument) for one that can never run (empty
  // prompt, a prompt that leaves no room in the context, more KV blocks than the pool has,
  // bad sampling settings);
  // returns false when the queue is full or the scheduler is shutting down (on_done is not
  // called then). Otherwise on_done is called exactly once, later, on the engine thread.
  bool submit(std::shared_ptr<Request> request);

  // Stops taking requests and cancels the waiting ones; with drain the running ones finish,
  // without it they are cancelled too. Returns when the engine thread has exited.
  void shutdown(bool drain);

  SchedulerStats stats() const;
  const SchedulerOptions& options() const { return opts_; }

 private:
  struct Sequence;

  void loop();
  bool step();
  void admit();
  // KV blocks a request holds while it runs: its prompt and max_tokens, within the context.
  int64_t blocks_needed(const Request& r) const;
  void publish_stats();
  void drop_cancelled();
  void prefill_one();
  void decode_all();
  void launch_decode(const std::vector<Sequence*>& batch);
  void hand_out(const std::vector<uint64_t>& serials, const std::vector<int32_t>& ids);
  // The sampled token of a sequence (logits: the host copy of its row when it needs one).
  void accept(Sequence& s, int32_t id, const float* logits);
  void finish(Sequence& s, const std::string& reason, const std::string& error = {});
  void fail_running(const std::string& error);
  bool needs_host_logits(const Sequence& s) const;

  Model& model_;
  SchedulerOptions opts_;
  KvCache kv_;
  std::unique_ptr<ModelRunner> runner_;
  int32_t vocab_;

  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::unique_ptr<Sequence>> inbox_;   // submitted, not yet seen by the engine
  bool stopping_ = false;
  bool drain_ = false;
  size_t pending_ = 0;  // submitted and not yet given a slot
  SchedulerStats stats_;

  // Engine thread only.
  std::deque<std::unique_ptr<Sequence>> waiting_;
  std::vector<std::unique_ptr<Sequence>> running_;
  std::vector<int> free_slots_;
  std::unique_ptr<KvBlockPool> pool_;
  std::vector<float> host_row_;
  std::vector<uint64_t> flight_;  // the serial of each row of the launched, uncollected step
  uint64_t serials_ = 0;
  StepTrace trace_;
  StepRecord rec_;  // this step's, while the trace is on
  std::thread thread_;
};

}  // namespace brisk
