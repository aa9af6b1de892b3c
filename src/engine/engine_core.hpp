// The engine loop (nano-vllm's LLMEngine): one thread runs step() while there is work. A
// step asks the Scheduler for a plan (admissions, preemptions, a packed prefill pass, the
// decode batch), has the ModelRunner run it, and postprocesses each sampled token: EOS and
// stop strings, the token budget and the context, UTF-8-safe text, the request's callbacks.
// Every verb goes through here (brisk run, serve, bench, the bindings, the tests): one
// generation path. Decode steps overlap the host's work: step k + 1 is launched, its
// tokens taken from step k's ids on the device, before step k's tokens are handed out,
// unless a sequence in the batch needs each token on the host first (penalties, logprobs).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "brisk/types.hpp"
#include "engine/block_manager.hpp"
#include "grammar/constraint.hpp"
#include "engine/model_runner.hpp"
#include "engine/request.hpp"
#include "engine/scheduler.hpp"
#include "engine/step_trace.hpp"
#include "model/model.hpp"

namespace brisk {

class EngineCore {
 public:
  // Resolves the options' defaults against the model and its backend, allocates the KV
  // pool and starts the engine thread. The model must outlive the engine.
  EngineCore(Model& model, const EngineOptions& opts);
  ~EngineCore();  // shutdown(false)
  EngineCore(const EngineCore&) = delete;
  EngineCore& operator=(const EngineCore&) = delete;

  // Queues a request. Throws Error(kInvalidArgument) for one that can never run (empty
  // prompt, a prompt that leaves no room in the context, prompt + max_tokens beyond the
  // whole KV pool, bad sampling settings); returns false when the queue is full or the
  // engine is shutting down (on_done is not called then). Otherwise on_done is called
  // exactly once, later, on the engine thread.
  bool submit(std::shared_ptr<Request> request);

  // Stops taking requests and cancels the waiting ones; with drain the running ones finish,
  // without it they are cancelled too. Returns when the engine thread has exited.
  void shutdown(bool drain);

  EngineStats stats() const;
  const EngineOptions& options() const { return opts_; }  // with every default resolved
  Model& model() { return model_; }

 private:
  void resolve_options();
  void loop();
  void step();
  void sweep_cancelled();
  void start(const StepPlan& plan);
  void run_prefill(const std::vector<StepPlan::Chunk>& chunks);
  void run_decode(const std::vector<Sequence*>& planned);
  void decode_synchronously(std::vector<Sequence*> batch);
  void launch_decode(const std::vector<Sequence*>& batch);
  void hand_out(const std::vector<uint64_t>& serials, const std::vector<int32_t>& ids);
  const float* host_logits(const Sequence& s, int64_t row);
  // The sampled token of a running sequence (logits: the host copy of its row when it needs one).
  void accept(Sequence& s, int32_t id, const float* logits);
  // by_stop_string: the text ended at a stop string (what was held back for it is dropped).
  void finish(Sequence& s, const std::string& reason, const std::string& error = {}, bool by_stop_string = false);
  void fail_running(const std::string& error);
  // Structured output (engine_constraints.cpp): the sequence's constraint, compiled through
  // the cache (in the submitting thread); the masks of a step's constrained rows.
  void attach_constraint(Sequence& s);
  void add_mask(Sequence& s, int32_t row, std::vector<uint64_t>& bits, std::vector<int32_t>& rows) const;
  void publish_stats();

  Model& model_;
  EngineOptions opts_;
  int max_batch_ = 1;
  int32_t vocab_;
  std::unique_ptr<ModelRunner> runner_;
  std::unique_ptr<BlockManager> blocks_;
  std::unique_ptr<Scheduler> sched_;
  std::once_flag vocab_once_;
  std::unique_ptr<grammar::ConstraintCache> constraints_;  // made on the first constrained request

  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::unique_ptr<Sequence>> inbox_;  // submitted, not yet seen by the engine
  bool stopping_ = false;
  bool drain_ = false;
  size_t pending_ = 0;  // submitted and not yet running (or preempted and waiting)
  EngineStats stats_;

  // Engine thread only.
  std::vector<std::unique_ptr<Sequence>> finished_;  // freed at the end of the step
  std::vector<uint64_t> flight_;  // the serial of each row of the launched, uncollected step
  std::vector<float> host_row_;
  uint64_t serials_ = 0;
  int64_t decode_steps_ = 0;  // launched so far (for EngineOptions::profile_step)
  StepTrace trace_;
  bool recording_ = false;  // trace or on_step
  StepRecord rec_;
  std::thread thread_;
};

}  // namespace brisk
