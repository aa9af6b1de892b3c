// A load progress bar on stderr, shown only on a terminal and only once loading has taken
// more than a moment (carriage-return redraws would clutter a log or a pipe).
#pragma once

#include <chrono>
#include <cstdio>

#include <unistd.h>

namespace brisk::cli {

class LoadProgress {
 public:
  void operator()(double fraction) {
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (!tty_ || (elapsed < 0.3 && !shown_)) return;
    shown_ = true;
    int width = 30, filled = int(fraction * width);
    std::fprintf(stderr, "\rloading [%.*s%*s] %3d%%", filled, "##############################", width - filled, "",
                 int(fraction * 100));
    if (fraction >= 1.0) std::fprintf(stderr, "\n");
    std::fflush(stderr);
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  bool shown_ = false;
  bool tty_ = isatty(fileno(stderr)) != 0;
};

}  // namespace brisk::cli
