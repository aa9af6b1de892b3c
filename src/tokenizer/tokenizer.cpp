// Tokenizer's non-virtual members, the end-of-generation guesses shared by both loaders and
// load_tokenizer, which picks GGUF metadata or the HF directory's tokenizer.json.

#include "tokenizer/tokenizer.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "base/error.hpp"
#include "format/checkpoint.hpp"
#include "tokenizer/tokenizer_impl.hpp"
#include "tokenizer/tokenizer_loaders.hpp"

namespace brisk {

bool Tokenizer::is_eos(int32_t id) const {
  return std::find(eos_ids_.begin(), eos_ids_.end(), id) != eos_ids_.end();
}

void Tokenizer::add_eos_id(int32_t id) {
  if (id < 0 || id >= vocab_size())
    throw Error(ErrorCode::kInvalidArgument, "eos id " + std::to_string(id) + " is outside the vocabulary");
  if (!is_eos(id)) eos_ids_.push_back(id);
}

std::vector<int32_t> eos_by_name(const std::vector<std::string>& tokens, const std::vector<uint8_t>& types) {
  static const char* const kNames[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
                                       "<|eom_id|>", "<EOT>", "_<EOT>", "<|end_of_text|>", "<｜end▁of▁sentence｜>"};
  std::vector<int32_t> out;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (i < types.size() && types[i] != kControl) continue;
    for (const char* n : kNames)
      if (tokens[i] == n) out.push_back(int32_t(i));
  }
  return out;
}

std::unique_ptr<Tokenizer> load_tokenizer(const CheckpointIndex& ckpt) {
  if (ckpt.format == "gguf") return load_tokenizer_gguf(ckpt);
  if (ckpt.hf_tokenizer_json_path.empty())
    throw Error(ErrorCode::kFormat, "checkpoint has no tokenizer.json", ckpt.path);
  std::ifstream f(ckpt.hf_tokenizer_json_path, std::ios::binary);
  if (!f) throw Error(ErrorCode::kIo, "cannot open " + ckpt.hf_tokenizer_json_path, ckpt.hf_tokenizer_json_path);
  std::stringstream ss;
  ss << f.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(ss.str());
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorCode::kFormat, std::string("not valid JSON: ") + e.what(), ckpt.hf_tokenizer_json_path);
  }
  auto tok = tokenizer_from_json(j, ckpt.hf_tokenizer_config, ckpt.hf_tokenizer_json_path);
  const auto& gen = ckpt.hf_generation_config;
  if (gen.is_object() && gen.contains("eos_token_id")) {
    const auto& e = gen["eos_token_id"];
    if (e.is_number_integer()) tok->add_eos_id(e.get<int32_t>());
    else if (e.is_array())
      for (auto& x : e)
        if (x.is_number_integer()) tok->add_eos_id(x.get<int32_t>());
  }
  return tok;
}

}  // namespace brisk
