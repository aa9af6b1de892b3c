// brisk's Jinja interpreter against Python jinja2 configured as transformers configures it
// (tools/make_template_fixtures.py made the fixtures): the real chat templates of Qwen3,
// Qwen2.5, Llama 3.1/3.2 and Gemma 3 on conversations with system prompts, several turns,
// tool calls, reasoning, content parts and unicode, with and without the generation prompt,
// and a template's refusal (raise_exception); language features one snippet at a time; and
// what a hostile template tries (syntax errors, runaway loops, output floods, deep nesting).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "format/checkpoint.hpp"
#include "test_paths.hpp"
#include "template/chat_template.hpp"

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
  int refused = 0;
  for (const auto& s : load("snippets.json")) {
    const std::string src = s["template"];
    jinja::Object vars;
    for (auto it = s["vars"].begin(); it != s["vars"].end(); ++it) vars.emplace_back(it.key(), jinja::from_json(it.value()));
    if (s.contains("error")) {
      EXPECT_THROW(jinja::render(*jinja::parse_template(src), vars), Error) << src << " (jinja2: " << s["error"] << ")";
      continue;
    }
    if (s.contains("brisk_error")) {  // jinja2 renders it (s["jinja2_output"]); brisk refuses on purpose
      ++refused;
      try {
        jinja::render(*jinja::parse_template(src), vars);
        ADD_FAILURE() << src << ": expected Error(kLimit) where jinja2 gives " << s["jinja2_output"];
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::kLimit) << src << ": " << e.what();
      }
      continue;
    }
    try {
      EXPECT_EQ(jinja::render(*jinja::parse_template(src), vars), s["output"].get<std::string>()) << src;
    } catch (const Error& e) {
      ADD_FAILURE() << src << ": " << e.what();
    }
  }
  EXPECT_GE(refused, 5) << "the fixtures should include integers past the range brisk holds";
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
  EXPECT_EQ(code_of("{{ range(10000000) | length }}"), ErrorCode::kLimit);
  EXPECT_EQ(code_of("{{ 'x' * 100000000 }}"), ErrorCode::kLimit);
  EXPECT_EQ(code_of("{{ 1 // 0 }}"), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of("{% set x = 1 %}{% set x.y = 2 %}"), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of("{{ undefined_thing.attr }}"), ErrorCode::kInvalidArgument);
}

std::string message_of(const std::string& src, const jinja::RenderLimits& limits = {}) {
  try {
    jinja::render(*jinja::parse_template(src), {}, limits);
  } catch (const Error& e) {
    return e.message();
  }
  return "(no error)";
}

// Integer results outside [INT64_MIN, UINT64_MAX] are refused with an error naming the
// operation; nothing wraps or traps (the fixtures hold the exact results inside the range).
TEST(ChatTemplate, IntegerOverflowIsAnErrorNamingTheOperation) {
  const std::pair<const char*, const char*> cases[] = {
      {"{{ 10 ** 20 }}", "'**'"},
      {"{{ 18446744073709551615 + 1 }}", "'+'"},
      {"{{ (-9223372036854775807 - 1) - 1 }}", "'-'"},
      {"{{ 4294967296 * 4294967296 }}", "'*'"},
      {"{{ -(-18446744073709551615) }}", "'-'"},
      {"{{ (-9223372036854775807 - 1) * 3 }}", "'*'"},
      {"{{ range(18446744073709551615, 18446744073709551616) }}", "integer"},
      {"{{ 1e300 | int }}", "'int'"},
  };
  for (const auto& [src, op] : cases) {
    EXPECT_EQ(code_of(src), ErrorCode::kLimit) << src;
    const std::string m = message_of(src);
    EXPECT_NE(m.find(op), std::string::npos) << src << ": " << m;
  }
  EXPECT_EQ(code_of("{{ (-9223372036854775807 - 1) // 0 }}"), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of("{{ 5 is divisibleby 0 }}"), ErrorCode::kInvalidArgument);
}

// Values cannot outgrow RenderLimits: doubling a string or list, building a string that
// holds itself, widths and repetitions, each stops with Error(kLimit) at the cap instead of
// taking gigabytes.
// Found by fuzzing: a namespace that holds itself. Printing, tojson and comparing it stop at a
// nesting cap with kLimit instead of overflowing the stack, and the cycle is freed after the
// render (the ASan pass would report the leak).
TEST(ChatTemplate, ANamespaceHoldingItselfIsAnErrorNotAStackOverflow) {
  const std::string cycle = "{% set ns = namespace(v=[1]) %}{% set ns.v = [ns] %}";
  const std::string other = "{% set b = namespace(v=1) %}{% set b.v = [b] %}";
  for (const std::string& use : std::vector<std::string>{"{{ ns.v | tojson }}", "{{ ns.v }}", "{{ ns.v | string }}",
                                                         other + "{{ ns == b }}"}) {
    const std::string src = cycle + use;
    const std::string m = message_of(src, {});
    EXPECT_EQ(code_of(src, {}), ErrorCode::kLimit) << src << ": " << m;
    EXPECT_NE(m.find("levels deep"), std::string::npos) << src << ": " << m;
  }
  EXPECT_EQ(jinja::render(*jinja::parse_template(cycle + "{{ ns.v | length }}"), {}), "1");
}

