// The brisk command: one verb per file (run, inspect, gen-model, ...), dispatched here.
#include <cstdio>

int main(int argc, char** argv) {
  std::fprintf(stderr, "brisk: not built yet\n");
  return 1;
}
