// tokenizer.json (HF `tokenizers`) -> TokenizerSpec. Reads what Qwen2/Qwen3, Llama 3 and
// Gemma files use: model BPE (merges as "a b" or [a, b]), added_tokens, normalizer NFC or
// Replace(" ", "▁") / Prepend, pre_tokenizer Sequence/Split/ByteLevel/Metaspace, and the
// post_processor's TemplateProcessing ids. Anything else is refused with a clear message.

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "tokenizer/tokenizer_impl.hpp"
#include "tokenizer/tokenizer_loaders.hpp"

namespace brisk {
namespace {

using nlohmann::json;

json read_json(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(ErrorCode::kIo, "cannot open " + path, path);
  std::stringstream ss;
  ss << f.rdbuf();
  try {
    return json::parse(ss.str());
  } catch (const json::exception& e) {
    throw Error(ErrorCode::kFormat, std::string("not valid JSON: ") + e.what(), path);
  }
}

struct JsonReader {
  TokenizerSpec& spec;
  bool byte_level = false, spm = false;
  const std::string& where;

  [[noreturn]] void unsupported(const std::string& what) const {
    throw Error(ErrorCode::kUnsupported, "tokenizer.json: unsupported " + what, where);
  }

  void normalizer(const json& n) {
    if (n.is_null()) return;
    std::string type = n.value("type", "");
    if (type == "Sequence") {
      for (auto& x : n.at("normalizers")) normalizer(x);
    } else if (type == "NFC") {
      spec.nfc = true;
    } else if (type == "Replace") {
      const json& pat = n.at("pattern");
      if (pat.contains("String") && pat["String"] == " " && n.value("content", "") == "\xE2\x96\x81") spm = true;
      else unsupported("Replace normalizer " + n.dump());
    } else if (type == "Prepend") {
      if (n.value("prepend", "") != "\xE2\x96\x81") unsupported("Prepend normalizer " + n.dump());
      spec.add_space_prefix = true;
    } else {
      unsupported("normalizer " + type);
    }
  }

  void pre_tokenizer(const json& p) {
    if (p.is_null()) return;
    std::string type = p.value("type", "");
    if (type == "Sequence") {
      for (auto& x : p.at("pretokenizers")) pre_tokenizer(x);
    } else if (type == "Split") {
      const json& pat = p.at("pattern");
      if (pat.contains("Regex")) {
        std::string behavior = p.value("behavior", "Isolated");
        if (behavior != "Isolated" || p.value("invert", false)) unsupported("Split behavior " + behavior);
        spec.split_regexes.push_back(pat["Regex"].get<std::string>());
      } else if (pat.contains("String") && pat["String"] == " ") {
        // Gemma: runs after Replace(" ", "▁"), so there is no space left to split on
      } else {
        unsupported("Split pattern " + pat.dump());
      }
    } else if (type == "ByteLevel") {
      byte_level = true;
      if (p.value("add_prefix_space", false)) unsupported("ByteLevel add_prefix_space");
      if (p.value("use_regex", true)) spec.split_regexes.push_back(kGpt2Regex);
    } else if (type == "Metaspace") {
      spm = true;
      std::string scheme = p.value("prepend_scheme", p.value("add_prefix_space", true) ? "always" : "never");
      if (scheme != "never") spec.add_space_prefix = true;
      if (p.value("split", false)) unsupported("Metaspace split=true");
    } else {
      unsupported("pre_tokenizer " + type);
    }
  }

