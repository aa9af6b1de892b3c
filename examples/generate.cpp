// The smallest brisk program: load a model, stream a greedy completion of a prompt to stdout.
// It includes only brisk's public headers (include/brisk/) and links the library.
//   examples/generate MODEL [PROMPT] [MAX_TOKENS]
#include <brisk/brisk.hpp>

#include <cstdlib>
#include <iostream>
#include <string>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: " << argv[0] << " MODEL [PROMPT] [MAX_TOKENS]\n";
    return 2;
  }
  const std::string prompt = argc > 2 ? argv[2] : "The capital of France is";
  try {
    auto engine = brisk::Engine::open(argv[1]);
    brisk::GenerateOptions options;
    options.max_tokens = argc > 3 ? std::atoi(argv[3]) : 32;
    options.sampling.temperature = 0;  // greedy: the same text every run
    std::cout << prompt << std::flush;
    const brisk::Completion c = engine->generate(prompt, options, [](const std::string& piece) {
      std::cout << piece << std::flush;
      return true;  // false would cancel the request
    });
    std::cout << "\n[" << c.result.completion_tokens << " tokens, " << c.result.finish_reason << ", "
              << engine->model_info().backend << "]\n";
    return c.result.finish_reason == "error" ? 1 : 0;
  } catch (const brisk::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
