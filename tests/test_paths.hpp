// Where tests find their inputs: committed fixtures, the default model installed by
// scripts/setup, and a scratch directory. A missing default model is a test failure,
// not a skip: CI installs it.
#pragma once

#include <string>

namespace brisk::test {

std::string source_dir();
std::string golden_dir();          // tests/golden
std::string default_model_path();  // the Gemma 3 270M Q4_K_M GGUF; throws if absent
std::string scratch_dir();         // a fresh directory under the build tree

}  // namespace brisk::test