  void post_processor(const json& p, const StringMap<int32_t>& ids) {
    if (p.is_null()) return;
    std::string type = p.value("type", "");
    if (type == "Sequence") {
      for (auto& x : p.at("processors")) post_processor(x, ids);
    } else if (type == "ByteLevel") {
      // offsets only
    } else if (type == "TemplateProcessing") {
      bool after = false;
      for (auto& piece : p.at("single")) {
        if (piece.contains("Sequence")) {
          after = true;
          continue;
        }
        std::string name = piece.at("SpecialToken").at("id").get<std::string>();
        std::vector<int32_t> tok_ids;
        if (p.contains("special_tokens") && p["special_tokens"].contains(name)) {
          for (auto& v : p["special_tokens"][name].at("ids")) tok_ids.push_back(v.get<int32_t>());
        } else if (auto it = ids.find(name); it != ids.end()) {
          tok_ids.push_back(it->second);
        } else {
          throw Error(ErrorCode::kFormat, "post_processor names unknown token " + name, where);
        }
        auto& dst = after ? spec.suffix_ids : spec.prefix_ids;
        dst.insert(dst.end(), tok_ids.begin(), tok_ids.end());
      }
    } else {
      unsupported("post_processor " + type);
    }
  }
};

std::string token_string(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content")) return v["content"].get<std::string>();
  return {};
}

// BOS: the post-processor's first token, else tokenizer_config's bos_token; EOS from the config.
// A special token the config names must exist: a missing EOS would never stop a generation.
void apply_config_tokens(const json& config, const StringMap<int32_t>& ids, TokenizerSpec& spec) {
  if (!spec.prefix_ids.empty()) spec.bos_id = spec.prefix_ids[0];
  if (!config.is_object()) return;
  auto named = [&](const char* key) -> int32_t {
    if (!config.contains(key) || config[key].is_null()) return -1;
    const std::string text = token_string(config[key]);
    auto it = ids.find(text);
    if (it == ids.end())
      throw Error(ErrorCode::kFormat, std::string("tokenizer_config.json ") + key + " '" + text + "' is not in the vocabulary",
                  spec.where);
    return it->second;
  };
  const int32_t bos = named("bos_token"), eos = named("eos_token");
  named("pad_token");
  named("unk_token");
  if (spec.bos_id < 0) spec.bos_id = bos;
  if (eos >= 0) spec.eos_ids.push_back(eos);
  if (spec.prefix_ids.empty() && config.value("add_bos_token", false) && spec.bos_id >= 0)
    spec.prefix_ids.push_back(spec.bos_id);
}

}  // namespace

std::unique_ptr<Tokenizer> tokenizer_from_json(const nlohmann::json& j, const nlohmann::json& config,
                                               const std::string& where) {
  TokenizerSpec spec;
  spec.where = where;
  spec.vocab_key = "tokenizer.json model.vocab";
  JsonReader r{spec, false, false, where};
  try {
    const json& model = j.at("model");
    if (model.value("type", "BPE") != "BPE") r.unsupported("model type " + model.value("type", ""));
    const json& vocab = model.at("vocab");
    int64_t max_id = -1;
    for (auto& [k, v] : vocab.items()) max_id = std::max<int64_t>(max_id, v.get<int64_t>());
    if (j.contains("added_tokens"))
      for (auto& a : j["added_tokens"]) max_id = std::max<int64_t>(max_id, a.at("id").get<int64_t>());
    if (max_id < 0 || max_id >= (int64_t(1) << 30)) throw Error(ErrorCode::kFormat, "bad vocabulary ids", where);
    spec.tokens.assign(size_t(max_id + 1), std::string());
    spec.types.assign(size_t(max_id + 1), kNormal);
    StringMap<int32_t> ids;
    for (auto& [k, v] : vocab.items()) {
      int64_t id = v.get<int64_t>();
      if (id < 0) throw Error(ErrorCode::kFormat, "negative token id for " + k, where);
      spec.tokens[size_t(id)] = k;
      ids.emplace(k, int32_t(id));
    }
    for (auto& m : model.value("merges", json::array())) {
      if (m.is_string()) {
        std::string s = m.get<std::string>();
        size_t sp = s.find(' ');
        if (sp == std::string::npos) throw Error(ErrorCode::kFormat, "merge without a space: " + s, where);
        spec.merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
      } else {
        spec.merges.emplace_back(m.at(0).get<std::string>(), m.at(1).get<std::string>());
      }
    }
    spec.byte_fallback = model.value("byte_fallback", false);
    spec.fuse_unk = model.value("fuse_unk", false);
    spec.ignore_merges = model.value("ignore_merges", false);
    if (model.contains("unk_token") && model["unk_token"].is_string()) {
      const std::string unk = model["unk_token"].get<std::string>();
      auto it = ids.find(unk);
      if (it == ids.end())
        throw Error(ErrorCode::kFormat, "tokenizer.json model.unk_token '" + unk + "' is not in the vocabulary", where);
      spec.unk_id = it->second;
    }
    if (j.contains("added_tokens")) {
      for (auto& a : j["added_tokens"]) {
        AddedToken t;
        t.id = a.at("id").get<int32_t>();
        t.content = a.at("content").get<std::string>();
        t.special = a.value("special", false);
        t.lstrip = a.value("lstrip", false);
        t.rstrip = a.value("rstrip", false);
        t.single_word = a.value("single_word", false);
        spec.tokens[t.id] = t.content;
        spec.types[t.id] = t.special ? kControl : kUserDefined;
        ids.emplace(t.content, t.id);
        spec.added.push_back(std::move(t));
      }
    }
    r.normalizer(j.value("normalizer", json()));
    r.pre_tokenizer(j.value("pre_tokenizer", json()));
    if (j.contains("decoder") && j["decoder"].is_object() && j["decoder"].value("type", "") == "ByteLevel")
      r.byte_level = true;
    r.post_processor(j.value("post_processor", json()), ids);
    if (r.byte_level && r.spm) r.unsupported("mix of ByteLevel and Metaspace/Replace");
    spec.kind = r.byte_level ? TokenizerKind::kByteLevel : TokenizerKind::kSpm;
    if (spec.kind == TokenizerKind::kSpm && !spec.split_regexes.empty()) r.unsupported("regex split without ByteLevel");

    apply_config_tokens(config, ids, spec);
    for (int32_t id : eos_by_name(spec.tokens, spec.types)) spec.eos_ids.push_back(id);
  } catch (const json::exception& e) {
    throw Error(ErrorCode::kFormat, std::string("tokenizer.json: ") + e.what(), where);
  }
  return make_tokenizer(std::move(spec));
}

std::unique_ptr<Tokenizer> load_tokenizer_json(const std::string& tokenizer_json_path,
                                               const std::string& tokenizer_config_path) {
  json j = read_json(tokenizer_json_path);
  json config = tokenizer_config_path.empty() ? json() : read_json(tokenizer_config_path);
  return tokenizer_from_json(j, config, tokenizer_json_path);
}

}  // namespace brisk
