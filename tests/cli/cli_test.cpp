// The brisk command as a user runs it: real processes, real files, exit codes and messages.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cmath>
#include <string>
#include <vector>
#include <sys/wait.h>

#include "test_paths.hpp"

namespace {

struct Result {
  int status;
  std::string out;  // stdout and stderr together
};

Result brisk(const std::string& args) {
  std::string cmd = std::string(BRISK_BINARY_DIR) + "/brisk " + args + " 2>&1";
  Result r{-1, {}};
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

class Cli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model = new std::string(brisk::test::scratch_dir() + "/qwen2.gguf");
    Result r = brisk("gen-model --arch qwen2 --format gguf --dtype q8_0 --seed 3 " + *model);
    ASSERT_EQ(r.status, 0) << r.out;
  }
  static void TearDownTestSuite() { delete model; }
  static std::string* model;
};
std::string* Cli::model = nullptr;

TEST_F(Cli, RunStreamsTextAndReportsSpeeds) {
  Result r = brisk("run -m " + *model + " -p 'The engine' -n 12 --temp 0 --ignore-eos");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out.rfind("The engine", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("generation: 12 tokens"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tok/s"), std::string::npos) << r.out;
}

TEST_F(Cli, SeedMakesSamplingReproducible) {
  std::string base = "run -m " + *model + " -p 'the cache' -n 24 --temp 20 --top-k 0 --top-p 1 --min-p 0 --ignore-eos";
  auto text = [](const std::string& out) { return out.substr(0, out.find("\nprompt:")); };
  Result a = brisk(base + " --seed 7"), b = brisk(base + " --seed 7"), c = brisk(base + " --seed 8");
  ASSERT_EQ(a.status, 0) << a.out;
  EXPECT_EQ(text(a.out), text(b.out));
  EXPECT_NE(text(a.out), text(c.out));
}

TEST_F(Cli, GreedyIsIdenticalInExactMode) {
  std::string base = "run -m " + *model + " -p 'for (int i' -n 16 --temp 0 --ignore-eos --exact";
  auto text = [](const std::string& out) { return out.substr(0, out.find("\nprompt:")); };
  Result a = brisk(base + " -t 1"), b = brisk(base + " -t 2");
  ASSERT_EQ(a.status, 0) << a.out;
  EXPECT_EQ(text(a.out), text(b.out));
}

TEST_F(Cli, InspectShowsArchitectureAndTensors) {
  Result r = brisk("inspect " + *model);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("architecture:  qwen2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("blk.0.attn_q.bias"), std::string::npos);
  EXPECT_NE(r.out.find("Q8_0"), std::string::npos);
}

TEST_F(Cli, BadInputGivesAClearErrorAndExitStatus1) {
  Result r = brisk("run -m /nonexistent/model.gguf -p hi");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("not found"), std::string::npos) << r.out;

  r = brisk("run -m " + *model + " -p ''");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("prompt is empty"), std::string::npos) << r.out;

  std::string long_prompt(400, 'x');
  for (size_t i = 0; i < long_prompt.size(); i += 2) long_prompt[i] = ' ';
  r = brisk("run -m " + *model + " -c 32 -p '" + long_prompt + "'");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("the context holds 32"), std::string::npos) << r.out;

  r = brisk("run -m " + *model + " -p hi --temp -1");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("temperature"), std::string::npos) << r.out;

  r = brisk("gen-model --arch mamba /tmp/x.gguf");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("unknown architecture"), std::string::npos) << r.out;

  r = brisk("inspect " + std::string(BRISK_SOURCE_DIR) + "/README.md");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("unrecognised checkpoint"), std::string::npos) << r.out;
}

std::vector<float> read_f32(const std::string& path) {
  std::vector<float> v;
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return v;
  float x;
  while (std::fread(&x, 4, 1, f) == 1) v.push_back(x);
  std::fclose(f);
  return v;
}

// brisk quantize to the packed int8 format keeps the model's logits close (per-row scales),
// runs through every command, and a file whose scales are missing is refused clearly.
TEST_F(Cli, QuantizeToPackedInt8) {
  const std::string dir = brisk::test::scratch_dir();
  const std::string src = dir + "/bf16.gguf", i8 = dir + "/i8.gguf";
  ASSERT_EQ(brisk("gen-model --arch llama --size small --dtype bf16 --seed 4 " + src).status, 0);
  Result q = brisk("quantize " + src + " " + i8 + " --type i8");
  ASSERT_EQ(q.status, 0) << q.out;
  EXPECT_NE(q.out.find("as I8"), std::string::npos) << q.out;
  const std::string toks = "--tokens 1,17,300,4000,9,77 --device cpu --exact -o ";
  ASSERT_EQ(brisk("logits -m " + src + " " + toks + dir + "/a.f32").status, 0);
  ASSERT_EQ(brisk("logits -m " + i8 + " " + toks + dir + "/b.f32").status, 0);
  auto a = read_f32(dir + "/a.f32"), b = read_f32(dir + "/b.f32");
  ASSERT_EQ(a.size(), b.size());
  ASSERT_FALSE(a.empty());
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) num += (a[i] - b[i]) * (a[i] - b[i]), den += a[i] * a[i];
  EXPECT_LT(std::sqrt(num / den), 0.03);  // int8 with per-row scales: ~1% measured
  EXPECT_GT(std::sqrt(num / den), 0.0);    // and it did change the weights
  Result i = brisk("inspect " + i8);
  EXPECT_NE(i.out.find("I8"), std::string::npos) << i.out;
  EXPECT_NE(i.out.find("_scale"), std::string::npos) << i.out;
  Result bad = brisk("quantize " + src + " " + dir + "/x.gguf --type q9");
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.out.find("unknown type"), std::string::npos) << bad.out;
}

TEST(CliDefaultModel, RunsWithoutDashM) {
  brisk::test::default_model_path();  // fails the test when setup has not installed it
  Result r = brisk("run -p 'The capital of France is' -n 8 --temp 0");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out.rfind("The capital of France is", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("generation: 8 tokens"), std::string::npos) << r.out;
}

}  // namespace
