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

void check_token_id(const std::string& key, int64_t id, int64_t n, const std::string& where) {
  if (id < 0 || id >= n)
    throw Error(ErrorCode::kFormat,
                key + " = " + std::to_string(id) + ": outside the vocabulary of " + std::to_string(n) + " tokens",
                where);
}

namespace {

// The special-token ids a config.json or generation_config.json names (an id or a list of
// ids each); calls use(id) for every one after checking it against the vocabulary.
template <typename Use>
void config_token_ids(const nlohmann::json& cfg, const std::string& file, int64_t n, const std::string& where,
                      Use&& use) {
  if (!cfg.is_object()) return;
  for (const char* key : {"bos_token_id", "eos_token_id", "pad_token_id"}) {
    auto it = cfg.find(key);
    if (it == cfg.end() || it->is_null()) continue;
    const std::string name = file + " " + key;
    auto one = [&](const nlohmann::json& v) {
      if (!v.is_number_integer()) throw Error(ErrorCode::kFormat, name + " = " + v.dump() + ": not a token id", where);
      check_token_id(name, v.get<int64_t>(), n, where);
      use(key, int32_t(v.get<int64_t>()));
    };
    if (it->is_array())
      for (const auto& v : *it) one(v);
    else
      one(*it);
  }
}

}  // namespace

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
  const int64_t n = tok->vocab_size();
  auto ignore = [](const char*, int32_t) {};
  config_token_ids(ckpt.hf_config, "config.json", n, ckpt.path, ignore);
  if (ckpt.hf_config.is_object() && ckpt.hf_config.contains("text_config"))
    config_token_ids(ckpt.hf_config["text_config"], "config.json text_config", n, ckpt.path, ignore);
  config_token_ids(ckpt.hf_generation_config, "generation_config.json", n, ckpt.path,
                   [&](const char* key, int32_t id) {
                     if (std::string_view(key) == "eos_token_id") tok->add_eos_id(id);
                   });
  return tok;
}

}  // namespace brisk
