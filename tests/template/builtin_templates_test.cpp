// brisk's built-in chat templates against the official ones (tools/make_chat_fixtures.py made
// the fixtures with Python jinja2 and transformers): each built-in renders what the official
// template of its family renders, and the Gemma 3 one, tokenized by brisk, gives the ids the
// reference tokenizer gives for the official render on the real Gemma 3 270M file. Then which
// template a model gets: its own, --chat-template's, else its architecture's built-in with a
// warning, else ChatML when the vocabulary lacks the built-in's tokens.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "format/checkpoint.hpp"
#include "test_paths.hpp"
#include "template/builtin_templates.hpp"
#include "template/chat_template.hpp"
#include "tokenizer/tokenizer.hpp"

namespace brisk {
namespace {

using ojson = nlohmann::ordered_json;

ojson load_json(const std::string& path) {
  std::ifstream f(path);
  EXPECT_TRUE(f) << "missing " << path << " (tools/make_chat_fixtures.py)";
  return ojson::parse(f);
}

const BuiltinChatTemplate& builtin(const std::string& name) {
  const BuiltinChatTemplate* b = find_builtin_chat_template(name);
  if (!b) throw std::runtime_error("no built-in template " + name);
  return *b;
}

TEST(BuiltinTemplates, RenderAsTheOfficialTemplatesDo) {
  const ojson rows = load_json(test::golden_dir() + "/templates/builtin_renders.json");
  std::map<std::string, int> checked;
  for (const auto& r : rows) {
    const std::string name = r["builtin"];
    const ChatTemplate t(builtin(name).source);
    const std::string what = name + " vs " + r["official"].get<std::string>() + " / " +
                             r["case"].get<std::string>() + (r["add_generation_prompt"] ? " +gen" : "");
    ++checked[name];
    if (r.contains("error")) {
      try {
        t.render(r["messages"], r["add_generation_prompt"], r["extra"]);
        ADD_FAILURE() << what << ": expected the template to refuse the messages";
      } catch (const Error& e) {
        EXPECT_EQ(e.message(), r["error"].get<std::string>()) << what;
      }
      continue;
    }
    EXPECT_EQ(t.render(r["messages"], r["add_generation_prompt"], r["extra"]), r["output"].get<std::string>())
        << what;
  }
  for (const char* name : {"gemma3", "llama3", "qwen2.5", "qwen3"}) EXPECT_GE(checked[name], 10) << name;
}

TEST(BuiltinTemplates, ChatMLIsPlain) {
  const ChatTemplate t(builtin("chatml").source);
  const ojson msgs = ojson::parse(R"([{"role": "system", "content": "S"}, {"role": "user", "content": "U"}])");
  EXPECT_EQ(t.render(msgs, true), "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(builtin_chat_template_names(), "gemma3, llama3, qwen2.5, qwen3, chatml");
}

// What the server does with a chat request on the default model: the template the model
// gets (its file carries none), rendered with the tokenizer's BOS text, encoded with special
// tokens parsed and nothing added.
TEST(BuiltinTemplates, GemmaPromptsTokenizeAsTheReferenceDoes) {
  const ojson fixture = load_json(test::golden_dir() + "/gemma3_270m/chat_tokens.json");
  auto ckpt = open_checkpoint(test::default_model_path());
  auto tok = load_tokenizer(*ckpt);
  const ChatTemplateChoice choice = choose_chat_template(*ckpt, *tok, "gemma3", "");
  ASSERT_EQ(choice.source, builtin("gemma3").source);
  const ChatTemplate t(choice.source);
  const ojson extra = {{"bos_token", tok->token_text(tok->bos_id())}, {"eos_token", tok->token_text(tok->eos_ids()[0])}};
  ASSERT_GE(fixture["renders"].size(), 8u);
  for (const auto& r : fixture["renders"]) {
    const std::string what = r["case"].get<std::string>() + (r["add_generation_prompt"] ? " +gen" : "");
    const std::string text = t.render(r["messages"], r["add_generation_prompt"], extra);
    EXPECT_EQ(text, r["text"].get<std::string>()) << what;
    EXPECT_EQ(tok->encode(text, false, true), r["ids"].get<std::vector<int32_t>>()) << what;
  }
}

TEST(BuiltinTemplates, DefaultModelGetsGemmaWithAWarning) {
  auto ckpt = open_checkpoint(test::default_model_path());
  auto tok = load_tokenizer(*ckpt);
  ASSERT_FALSE(find_chat_template(*ckpt).has_value()) << "the file now carries a template: revisit this test";
  const ChatTemplateChoice c = choose_chat_template(*ckpt, *tok, "gemma3", "");
  EXPECT_EQ(c.note.rfind("warning: gemma-3-270m-q4_k_m.gguf carries no chat template", 0), 0u) << c.note;
  EXPECT_NE(c.note.find("'gemma3'"), std::string::npos) << c.note;
  EXPECT_NE(c.note.find("--chat-template"), std::string::npos) << c.note;
  // Asked for: no warning, the named template.
  const ChatTemplateChoice q = choose_chat_template(*ckpt, *tok, "gemma3", "qwen3");
  EXPECT_EQ(q.source, builtin("qwen3").source);
  EXPECT_EQ(q.note, "chat template: the built-in 'qwen3' (--chat-template)");
}

TEST(BuiltinTemplates, VocabularyWithoutTheMarkersFallsBackToChatML) {
  // A Qwen2-style vocabulary: <|im_start|> but no <start_of_turn> and no template of its own.
  auto ckpt = open_checkpoint(test::golden_dir() + "/tokenizer/qwen2_mini.gguf");
  auto tok = load_tokenizer(*ckpt);
  ASSERT_FALSE(find_chat_template(*ckpt).has_value());
  const ChatTemplateChoice g = choose_chat_template(*ckpt, *tok, "gemma3", "");
  EXPECT_EQ(g.source, builtin("chatml").source);
  EXPECT_NE(g.note.find("lacks <start_of_turn>"), std::string::npos) << g.note;
  EXPECT_EQ(choose_chat_template(*ckpt, *tok, "qwen2.5", "").source, builtin("qwen2.5").source);
  // The checkpoint's own template wins over any default.
  MetaValue own;
  own.type = MetaType::String;
  own.s = "{{ 'own' }}";
  ckpt->metadata["tokenizer.chat_template"] = own;
  const ChatTemplateChoice o = choose_chat_template(*ckpt, *tok, "gemma3", "");
  EXPECT_EQ(o.source, "{{ 'own' }}");
  EXPECT_EQ(o.note, "");
}

TEST(BuiltinTemplates, ChatTemplateOptionTakesANameOrAFile) {
  EXPECT_EQ(chat_template_source("llama3"), builtin("llama3").source);
  const std::string dir = test::scratch_dir();
  std::ofstream(dir + "/t.jinja") << "{{ messages[0].content }}!";
  EXPECT_EQ(chat_template_source(dir + "/t.jinja"), "{{ messages[0].content }}!");
  std::ofstream(dir + "/tokenizer_config.json") << R"({"chat_template": "{{ 'cfg' }}"})";
  EXPECT_EQ(chat_template_source(dir + "/tokenizer_config.json"), "{{ 'cfg' }}");
  std::ofstream(dir + "/other.json") << R"({"x": 1})";
  EXPECT_THROW(chat_template_source(dir + "/other.json"), Error);
  try {
    chat_template_source("gemma");
    ADD_FAILURE() << "an unknown name must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(e.message().find("gemma3, llama3, qwen2.5, qwen3, chatml"), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace brisk
