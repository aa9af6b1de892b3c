#include "engine/scheduler.hpp"

#include <algorithm>

#include "base/error.hpp"

namespace brisk {

Scheduler::Scheduler(const SchedulerLimits& limits, BlockManager& blocks) : lim_(limits), blocks_(blocks) {
  for (int s = lim_.slots - 1; s >= 0; --s) free_slots_.push_back(s);
}

void Scheduler::add(std::unique_ptr<Sequence> s) {
  s->status = SequenceStatus::kWaiting;
  waiting_.push_back(std::move(s));
}

std::vector<Sequence*> Scheduler::all() const {
  std::vector<Sequence*> out;
  for (const auto& s : waiting_) out.push_back(s.get());
  for (const auto& s : running_) out.push_back(s.get());
  return out;
}

StepPlan Scheduler::schedule() {
  StepPlan plan;
  admit(plan);
  plan_decode(plan);  // first: growing blocks may preempt a sequence the prefill would take
  plan_prefill(plan);
  return plan;
}

// In order of arrival: when the first waiting sequence cannot have its blocks, it and those
// behind it wait for running sequences to end or to be preempted.
void Scheduler::admit(StepPlan& plan) {
  while (!free_slots_.empty() && !waiting_.empty()) {
    Sequence& s = *waiting_.front();
    if (!blocks_.can_allocate(s, lim_.prefix_cache)) break;
    blocks_.allocate(s, lim_.prefix_cache);
    s.slot = free_slots_.back();
    free_slots_.pop_back();
    s.status = SequenceStatus::kRunning;
    s.in_decode = false;
    plan.admitted.push_back(&s);
    running_.push_back(std::move(waiting_.front()));
    waiting_.pop_front();
  }
}

// Oldest first: a sequence that crosses into a new block takes one, preempting the newest
// running sequences (itself last) while the pool is empty.
void Scheduler::plan_decode(StepPlan& plan) {
  for (size_t i = 0; i < running_.size(); ++i) {
    Sequence& s = *running_[i];
    if (!s.in_decode || s.last_token_pending(lim_.context)) continue;
    bool ok = blocks_.grow(s);
    while (!ok && running_.size() > i + 1) {
      preempt(*running_.back(), plan);
      ok = blocks_.grow(s);
    }
    if (!ok) {  // nothing newer to take from: it waits itself
      preempt(s, plan);
      break;
    }
    plan.decode.push_back(&s);
  }
}

void Scheduler::plan_prefill(StepPlan& plan) {
  int64_t budget = lim_.prefill_chunk;
  const size_t max_parts = size_t(std::max(lim_.prefill_seqs, 1));
  for (auto& sp : running_) {
    Sequence& s = *sp;
    if (budget == 0 || plan.prefill.size() == max_parts) break;
    if (s.in_decode) continue;
    const int64_t n = std::min(budget, int64_t(s.tokens.size()) - s.computed);
    plan.prefill.push_back({&s, n});
    budget -= n;
  }
}

// Its pending token (if a launched step holds one) is dropped: the recompute samples the
// same token again, from the same logits with the same (seed, index).
void Scheduler::preempt(Sequence& s, StepPlan& plan) {
  auto it = std::find_if(running_.begin(), running_.end(), [&](const auto& p) { return p.get() == &s; });
  if (it == running_.end()) throw Error(ErrorCode::kInternal, "preempting a sequence that is not running");
  blocks_.deallocate(s, lim_.prefix_cache);
  free_slots_.push_back(s.slot);
  s.slot = -1;
  s.pending_row = -1;
  s.in_decode = false;
  s.status = SequenceStatus::kWaiting;
  std::erase(plan.decode, &s);
  // Admitted by this very plan: it never started, so it goes back as if it had not been.
  if (std::erase(plan.admitted, &s) == 0) {
    ++s.preemptions;
    ++preemptions_;
    plan.preempted.push_back(&s);
  }
  waiting_.push_front(std::move(*it));
  running_.erase(it);
}

std::unique_ptr<Sequence> Scheduler::remove(Sequence& s) {
  auto take = [&](auto& queue) -> std::unique_ptr<Sequence> {
    auto it = std::find_if(queue.begin(), queue.end(), [&](const auto& p) { return p.get() == &s; });
    if (it == queue.end()) return nullptr;
    std::unique_ptr<Sequence> out = std::move(*it);
    queue.erase(it);
    return out;
  };
  std::unique_ptr<Sequence> out = take(running_);
  if (out) {
    blocks_.deallocate(s, lim_.prefix_cache);
    free_slots_.push_back(s.slot);
    s.slot = -1;
  } else {
    out = take(waiting_);
  }
  if (!out) throw Error(ErrorCode::kInternal, "removing a sequence the scheduler does not hold");
  s.status = SequenceStatus::kFinished;
  return out;
}

}  // namespace brisk
