#include "base/random_id.hpp"

#include <random>

namespace brisk {

std::string random_id(const char* prefix) {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  static constexpr char kDigits[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::string id = prefix;
  for (int i = 0; i < 24; ++i) id += kDigits[rng() % 36];
  return id;
}

}  // namespace brisk