TEST(ChatTemplate, DoublingAndBombsStopAtTheValueCaps) {
  jinja::RenderLimits small;  // the same caps, smaller, so that the test runs fast
  small.max_string_bytes = 1 << 20;
  small.max_list_items = 1 << 16;
  small.max_work = 64 << 20;
  const std::string loop = "{% set ns = namespace(v=SEED) %}{% for i in range(80) %}{% set ns.v = STEP %}{% endfor %}";
  auto doubling = [&](const std::string& seed, const std::string& step) {
    std::string t = loop;
    t.replace(t.find("SEED"), 4, seed);
    t.replace(t.find("STEP"), 4, step);
    return t;
  };
  for (const std::string& src : std::vector<std::string>{
           doubling("'ab'", "ns.v ~ ns.v"),
           doubling("'ab'", "ns.v + ns.v"),
           doubling("[1]", "ns.v + ns.v"),
           doubling("'ab'", "[ns.v, ns.v] | join"),
           doubling("'ab'", "ns.v.replace('a', 'aa')"),
           doubling("'ab'", "ns.v * 2"),
           doubling("'ab'", "'%s%s' % (ns.v, ns.v)"),
           doubling("'ab'", "'{}{}'.format(ns.v, ns.v)"),
           doubling("'ab'", "ns.v | tojson | tojson | tojson"),
           doubling("[1]", "[ns.v, ns.v]") + "{{ ns.v | tojson | length }}",
           doubling("[1]", "[ns.v, ns.v]") + "{{ ns.v | string | length }}",
           doubling("[1]", "[ns.v, ns.v]") + "{{ ns.v | join | length }}",
           "{{ '%999999999d' % 1 }}",
           "{{ '{:>999999999}'.format(1) }}",
           "{{ 'x' | center(999999999) }}",
           "{{ 'x' * 999999999999 }}",
           "{{ [0] * 999999999 }}",
           "{{ 'a\nb' | indent(999999999) }}",
       }) {
    const std::string m = message_of(src, small);
    EXPECT_EQ(code_of(src, small), ErrorCode::kLimit) << src << ": " << m;
    EXPECT_NE(m.find("RenderLimits::"), std::string::npos) << src << ": " << m;
  }
  // The default caps stop the same loops at tens of MB.
  for (const char* step : {"ns.v ~ ns.v", "ns.v + ns.v"}) {
    const std::string m = message_of(doubling("'ab'", step));
    EXPECT_NE(m.find("RenderLimits::max_string_bytes"), std::string::npos) << m;
  }
  EXPECT_NE(message_of(doubling("[1]", "ns.v + ns.v")).find("RenderLimits::max_list_items"), std::string::npos);
}

// Work is metered across the render: many moderate strings add up to the work budget.
TEST(ChatTemplate, WorkAddsUpAcrossTheRender) {
  jinja::RenderLimits small;
  small.max_work = 64 << 20;
  const std::string src = "{% for i in range(100000) %}{% set s = 'x' * 100000 %}{% endfor %}";
  EXPECT_EQ(code_of(src, small), ErrorCode::kLimit);
  EXPECT_NE(message_of(src, small).find("RenderLimits::max_work"), std::string::npos) << message_of(src, small);
  small.max_work = 1000;
  EXPECT_EQ(code_of("{{ 'x' * 600 }}{{ 'y' * 600 }}", small), ErrorCode::kLimit);
  EXPECT_EQ(code_of("{{ 'x' * 200 }}{{ 'y' * 200 }}", small), ErrorCode::kInternal);  // renders
}

// Real templates under the default limits, with a conversation of several MB.
TEST(ChatTemplate, DefaultLimitsAllowLongConversations) {
  ojson messages = ojson::array();
  const std::string chunk = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. \n";
  std::string content;
  while (content.size() < 150'000) content += chunk;
  content += "END";  // templates trim the content
  for (int i = 0; i < 40; ++i)
    messages.push_back({{"role", i % 2 ? "assistant" : "user"}, {"content", std::to_string(i) + content}});
  for (const char* name : {"qwen3", "qwen2.5-instruct", "llama-3.1-instruct", "gemma-3-it"}) {
    ChatTemplate t(read_file(test::golden_dir() + "/templates/" + name + ".jinja"));
    const ojson extra = {{"bos_token", "<s>"}, {"eos_token", "</s>"}, {"date_string", "26 Jul 2024"}};
    std::string out;
    ASSERT_NO_THROW(out = t.render(messages, true, extra)) << name;
    EXPECT_GT(out.size(), 40 * content.size()) << name;
    EXPECT_NE(out.find("39" + content), std::string::npos) << name;
  }
}

// A caller (the server, shutting down) abandons a render in progress through limits.cancel.
TEST(ChatTemplate, RenderIsCancellable) {
  std::atomic<bool> cancel{true};
  jinja::RenderLimits limits;
  limits.cancel = &cancel;
  EXPECT_NE(message_of("{{ 1 }}", limits).find("cancelled"), std::string::npos);
  cancel = false;
  EXPECT_EQ(message_of("{{ 1 }}", limits), "(no error)");

  limits.max_steps = INT64_MAX;  // without the flag this loop would run for hours
  limits.max_work = INT64_MAX;
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    cancel = true;
  });
  const std::string m =
      message_of("{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}", limits);
  stopper.join();
  EXPECT_NE(m.find("cancelled"), std::string::npos) << m;
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
