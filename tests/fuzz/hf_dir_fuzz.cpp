// Hugging Face directories from anywhere: config.json, model.safetensors.index.json and
// tokenizer.json (the input's three parts), written to a scratch directory and opened as a
// model would be: the directory, its hyperparameters, its tokenizer.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "base/error.hpp"
#include "fuzz_input.hpp"
#include "format/hf_dir.hpp"
#include "model/hparams.hpp"
#include "tokenizer/tokenizer.hpp"

using namespace brisk;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("brisk-fuzz-hf-" + std::to_string(::getpid()));
  static const bool made = std::filesystem::create_directories(dir) || true;
  (void)made;
  const auto parts = fuzz::split_parts(data, size, 3);
  const char* names[3] = {"config.json", "model.safetensors.index.json", "tokenizer.json"};
  for (int i = 0; i < 3; ++i) std::ofstream(dir / names[i], std::ios::binary | std::ios::trunc) << parts[size_t(i)];
  try {
    auto ckpt = open_hf_dir(dir.string());
    hparams_from_checkpoint(*ckpt);
  } catch (const Error&) {
  }
  try {
    auto tok = load_tokenizer_json((dir / "tokenizer.json").string());
    tok->decode(tok->encode("Hello <|im_end|> wörld", true, true));
  } catch (const Error&) {
  }
  return 0;
}
