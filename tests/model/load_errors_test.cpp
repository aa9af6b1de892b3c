// Loading a model from a file that is not one brisk can run: each case is a brisk::Error
// that says what is wrong, never a crash.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "backend/backend.hpp"
#include "base/error.hpp"
#include "format/gguf_writer.hpp"
#include "model/model.hpp"
#include "model/synthetic.hpp"
#include "test_paths.hpp"

namespace brisk {
namespace {

void expect_error(const std::string& path, ErrorCode code, const std::string& needle) {
  auto backend = make_cpu_backend(1);
  try {
    Model::load(path, *backend);
    FAIL() << "loaded " << path;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

TEST(LoadErrors, UnknownGgufArchitecture) {
  GgufWriter w;
  w.set_string("general.architecture", "mamba");
  w.add_tensor("token_embd.weight", DType::F32, {4, 8}, std::vector<uint8_t>(4 * 8 * 4));
  std::string path = test::scratch_dir() + "/mamba.gguf";
  w.write(path);
  expect_error(path, ErrorCode::kUnsupported, "'mamba' is not supported");
}

TEST(LoadErrors, UnknownHfModelType) {
  SyntheticSpec spec;
  spec.arch = "qwen2";
  spec.format = "hf";
  std::string dir = test::scratch_dir() + "/bert";
  write_synthetic_checkpoint(spec, dir);
  auto cfg = nlohmann::json::parse(std::ifstream(dir + "/config.json"));
  cfg["model_type"] = "bert";
  std::ofstream(dir + "/config.json") << cfg.dump();
  expect_error(dir, ErrorCode::kUnsupported, "'bert' is not supported");
}

TEST(LoadErrors, MissingTensorAndWrongShape) {
  SyntheticSpec spec;
  spec.arch = "llama";
  spec.format = "hf";
  std::string dir = test::scratch_dir() + "/llama";
  write_synthetic_checkpoint(spec, dir);
  auto cfg = nlohmann::json::parse(std::ifstream(dir + "/config.json"));
  cfg["num_hidden_layers"] = 3;  // the file has two
  std::ofstream(dir + "/config.json") << cfg.dump();
  expect_error(dir, ErrorCode::kFormat, "missing tensor model.layers.2");
  cfg["num_hidden_layers"] = 2;
  cfg["intermediate_size"] = 96;
  std::ofstream(dir + "/config.json") << cfg.dump();
  expect_error(dir, ErrorCode::kFormat, "expected [96, 64]");
}

TEST(LoadErrors, AbsurdHyperparameters) {
  SyntheticSpec spec;
  spec.arch = "qwen3";
  spec.format = "hf";
  std::string dir = test::scratch_dir() + "/qwen3";
  write_synthetic_checkpoint(spec, dir);
  auto cfg = nlohmann::json::parse(std::ifstream(dir + "/config.json"));
  cfg["num_key_value_heads"] = 3;  // 4 heads are not a multiple of 3
  std::ofstream(dir + "/config.json") << cfg.dump();
  expect_error(dir, ErrorCode::kFormat, "not a multiple");
  cfg["num_key_value_heads"] = 2;
  cfg["hidden_size"] = -64;
  std::ofstream(dir + "/config.json") << cfg.dump();
  expect_error(dir, ErrorCode::kFormat, "out of range");
  cfg["hidden_size"] = "sixty-four";
  std::ofstream(dir + "/config.json") << cfg.dump();
  expect_error(dir, ErrorCode::kFormat, "wrong type");
}

TEST(LoadErrors, TruncatedModelFileAtManyPoints) {
  SyntheticSpec spec;
  spec.arch = "gemma3";
  spec.dtype = DType::Q8_0;
  std::string path = test::scratch_dir() + "/gemma.gguf";
  write_synthetic_checkpoint(spec, path);
  auto bytes = read_file(path);
  std::string cut = path + ".cut";
  int refused = 0;
  for (size_t len = 0; len < bytes.size(); len += 1 + len / 7) {
    std::ofstream(cut, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(len));
    auto backend = make_cpu_backend(1);
    try {
      Model::load(cut, *backend);
      ADD_FAILURE() << "a file cut at " << len << " of " << bytes.size() << " bytes loaded";
    } catch (const Error&) {
      ++refused;
    }
  }
  EXPECT_GT(refused, 50);
}

}  // namespace
}  // namespace brisk
