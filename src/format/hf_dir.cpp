// Reads a Hugging Face directory. Shards named by the index are opened once each and must stay
// inside the directory, so an index cannot point the loader at arbitrary files.
#include "format/hf_dir.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "format/safetensors_reader.hpp"

namespace brisk {
namespace fs = std::filesystem;

namespace {

constexpr uintmax_t kMaxJsonFile = 256u << 20;  // index and tokenizer configs are far smaller

nlohmann::json read_json_file(const fs::path& p) {
  std::error_code ec;
  uintmax_t size = fs::file_size(p, ec);
  if (ec) throw Error(ErrorCode::kIo, "cannot stat: " + ec.message(), p.string());
  if (size > kMaxJsonFile)
    throw Error(ErrorCode::kLimit, "JSON file of " + std::to_string(size) + " bytes is too large", p.string());
  std::ifstream in(p, std::ios::binary);
  if (!in) throw Error(ErrorCode::kIo, "cannot open", p.string());
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return nlohmann::json::parse(ss.str());
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorCode::kFormat, std::string("invalid JSON: ") + e.what(), p.string());
  }
}

nlohmann::json read_json_object(const fs::path& p) {
  nlohmann::json j = read_json_file(p);
  if (!j.is_object()) throw Error(ErrorCode::kFormat, "expected a JSON object", p.string());
  return j;
}

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

void load_sharded(const fs::path& dir, const fs::path& index_path, CheckpointIndex& out) {
  nlohmann::json index = read_json_object(index_path);
  auto wm = index.find("weight_map");
  if (wm == index.end() || !wm->is_object() || wm->empty())
    throw Error(ErrorCode::kFormat, "index has no non-empty 'weight_map' object", index_path.string());

  // tensor -> shard, and each shard in first-seen order.
  std::map<std::string, std::string> wanted;
  std::vector<std::string> shards;
  for (auto it = wm->begin(); it != wm->end(); ++it) {
    if (!it->is_string())
      throw Error(ErrorCode::kFormat, "weight_map entry '" + it.key() + "' is not a file name",
                  index_path.string());
    std::string shard = it->get<std::string>();
    if (!is_safe_shard_name(shard))
      throw Error(ErrorCode::kFormat,
                  "weight_map entry '" + it.key() + "' names shard '" + shard +
                      "', which is not a plain file name in the directory",
                  index_path.string());
    if (std::find(shards.begin(), shards.end(), shard) == shards.end()) shards.push_back(shard);
    wanted[it.key()] = shard;
  }

  std::map<std::string, std::string> found;  // tensor -> shard that holds it
  for (const std::string& shard : shards) {
    fs::path p = dir / shard;
    if (!is_file(p))
      throw Error(ErrorCode::kIo, "shard '" + shard + "' named by the index is missing", p.string());
    size_t first = out.tensors.size();
    safetensors::read_safetensors(std::make_shared<MappedFile>(p.string()), out);
    for (size_t k = first; k < out.tensors.size(); ++k) {
      auto [it, fresh] = found.emplace(out.tensors[k].name, shard);
      if (!fresh)
        throw Error(ErrorCode::kFormat,
                    "tensor '" + out.tensors[k].name + "' appears in both '" + it->second + "' and '" +
                        shard + "'",
                    dir.string());
    }
  }
  for (const auto& [name, shard] : wanted) {
    auto it = found.find(name);
    if (it == found.end() || it->second != shard)
      throw Error(ErrorCode::kFormat,
                  "index lists tensor '" + name + "' in shard '" + shard + "', which does not hold it",
                  (dir / shard).string());
  }
}

}  // namespace

bool is_safe_shard_name(const std::string& name) {
  if (name.empty() || name == "." || name == "..") return false;
  return name.find('/') == std::string::npos && name.find('\\') == std::string::npos &&
         name.find('\0') == std::string::npos && name.find("..") == std::string::npos;
}

std::unique_ptr<CheckpointIndex> open_hf_dir(const std::string& dir_str) {
  fs::path dir(dir_str);
  auto out = std::make_unique<CheckpointIndex>();
  out->format = "hf";
  out->path = dir_str;

  fs::path config = dir / "config.json";
  if (!is_file(config))
    throw Error(ErrorCode::kIo, "Hugging Face directory has no config.json", dir_str);
  out->hf_config = read_json_object(config);

  // transformers prefers the single file when both exist; so do we.
  fs::path single = dir / "model.safetensors";
  fs::path index = dir / "model.safetensors.index.json";
  if (is_file(single))
    safetensors::read_safetensors(std::make_shared<MappedFile>(single.string()), *out);
  else if (is_file(index))
    load_sharded(dir, index, *out);
  else
    throw Error(ErrorCode::kIo,
                "Hugging Face directory has neither model.safetensors nor model.safetensors.index.json",
                dir_str);

  if (is_file(dir / "generation_config.json"))
    out->hf_generation_config = read_json_object(dir / "generation_config.json");
  if (is_file(dir / "tokenizer_config.json"))
    out->hf_tokenizer_config = read_json_object(dir / "tokenizer_config.json");
  if (is_file(dir / "tokenizer.json")) out->hf_tokenizer_json_path = (dir / "tokenizer.json").string();

  out->reindex();
  return out;
}

}  // namespace brisk
