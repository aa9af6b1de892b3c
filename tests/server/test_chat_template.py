"""Chat on the default model (the Gemma 3 270M GGUF, which carries no chat template) goes
through Gemma's own turn format: brisk picks its built-in gemma3 template, says so once in the
log, and a chat request's prompt is exactly the token ids that the official Gemma 3 template,
rendered by jinja2 and tokenized by the reference tokenizer, gives
(tests/golden/gemma3_270m/chat_tokens.json, made by tools/make_chat_fixtures.py).

The server shows no prompt ids, so the test checks two things it does show: usage.prompt_tokens
equals the reference count, and the greedy reply equals the greedy completion of the reference
ids sent as a token-id prompt (with the prefix cache off, the same ids give the same logits on
the CPU backend, and a different prompt of the same length would almost never give the same
reply). --chat-template then picks another template (ChatML: other tokens), a built-in by
name, or a Jinja file; an unknown one is refused before anything loads."""
import json
from pathlib import Path

import pytest

from conftest import BRISK, ROOT, Server, default_model

FIXTURE = json.loads((ROOT / "tests/golden/gemma3_270m/chat_tokens.json").read_text())
PROMPTS = [r for r in FIXTURE["renders"] if r["add_generation_prompt"]]
OFFICIAL_GEMMA = ROOT / "tests/golden/templates/gemma-3-it.jinja"


def serve(*args):
    return Server("--no-prefix-cache", "--ctx", "512", *args, model=default_model())


def chat(server, messages):
    r = server.client().chat.completions.create(model="m", messages=messages, max_tokens=10, temperature=0)
    return r.usage.prompt_tokens, r.choices[0].message.content


def complete_ids(server, ids):
    r = server.client().completions.create(model="m", prompt=ids, max_tokens=10, temperature=0)
    return r.usage.prompt_tokens, r.choices[0].text


@pytest.fixture(scope="module")
def default_server():
    s = serve()
    yield s
    assert s.stop() == 0, "".join(s.log)


def test_the_fallback_is_announced_once(default_server):
    notes = [line for line in default_server.log if "chat template" in line]
    assert len(notes) == 1, default_server.log
    assert "warning: gemma-3-270m-q4_k_m.gguf carries no chat template" in notes[0]
    assert "built-in 'gemma3'" in notes[0]


@pytest.mark.parametrize("case", [r["case"] for r in PROMPTS])
def test_chat_prompt_is_the_official_gemma_rendering(default_server, case):
    ref = next(r for r in PROMPTS if r["case"] == case)
    n, reply = chat(default_server, ref["messages"])
    assert n == len(ref["ids"]), f"prompt_tokens {n}, the reference has {len(ref['ids'])}"
    n_ids, text = complete_ids(default_server, ref["ids"])
    assert n_ids == len(ref["ids"])
    assert reply, "an empty reply would make the comparison vacuous"
    assert reply == text, "the chat prompt is not the reference's ids"


def test_chat_template_option_picks_another_template():
    ref = next(r for r in PROMPTS if r["case"] == "system_user")
    chatml = serve("--chat-template", "chatml")
    try:
        assert not any("warning" in line for line in chatml.log), chatml.log
        assert any("the built-in 'chatml' (--chat-template)" in line for line in chatml.log), chatml.log
        n, _ = chat(chatml, ref["messages"])
        # Gemma's vocabulary has no <|im_start|>: the same conversation becomes other tokens.
        assert n != len(ref["ids"])
    finally:
        assert chatml.stop() == 0
    official = serve("--chat-template", str(OFFICIAL_GEMMA))
    try:
        assert chat(official, ref["messages"])[0] == len(ref["ids"])
    finally:
        assert official.stop() == 0


def test_unknown_chat_template_is_a_usage_error():
    import subprocess
    p = subprocess.run([str(BRISK), "serve", "--port", "0", "--chat-template", "gemma"], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 2, p.stderr
    assert "gemma3, llama3, qwen2.5, qwen3, chatml" in p.stderr
