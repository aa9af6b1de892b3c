// Continuous batching (nano-vllm's Scheduler): one engine thread runs step() in a loop.
// Each step admits waiting requests into free KV slots, prefills one chunk of one prompt
// (so a long prompt never stalls the running streams for more than a chunk), then decodes
// one token for every sequence whose prompt is in the cache, as one batch through the
// ModelRunner (the captured-graph path on a GPU). Requests join and leave the batch at any
// step; a cancelled request frees its slot at the next one. Waiting requests beyond the
// slots sit in a bounded queue; past it, submit() refuses at once.
//
// KV memory is `parallel` slots of `context` positions each (the Backend's slot cache); a
// paged cache with prefix sharing replaces this once the attention kernels read block tables.
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

#include "engine/model_runner.hpp"
#include "engine/request.hpp"
#include "model/model.hpp"

namespace brisk {

struct SchedulerOptions {
  int parallel = 4;             // sequences decoded together (KV slots)
  int64_t context = 4096;       // positions per slot: prompt + generated tokens
  int64_t prefill_chunk = 256;  // prompt tokens per step
  size_t max_queue = 64;        // requests waiting for a slot
};

struct SchedulerStats {
  size_t waiting = 0;              // accepted, not yet given a slot
  size_t running = 0;              // holding a slot (= slots_used)
  int slots_used = 0;
  int slots_total = 0;
  int64_t kv_positions_used = 0;   // prompt + generated positions held by running sequences
  int64_t kv_positions_total = 0;
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
  // prompt, a prompt that leaves no room in a slot's context, bad sampling settings);
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
  void drop_cancelled();
  void prefill_one();
  void decode_all();
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
  std::vector<float> host_row_;
  std::thread thread_;
};

}  // namespace brisk
