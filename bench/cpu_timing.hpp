// Timing for the hand-built CPU kernel benchmarks: thread CPU time, best of several rounds,
// because the machine is shared (builds) and time spent descheduled is not the kernel's.
#pragma once

#include <time.h>

#include <algorithm>

inline double thread_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

// Seconds per call of f: the best round of `reps` calls, rounds until `seconds` are spent.
template <typename F>
double time_best(F&& f, double seconds, int reps = 20) {
  f();  // warm caches
  double per = 1e30, total = 0;
  while (total < seconds) {
    const double t0 = thread_cpu_seconds();
    for (int k = 0; k < reps; ++k) f();
    const double el = thread_cpu_seconds() - t0;
    total += el;
    per = std::min(per, el / reps);
  }
  return per;
}
