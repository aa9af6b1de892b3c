#include "cli/line_input.hpp"

#include <cerrno>
#include <csignal>

#include <pthread.h>
#include <unistd.h>

namespace brisk::cli {

std::atomic<bool> g_interrupted{false};

namespace {
void on_sigint(int) { g_interrupted.store(true); }

void mask_sigint(int how) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  pthread_sigmask(how, &set, nullptr);
}
}  // namespace

void interrupt_on_sigint() {
  struct sigaction sa = {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a read in progress returns EINTR
  sigaction(SIGINT, &sa, nullptr);
}

void block_sigint() { mask_sigint(SIG_BLOCK); }
void unblock_sigint() { mask_sigint(SIG_UNBLOCK); }

LineReader::Status LineReader::read(std::string& line) {
  for (;;) {
    const size_t nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      line = buffer_.substr(0, nl);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      buffer_.erase(0, nl + 1);
      return Status::kLine;
    }
    if (ended_) {
      if (buffer_.empty()) return Status::kEnd;
      line = std::move(buffer_);
      buffer_.clear();
      return Status::kLine;
    }
    char chunk[4096];
    const ssize_t n = ::read(STDIN_FILENO, chunk, sizeof chunk);
    if (n > 0) {
      buffer_.append(chunk, size_t(n));
    } else if (n == 0) {
      ended_ = true;
    } else if (errno != EINTR) {
      ended_ = true;
    } else if (g_interrupted.exchange(false)) {
      buffer_.clear();
      return Status::kInterrupted;
    }
  }
}

}  // namespace brisk::cli
