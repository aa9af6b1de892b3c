// The brisk command as a user runs it: real processes, real files, exit codes and messages.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <string>
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

TEST(CliDefaultModel, RunsWithoutDashM) {
  brisk::test::default_model_path();  // fails the test when setup has not installed it
  Result r = brisk("run -p 'The capital of France is' -n 8 --temp 0");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out.rfind("The capital of France is", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("generation: 8 tokens"), std::string::npos) << r.out;
}

}  // namespace
