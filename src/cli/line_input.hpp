// Interactive input for brisk chat: lines read straight from standard input's descriptor,
// so that Ctrl-C (SIGINT, caught by interrupt_on_sigint) interrupts a read at once instead
// of being retried, and the same flag tells a streaming answer to stop.
#pragma once

#include <atomic>
#include <string>

namespace brisk::cli {

// Set by SIGINT once interrupt_on_sigint() has installed the handler; cleared by whoever acts on it.
extern std::atomic<bool> g_interrupted;
void interrupt_on_sigint();
// SIGINT blocked in the calling thread and every thread it starts afterwards (the engine's),
// so that the main thread is the one a Ctrl-C interrupts; unblock_sigint() undoes it here.
void block_sigint();
void unblock_sigint();

class LineReader {
 public:
  enum class Status { kLine, kEnd, kInterrupted };
  // One line without its newline; kEnd at the end of input (a last unterminated line is
  // still a kLine first); kInterrupted when Ctrl-C came (the partial line is dropped).
  Status read(std::string& line);

 private:
  std::string buffer_;
  bool ended_ = false;
};

}  // namespace brisk::cli
