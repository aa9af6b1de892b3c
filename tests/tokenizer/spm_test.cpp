// SentencePiece-style BPE against HF `tokenizers`: the real Gemma 3 GGUF (reference: the
// tokenizer transformers builds from that GGUF), a small Gemma-style tokenizer.json
// (byte_fallback + Replace(" ", "▁")), and the converted Gemma 3 tokenizer.json when the
// fixture script has left it in ~/.cache/brisk-tokenizer.

#include <chrono>

#include "base/error.hpp"
#include "format/checkpoint.hpp"
#include "parity.hpp"
#include "tokenizer/tokenizer_loaders.hpp"
#include "base/utf8.hpp"

namespace brisk {
namespace {

using test::tok_golden;

const Tokenizer& gemma3() {
  static std::unique_ptr<Tokenizer> tok = [] {
    auto ckpt = open_checkpoint(test::default_model_path());
    return load_tokenizer(*ckpt);
  }();
  return *tok;
}

TEST(SpmParity, Gemma3Gguf) {
  EXPECT_EQ(test::check_encode_parity(gemma3(), "gemma3"), 0);
  EXPECT_EQ(test::check_decode_parity(gemma3(), "gemma3"), 0);
}

TEST(SpmParity, GemmaMiniJson) {
  auto tok = load_tokenizer_json(tok_golden("gemma_mini.tokenizer.json"));
  EXPECT_EQ(test::check_encode_parity(*tok, "gemma_mini"), 0);
  EXPECT_EQ(test::check_decode_parity(*tok, "gemma_mini"), 0);
}

TEST(SpmParity, Gemma3ConvertedJson) {
  const char* home = std::getenv("HOME");
  std::string path = std::string(home ? home : "/root") + "/.cache/brisk-tokenizer/gemma3.tokenizer.json";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "run tools/make_tokenizer_fixtures.py to create " << path;
  auto tok = load_tokenizer_json(path);
  EXPECT_EQ(test::check_encode_parity(*tok, "gemma3"), 0);
  EXPECT_EQ(test::check_decode_parity(*tok, "gemma3"), 0);
}

TEST(Spm, Gemma3Basics) {
  const Tokenizer& tok = gemma3();
  EXPECT_EQ(tok.vocab_size(), 262144);
  EXPECT_EQ(tok.encode("Hello world"), (std::vector<int32_t>{2, 9259, 1902}));
  EXPECT_EQ(tok.bos_id(), 2);
  EXPECT_TRUE(tok.is_eos(1));    // <eos>
  EXPECT_TRUE(tok.is_eos(106));  // <end_of_turn>
  EXPECT_TRUE(tok.is_special(105));
  EXPECT_EQ(tok.encode("<start_of_turn>user\nhi<end_of_turn>"),
            (std::vector<int32_t>{2, 105, 2364, 107, 2202, 106}));
  auto plain = tok.encode("<start_of_turn>", false, /*parse_special=*/false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 105), 0);
  EXPECT_EQ(tok.decode(plain), "<start_of_turn>");
  EXPECT_EQ(tok.token_bytes(9259), "Hello");
  EXPECT_EQ(tok.token_bytes(1902), " world");
  EXPECT_EQ(tok.decode({2, 9259, 1902}, true), "Hello world");
  EXPECT_EQ(tok.decode({2, 9259, 1902}, false), "<bos>Hello world");
}

TEST(Spm, HostileInput) {
  const Tokenizer& tok = gemma3();
  EXPECT_EQ(tok.encode(""), (std::vector<int32_t>{2}));
  EXPECT_TRUE(tok.encode("", false).empty());
  std::string bad = "ok\xff\xfe mid\xe4\xb8 end\xc0\x80";
  auto ids = tok.encode(bad, false);
  std::string raw;
  for (int32_t id : ids) raw += tok.token_bytes(id);
  EXPECT_EQ(raw, bad);  // byte fallback keeps every byte
  EXPECT_TRUE(utf8::is_valid(tok.decode(ids)));
  EXPECT_THROW(tok.decode({262144}), Error);
  EXPECT_THROW(tok.decode({-7}), Error);
  EXPECT_THROW(tok.token_text(1 << 20), Error);
}

TEST(Spm, MegabyteLineIsFast) {
  const Tokenizer& tok = gemma3();
  std::string big;
  const auto& lines = test::corpus();
  for (size_t i = 0; big.size() < (1u << 20); ++i)
    if (lines[i % lines.size()].find("\xE2\x96\x81") == std::string::npos) big += lines[i % lines.size()] + " ";
  std::string spaces(1 << 20, ' ');
  for (const std::string* s : {&big, &spaces}) {
    auto t0 = std::chrono::steady_clock::now();
    auto ids = tok.encode(*s, false);
    double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("[perf] gemma3 1 MiB -> %zu ids in %.3f s\n", ids.size(), sec);
    EXPECT_LT(sec, 20.0);
    EXPECT_EQ(tok.decode(ids), *s);
  }
}

// byte_fallback promises a <0xNN> token for every byte: one missing is refused at load, naming
// the vocabulary and the byte, instead of failing the first request that needs it.
TEST(Spm, ByteFallbackVocabularyMustBeComplete) {
  auto j = nlohmann::json::parse(std::ifstream(tok_golden("gemma_mini.tokenizer.json")));
  auto& vocab = j["model"]["vocab"];
  ASSERT_TRUE(j["model"]["byte_fallback"].get<bool>());
  vocab["<was_0x41>"] = vocab["<0x41>"];
  vocab.erase("<0x41>");
  try {
    tokenizer_from_json(j, nlohmann::json(), "gemma_mini variant");
    ADD_FAILURE() << "loaded a byte_fallback vocabulary without <0x41>";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kFormat);
    EXPECT_NE(e.message().find("tokenizer.json model.vocab lacks 1 of the 256 byte tokens"), std::string::npos) << e.what();
    EXPECT_NE(e.message().find("<0x41>"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace brisk
