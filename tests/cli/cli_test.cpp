// The brisk command as a user runs it: real processes, real files, exit codes and messages.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_paths.hpp"

// gcc says __SANITIZE_ADDRESS__, clang __has_feature(address_sanitizer).
#if defined(__SANITIZE_ADDRESS__)
#define BRISK_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BRISK_ASAN 1
#endif
#endif
#ifndef BRISK_ASAN
#define BRISK_ASAN 0
#endif

namespace {

struct Result {
  int status;
  std::string out;  // stdout and stderr together
};

const std::string kBrisk = std::string(BRISK_BINARY_DIR) + "/brisk";

// A shell command line; status -1 when it died of a signal.
Result shell(const std::string& command) {
  std::string cmd = command + " 2>&1";
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

Result brisk(const std::string& args) { return shell(kBrisk + " " + args); }

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
  EXPECT_NE(r.out.find("the context is 32"), std::string::npos) << r.out;

  r = brisk("run -m " + *model + " -p hi --temp -1");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("--temp: Value -1 not in range"), std::string::npos) << r.out;

  r = brisk("gen-model --arch mamba /tmp/x.gguf");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("mamba not in"), std::string::npos) << r.out;

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

// brisk quantize to the packed int8 format and to FP8 E4M3 (both with per-row scales) keeps
// the model's logits close, runs through every command, and a bad type is refused clearly.
TEST_F(Cli, QuantizeToRowScaledFormats) {
  const std::string dir = brisk::test::scratch_dir();
  const std::string src = dir + "/bf16.gguf";
  ASSERT_EQ(brisk("gen-model --arch llama --size small --dtype bf16 --seed 4 " + src).status, 0);
  const std::string toks = "--tokens 1,17,300,4000,9,77 --device cpu --exact -o ";
  ASSERT_EQ(brisk("logits -m " + src + " " + toks + dir + "/a.f32").status, 0);
  const auto a = read_f32(dir + "/a.f32");
  ASSERT_FALSE(a.empty());
  // Relative RMS bounds over measured values of 1.2% (int8) and 7.7% (fp8: its 3 mantissa
  // bits give ~3.5x int8's weight error, which the random model's layers amplify).
  for (auto [type, name, bound] : {std::tuple{"i8", "I8", 0.03}, std::tuple{"fp8", "F8_E4M3", 0.12}}) {
    SCOPED_TRACE(type);
    const std::string out = dir + "/" + type + ".gguf";
    Result q = brisk("quantize " + src + " " + out + " --type " + type);
    ASSERT_EQ(q.status, 0) << q.out;
    EXPECT_NE(q.out.find(std::string("as ") + name), std::string::npos) << q.out;
    ASSERT_EQ(brisk("logits -m " + out + " " + toks + dir + "/b.f32").status, 0);
    const auto b = read_f32(dir + "/b.f32");
    ASSERT_EQ(a.size(), b.size());
    double num = 0, den = 0;
    for (size_t i = 0; i < a.size(); ++i) num += (a[i] - b[i]) * (a[i] - b[i]), den += a[i] * a[i];
    std::printf("%s: relative RMS logit error %.4f\n", type, std::sqrt(num / den));
    EXPECT_LT(std::sqrt(num / den), bound);
    EXPECT_GT(std::sqrt(num / den), 0.0);  // and it did change the weights
    Result i = brisk("inspect " + out);
    EXPECT_NE(i.out.find(name), std::string::npos) << i.out;
    EXPECT_NE(i.out.find("_scale"), std::string::npos) << i.out;
  }
  Result bad = brisk("quantize " + src + " " + dir + "/x.gguf --type q9");
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.out.find("unknown type"), std::string::npos) << bad.out;
}

TEST(CliDefaultModel, RunsWithoutDashM) {
  brisk::test::default_model_path();  // fails the test when setup has not installed it
  Result r = brisk("run -p 'The capital of France is' -n 8 --temp 0");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out.rfind("The capital of France is", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("generation: 8 tokens"), std::string::npos) << r.out;
}

