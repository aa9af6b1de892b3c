#include "cli/stop_signals.hpp"

#include <signal.h>

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace brisk::cli {

namespace {

struct State {
  std::mutex mu;
  std::condition_variable cv;
  bool ready = false;
  int signal = 0;
};

// Never freed: the waiting thread may outlive any scope.
State& state() {
  static State* s = new State();
  return *s;
}

sigset_t stop_set() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

const char* signal_name(int sig) { return sig == SIGINT ? "SIGINT" : "SIGTERM"; }

void wait_thread() {
  const sigset_t set = stop_set();
  int sig = 0;
  if (sigwait(&set, &sig) != 0) return;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.ready) {
    std::fprintf(stderr, "brisk serve: %s while loading: stopped\n", signal_name(sig));
    std::_Exit(0);
  }
  s.signal = sig;
  s.cv.notify_all();
}

}  // namespace

void start_stop_signal_thread() {
  const sigset_t set = stop_set();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  state();
  std::thread(wait_thread).detach();
}

void stop_signals_ready() {
  std::lock_guard<std::mutex> lock(state().mu);
  state().ready = true;
}

int wait_for_stop_signal() {
  State& s = state();
  std::unique_lock<std::mutex> lock(s.mu);
  s.cv.wait(lock, [&] { return s.signal != 0; });
  std::fprintf(stderr, "brisk serve: %s: shutting down\n", signal_name(s.signal));
  return s.signal;
}

}  // namespace brisk::cli
