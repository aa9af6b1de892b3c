// brisk's Jinja interpreter against Python jinja2 configured as transformers configures it
// (tools/make_template_fixtures.py made the fixtures): the real chat templates of Qwen3,
// Qwen2.5, Llama 3.1/3.2 and Gemma 3 on conversations with system prompts, several turns,
// tool calls, reasoning, content parts and unicode, with and without the generation prompt,
// and a template's refusal (raise_exception); language features one snippet at a time; and
// what a hostile template tries (syntax errors, runaway loops, output floods, deep nesting).
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "format/checkpoint.hpp"
#include "test_paths.hpp"
#include "tokenizer/chat_template.hpp"

namespace brisk {
namespace {

using ojson = nlohmann::ordered_json;

ojson load(const std::string& name) {
  std::ifstream f(test::golden_dir() + "/templates/" + name);
  EXPECT_TRUE(f) << "missing tests/golden/templates/" << name << " (tools/make_template_fixtures.py)";
  return ojson::parse(f);
}

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  EXPECT_TRUE(f) << path;
  return std::string(std::istreambuf_iterator<char>(f), {});
}

TEST(ChatTemplate, RealTemplatesRenderAsJinja2Does) {
  const ojson renders = load("renders.json");
  ASSERT_GE(renders.size(), 40u);
  std::map<std::string, std::unique_ptr<ChatTemplate>> templates;
  int errors = 0;
  for (const auto& r : renders) {
    const std::string name = r["template"];
    auto& t = templates[name];
    if (!t) t = std::make_unique<ChatTemplate>(read_file(test::golden_dir() + "/templates/" + name + ".jinja"));
    const std::string what = name + " / " + r["case"].get<std::string>() + (r["add_generation_prompt"] ? " +gen" : "");
    if (r.contains("error")) {
      ++errors;
      try {
        t->render(r["messages"], r["add_generation_prompt"], r["extra"]);
        ADD_FAILURE() << what << ": expected the template to refuse the messages";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << what;
        EXPECT_EQ(e.message(), r["error"].get<std::string>()) << what;
      }
      continue;
    }
    EXPECT_EQ(t->render(r["messages"], r["add_generation_prompt"], r["extra"]), r["output"].get<std::string>()) << what;
  }
  EXPECT_GE(errors, 1) << "the fixtures should include a refused conversation";
}

TEST(ChatTemplate, LanguageFeaturesMatchJinja2) {
  for (const auto& s : load("snippets.json")) {
    const std::string src = s["template"];
    jinja::Object vars;
    for (auto it = s["vars"].begin(); it != s["vars"].end(); ++it) vars.emplace_back(it.key(), jinja::from_json(it.value()));
    if (s.contains("error")) {
      EXPECT_THROW(jinja::render(*jinja::parse_template(src), vars), Error) << src;
      continue;
    }
    try {
      EXPECT_EQ(jinja::render(*jinja::parse_template(src), vars), s["output"].get<std::string>()) << src;
    } catch (const Error& e) {
      ADD_FAILURE() << src << ": " << e.what();
    }
  }
}

ErrorCode code_of(const std::string& src, const jinja::RenderLimits& limits = {}) {
  try {
    jinja::render(*jinja::parse_template(src), {}, limits);
  } catch (const Error& e) {
    return e.code();
  }
  return ErrorCode::kInternal;  // no error at all
}

TEST(ChatTemplate, SyntaxErrorsNameTheLine) {
  for (const char* src : {"line one\n{{ x ", "{% if x %}no end", "{% for %}{% endfor %}", "{{ 'open }}",
                          "\n\n{% bogus %}", "{{ a b }}", "{% endif %}", "{{ x | }}", "{{ (1 }}"}) {
    try {
      jinja::parse_template(src);
      ADD_FAILURE() << "parsed: " << src;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kFormat) << src;
      EXPECT_NE(e.message().find("line "), std::string::npos) << e.message();
    }
  }
  try {
    jinja::parse_template("a\nb\n{% bogus %}");
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("line 3"), std::string::npos) << e.message();
  }
}

TEST(ChatTemplate, HostileTemplatesHitLimitsNotTheStack) {
  jinja::RenderLimits small;
  small.max_output = 1000;
  EXPECT_EQ(code_of("{% for x in range(100) %}{{ 'x' * 100 }}{% endfor %}", small), ErrorCode::kLimit);
  EXPECT_EQ(code_of("{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}"), ErrorCode::kLimit);
  EXPECT_EQ(code_of("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"), ErrorCode::kLimit);
  EXPECT_EQ(code_of("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}"), ErrorCode::kLimit);
  EXPECT_EQ(code_of("{{ " + std::string(5000, '-') + "1 }}"), ErrorCode::kLimit);
  std::string deep;
  for (int i = 0; i < 3000; ++i) deep += "{% if true %}";
  EXPECT_EQ(code_of(deep), ErrorCode::kLimit);
  EXPECT_EQ(code_of("{{ range(10000000) | length }}"), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of("{{ 'x' * 1000000 }}"), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of("{{ 1 // 0 }}"), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of("{% set x = 1 %}{% set x.y = 2 %}"), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of("{{ undefined_thing.attr }}"), ErrorCode::kInvalidArgument);
}

TEST(ChatTemplate, RefusesBadMessages) {
  ChatTemplate t("{% for m in messages %}{{ m.role }}{% endfor %}");
  EXPECT_THROW(t.render(ojson::object(), true), Error);
  EXPECT_EQ(t.render(ojson::parse(R"([{"role": "user"}, {"role": "tool"}])"), true), "usertool");
}

TEST(ChatTemplate, FoundInGgufMetadataAndTokenizerConfig) {
  CheckpointIndex gguf;
  EXPECT_FALSE(find_chat_template(gguf).has_value());
  MetaValue v;
  v.type = MetaType::String;
  v.s = "{{ 'gguf' }}";
  gguf.metadata["tokenizer.chat_template"] = v;
  EXPECT_EQ(find_chat_template(gguf).value(), "{{ 'gguf' }}");

  CheckpointIndex hf;
  hf.hf_tokenizer_config = nlohmann::json::parse(R"({"chat_template": "{{ 'hf' }}"})");
  EXPECT_EQ(find_chat_template(hf).value(), "{{ 'hf' }}");
  hf.hf_tokenizer_config = nlohmann::json::parse(
      R"({"chat_template": [{"name": "tool_use", "template": "t"}, {"name": "default", "template": "d"}]})");
  EXPECT_EQ(find_chat_template(hf).value(), "d");
}

}  // namespace
}  // namespace brisk