// Structured output from the command line: the generated text (after the echoed prompt)
// follows the JSON schema, the GBNF grammar or the regex; a bad one is a clear error.
TEST_F(Cli, RunFollowsASchemaAGrammarOrARegex) {
  const std::string dir = brisk::test::scratch_dir();
  FILE* f = std::fopen((dir + "/s.json").c_str(), "w");
  std::fputs(R"({"type": "object", "properties": {"k": {"enum": ["x", "y"]}}, "required": ["k"]})", f);
  std::fclose(f);
  f = std::fopen((dir + "/g.gbnf").c_str(), "w");
  std::fputs("root ::= \"<\" [0-9]{2} \">\"\n", f);
  std::fclose(f);
  const std::string m = "run -m " + *model + " -p P -n 40 --temp 0.9 --seed 4 ";
  Result r = brisk(m + "--json-schema " + dir + "/s.json");
  ASSERT_EQ(r.status, 0) << r.out;
  const std::string text = r.out.substr(1, r.out.find('\n') - 1);  // after the echoed prompt "P"
  EXPECT_TRUE(text.rfind("{", 0) == 0 && text.find("\"k\"") != std::string::npos) << r.out;
  r = brisk(m + "--grammar " + dir + "/g.gbnf");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out.rfind("P<", 0), 0u) << r.out;
  ASSERT_GT(r.out.size(), 4u);
  EXPECT_EQ(r.out[4], '>') << r.out;  // P < digit digit >
  r = brisk(m + "--regex 'ab+c'");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out.rfind("Pab", 0), 0u) << r.out;
  r = brisk(m + "--regex '(a'");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("regex"), std::string::npos) << r.out;
  r = brisk(m + "--regex a --grammar " + dir + "/g.gbnf");
  EXPECT_NE(r.out.find("give one of"), std::string::npos) << r.out;
}

// ---- Option checks and failure paths ----

// Every out-of-range value is refused as a usage error (exit 2) with the option and what it
// accepts, before anything loads: serve must not even start listening.
TEST_F(Cli, OutOfRangeOptionsAreUsageErrors) {
  const std::string m = "-m " + *model + " ";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"run " + m + "-p hi -t 0", "--threads: Value 0 not in range 1 to 1024"},
      {"run " + m + "-p hi -t 100000", "--threads: Value 100000 not in range 1 to 1024"},
      {"run " + m + "-p hi -n 0", "--n-predict: Value 0 not in range"},
      {"run " + m + "-p hi --top-p 0", "--top-p: Value 0 not in range"},
      {"run " + m + "-p hi -c -5", "--ctx: Value -5 not in range"},
      {"run " + m + "-p hi --device gpu", "unknown device 'gpu'"},
      {"serve " + m + "--parallel 100000", "--parallel: Value 100000 not in range 1 to 1024"},
      {"serve " + m + "--request-timeout 0", "--request-timeout: Value 0 not in range"},
      {"serve " + m + "--max-body 0", "--max-body: Value 0 not in range"},
      {"serve " + m + "--max-connections 0", "--max-connections: Value 0 not in range"},
      {"serve " + m + "--queue 1000000", "--queue: Value 1000000 not in range"},
      {"serve " + m + "--kv-block 24", "--kv-block: Value 24 is not a power of two"},
      {"serve " + m + "--port 70000", "--port: Value 70000 not in range"},
      {"serve " + m + "-t 0", "--threads: Value 0 not in range"},
      {"serve " + m + "--chat-template gemma", "gemma3, llama3, qwen2.5, qwen3, chatml"},
      {"bench " + m + "--batch 0", "positive integers"},
      {"bench " + m + "--repeat 0", "--repeat: Value 0 not in range"},
      {"quantize " + *model + " /tmp/never.gguf --type q4_k -t 100000", "--threads"},
      {"gen-model --arch llama --dtype q9 /tmp/never.gguf", "unknown dtype 'q9'"},
  };
  for (const auto& [args, message] : cases) {
    Result r = brisk(args);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.out;
    EXPECT_NE(r.out.find(message), std::string::npos) << args << "\n" << r.out;
    EXPECT_EQ(r.out.find("listening"), std::string::npos) << args << "\n" << r.out;
  }
}

TEST_F(Cli, HelpListsTheBuiltinChatTemplates) {
  Result r = brisk("serve --help");
  ASSERT_EQ(r.status, 0) << r.out;
  for (const char* name : {"gemma3:", "llama3:", "qwen2.5:", "qwen3:", "chatml:"})
    EXPECT_NE(r.out.find(name), std::string::npos) << name << "\n" << r.out;
}

