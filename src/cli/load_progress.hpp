// A load progress bar on stderr, shown only once loading has taken more than a moment.
#pragma once

#include <chrono>
#include <cstdio>

namespace brisk::cli {

class LoadProgress {
 public:
  void operator()(double fraction) {
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (elapsed < 0.3 && !shown_) return;
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
};

}  // namespace brisk::cli