// 400 threads' stacks do not fit in 3 GB of address space: the thread pool must give up with
// a message (or, on a system that fits them, run), never hang or abort.
TEST_F(Cli, ManyThreadsUnderAnAddressSpaceLimitFailCleanly) {
#if BRISK_ASAN
  GTEST_SKIP() << "ASan's shadow memory needs more address space than any ulimit -v here";
#endif
  Result r = shell("timeout -k 5 120 bash -c 'ulimit -v 3000000; exec " + kBrisk + " run -m " + *model +
                   " -p hi -n 4 --device cpu -t 400'");
  ASSERT_NE(r.status, 124) << "hung:\n" << r.out;
  ASSERT_TRUE(r.status == 0 || r.status == 1) << "status " << r.status << "\n" << r.out;
  if (r.status == 1) {
    EXPECT_NE(r.out.find("threads ("), std::string::npos) << r.out;
  }
}

// An exception on a thread of brisk's (here: the HTTP server cannot start 16000 connection
// threads in 3 GB) ends the process with a one-line message and status 1, not an abort.
TEST_F(Cli, AnExceptionOnAnyThreadIsAMessageAndStatus1) {
#if BRISK_ASAN
  GTEST_SKIP() << "ASan's shadow memory needs more address space than any ulimit -v here";
#endif
  Result r = shell("timeout -k 5 120 bash -c 'ulimit -v 3000000; exec " + kBrisk + " serve --port 0 --device cpu -m " +
                   *model + " --http-threads 16000'");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("\nbrisk: "), std::string::npos) << r.out;
}

// A child process with its stdout and stderr on one pipe.
struct Child {
  pid_t pid = -1;
  int out = -1;
  std::string text;

  // Reads until `needle` shows up or `seconds` pass.
  bool read_until(const std::string& needle, double seconds) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (text.find(needle) == std::string::npos && std::chrono::steady_clock::now() < end) {
      pollfd p{out, POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) continue;
      char buf[4096];
      const ssize_t n = read(out, buf, sizeof buf);
      if (n <= 0) break;
      text.append(buf, size_t(n));
    }
    return text.find(needle) != std::string::npos;
  }
  // The exit status, or -1 (after killing it) when it has not ended within `seconds`.
  int wait(double seconds) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    int st = 0;
    while (waitpid(pid, &st, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > end) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        return -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    read_until("\x01", 0.2);  // whatever it wrote last
    close(out);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  }
};

Child spawn(std::vector<std::string> args) {
  int fds[2];
  if (pipe(fds) != 0) return {};
  Child c;
  c.pid = fork();
  if (c.pid == 0) {
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[0]);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(fds[1]);
  c.out = fds[0];
  return c;
}

// brisk serve listens before it loads; a stop signal during the load must end it at once. The
// model here is a FIFO nobody writes to, so the load sits in open() for as long as it is let.
TEST_F(Cli, SigtermWhileLoadingStopsServePromptly) {
  const std::string fifo = brisk::test::scratch_dir() + "/never_written.gguf";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  for (int sig : {SIGTERM, SIGINT}) {
    Child c = spawn({kBrisk, "serve", "--port", "0", "--device", "cpu", "-m", fifo});
    ASSERT_GT(c.pid, 0);
    ASSERT_TRUE(c.read_until("listening", 60)) << c.text;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // into the load
    const auto t0 = std::chrono::steady_clock::now();
    kill(c.pid, sig);
    const int status = c.wait(10);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(status, 0) << c.text;
    EXPECT_LT(took, 5.0);
    EXPECT_NE(c.text.find(sig == SIGTERM ? "SIGTERM while loading" : "SIGINT while loading"), std::string::npos)
        << c.text;
  }
  // brisk run keeps the signals' default action: SIGTERM ends it, whatever it is doing.
  Child r = spawn({kBrisk, "run", "--device", "cpu", "-p", "hi", "-m", fifo});
  ASSERT_GT(r.pid, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  kill(r.pid, SIGTERM);
  EXPECT_EQ(r.wait(10), 128 + SIGTERM) << r.text;
}

}  // namespace
