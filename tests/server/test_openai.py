"""The OpenAI API of `brisk serve`, through the official openai client, on the real Gemma 3
270M (CPU backend): chat and completions, whole and streamed, stop strings, token limits,
seeds, logprobs, every error status, the API key, batching that does not change results,
disconnects that free the slot and its KV blocks, a shared system prompt served from the
prefix cache, and a graceful shutdown."""
import concurrent.futures as cf
import json
import signal
import socket
import time

import httpx
import openai
import pytest

from conftest import SANITIZED, Server, default_model, wait_for

CHAT = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Name three colors."}]


def test_models_and_health(server):
    models = server.client().models.list()
    assert [m.id for m in models.data] == ["gemma-3-270m-q4_k_m.gguf"]
    assert httpx.get(server.url + "/health").json() == {"status": "ok"}


def test_chat_whole_and_streamed_agree(server):
    c = server.client()
    whole = c.chat.completions.create(model="m", messages=CHAT, max_tokens=12, temperature=0)
    choice = whole.choices[0]
    assert whole.object == "chat.completion" and whole.id.startswith("chatcmpl-")
    assert choice.message.role == "assistant" and choice.message.content
    assert choice.finish_reason in ("stop", "length")
    assert whole.usage.completion_tokens <= 12
    assert whole.usage.total_tokens == whole.usage.prompt_tokens + whole.usage.completion_tokens

    chunks = list(c.chat.completions.create(model="m", messages=CHAT, max_tokens=12, temperature=0, stream=True,
                                            stream_options={"include_usage": True}))
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
    assert text == choice.message.content
    finals = [ch.choices[0].finish_reason for ch in chunks if ch.choices and ch.choices[0].finish_reason]
    assert finals == [choice.finish_reason]
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == whole.usage.completion_tokens
    assert len({ch.id for ch in chunks}) == 1


def test_completions_whole_and_streamed_agree(server):
    c = server.client()
    whole = c.completions.create(model="m", prompt="The capital of France is", max_tokens=10, temperature=0)
    assert whole.object == "text_completion"
    assert whole.choices[0].finish_reason == "length" and whole.usage.completion_tokens == 10
    streamed = "".join(ch.choices[0].text for ch in c.completions.create(
        model="m", prompt="The capital of France is", max_tokens=10, temperature=0, stream=True))
    assert streamed == whole.choices[0].text


def test_stop_strings_end_the_text(server):
    c = server.client()
    full = c.completions.create(model="m", prompt="One, two, three,", max_tokens=16, temperature=0).choices[0].text
    words = [w for w in full.split(" ") if w.strip()]
    assert len(words) >= 3, full
    stop = " " + words[2]
    cut = c.completions.create(model="m", prompt="One, two, three,", max_tokens=16, temperature=0, stop=[stop, "@@"])
    assert cut.choices[0].finish_reason == "stop"
    assert cut.choices[0].text == full[: full.index(stop)]
    streamed = "".join(ch.choices[0].text for ch in c.completions.create(
        model="m", prompt="One, two, three,", max_tokens=16, temperature=0, stop=stop, stream=True))
    assert streamed == cut.choices[0].text


def test_max_tokens_and_max_completion_tokens(server):
    c = server.client()
    r = c.chat.completions.create(model="m", messages=CHAT, max_completion_tokens=3, temperature=0)
    assert r.usage.completion_tokens <= 3
    if r.choices[0].finish_reason == "length":
        assert r.usage.completion_tokens == 3


def test_seeds_reproduce(server):
    c = server.client()
    def sample(seed):
        return c.completions.create(model="m", prompt="Once upon a time", max_tokens=24, temperature=1.0,
                                    seed=seed).choices[0].text
    a = sample(42)
    assert sample(42) == a
    assert sample(43) != a or sample(44) != a


def test_logprobs(server):
    c = server.client()
    r = c.chat.completions.create(model="m", messages=CHAT, max_tokens=6, temperature=0, logprobs=True, top_logprobs=3)
    content = r.choices[0].logprobs.content
    assert len(content) == r.usage.completion_tokens
    for t in content:
        assert t.logprob <= 0 and len(t.top_logprobs) == 3
        assert t.top_logprobs[0].token == t.token and abs(t.top_logprobs[0].logprob - t.logprob) < 1e-5
        assert t.top_logprobs[0].logprob >= t.top_logprobs[1].logprob >= t.top_logprobs[2].logprob
        assert bytes(t.bytes).decode("utf-8", "replace") == t.token
    legacy = c.completions.create(model="m", prompt="Hello", max_tokens=4, temperature=0, logprobs=2)
    lp = legacy.choices[0].logprobs
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == 4
    assert "".join(lp.tokens) == legacy.choices[0].text


@pytest.mark.parametrize("body, param", [
    ({"messages": CHAT, "temperature": "hot"}, "temperature"),
    ({"messages": CHAT, "temperature": 3}, "temperature"),
    ({"messages": CHAT, "max_tokens": -1}, "max_tokens"),
    ({"messages": CHAT, "max_tokens": 2 ** 63}, "max_tokens"),
    ({"messages": CHAT, "n": 2}, "n"),
    ({"messages": CHAT, "top_p": 0}, "top_p"),
    ({"messages": CHAT, "stop": 5}, "stop"),
    ({"messages": CHAT, "top_logprobs": 3}, "top_logprobs"),
    ({"messages": []}, "messages"),
    ({"messages": [{"role": "wizard", "content": "x"}]}, "messages"),
    ({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]}, "messages"),
    ({"messages": "hello"}, "messages"),
    ({}, "messages"),
])
def test_bad_fields_are_400_naming_the_field(server, body, param):
    r = httpx.post(server.url + "/v1/chat/completions", json=body)
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["type"] == "invalid_request_error" and err["param"] == param and err["message"]


def test_malformed_json_and_unknown_routes(server):
    r = httpx.post(server.url + "/v1/chat/completions", content=b'{"messages": [', headers={"content-type": "application/json"})
    assert r.status_code == 400 and "JSON" in r.json()["error"]["message"]
    r = httpx.post(server.url + "/v1/completions", content=b"\xff\xfe not json")
    assert r.status_code == 400
    r = httpx.get(server.url + "/v1/nothing")
    assert r.status_code == 404 and r.json()["error"]["type"] == "not_found_error"


def test_prompt_longer_than_the_context(server):
    with pytest.raises(openai.BadRequestError) as e:
        server.client().completions.create(model="m", prompt="word " * 2000, max_tokens=4)
    assert "context is 512" in str(e.value) and "tokens" in str(e.value)


def test_body_over_the_limit_is_413(server):
    r = httpx.post(server.url + "/v1/completions", json={"prompt": "x" * 100000})
    assert r.status_code == 413 and r.json()["error"]["type"] == "invalid_request_error"


def test_concurrent_requests_return_what_they_return_alone(server):
    c = server.client()
    # More requests than the server's 4 slots either way; fewer under ASan, where each costs ~3 s.
    prompts = [f"Write about the number {i}:" for i in range(12 if SANITIZED else 32)]
    def one(p):
        return c.completions.create(model="m", prompt=p, max_tokens=8, temperature=0).choices[0].text
    alone = [one(p) for p in prompts]
    with cf.ThreadPoolExecutor(32) as pool:
        together = list(pool.map(one, prompts))
    assert together == alone
    assert len(set(alone)) > 1


def test_a_disconnected_stream_frees_its_slot(server):
    before = server.metrics()
    with httpx.Client(timeout=60) as h:
        with h.stream("POST", server.url + "/v1/completions",
                      json={"prompt": "Tell a long story.", "max_tokens": 400, "temperature": 0, "stream": True}) as r:
            lines = 0
            for line in r.iter_lines():
                lines += line.startswith("data: ")
                if lines >= 3:
                    break  # the client goes away mid-stream
    cancelled = 'brisk_generations_total{finish_reason="cancelled"}'
    wait_for(lambda: server.metrics().get(cancelled, 0) > before.get(cancelled, 0), 60, "the cancellation")
    wait_for(lambda: server.metrics()["brisk_kv_slots_used"] == 0, 30, "the slot to be freed")
    wait_for(lambda: server.metrics()["brisk_kv_blocks_used"] == 0, 30, "the KV blocks to be freed")
    r = server.client().completions.create(model="m", prompt="Still there?", max_tokens=3, temperature=0)
    assert r.usage.completion_tokens == 3


def test_a_shared_system_prompt_is_prefilled_once(server):
    system = "You are a helpful assistant for a shop that sells " + ", ".join(f"item {i}" for i in range(40)) + "."
    c = server.client()
    before = server.metrics()
    def ask(question):
        return c.chat.completions.create(model="m", max_tokens=4, temperature=0, messages=[
            {"role": "system", "content": system}, {"role": "user", "content": question}])
    first, second = ask("What do you sell?"), ask("Do you sell item 7?")
    cached = second.usage.prompt_tokens_details.cached_tokens
    assert second.usage.prompt_tokens > 150
    assert cached >= 128 and cached % 16 == 0 and cached < second.usage.prompt_tokens
    after = server.metrics()
    assert after["brisk_prefix_cache_hits_total"] > before["brisk_prefix_cache_hits_total"]
    assert after["brisk_prefix_cache_hit_tokens_total"] - before["brisk_prefix_cache_hit_tokens_total"] >= cached
    assert after["brisk_kv_blocks_cached"] > 0
    # Asked again, the first question reuses its whole prompt but for the last block. (Its text
    # may differ from the first answer's in principle: the uncached prompt was prefilled in
    # one pass of over 64 tokens, which the CPU backend runs in float, not int8.)
    again, third = ask("What do you sell?"), ask("What do you sell?")
    assert again.usage.prompt_tokens_details.cached_tokens >= first.usage.prompt_tokens - 16
    assert again.choices[0].message.content == third.choices[0].message.content


def test_api_key_and_overload_and_shutdown():
    s = Server("--api-key", "sekret", "--parallel", "1", "--queue", "0", "--ctx", "256", model=default_model())
    try:
        with pytest.raises(openai.AuthenticationError):
            s.client(api_key="wrong").models.list()
        r = httpx.get(s.url + "/v1/models")
        assert r.status_code == 401 and r.json()["error"]["code"] == "invalid_api_key"
        assert httpx.get(s.url + "/health").status_code == 200  # health needs no key
        good = s.client(api_key="sekret")
        assert good.completions.create(model="m", prompt="Hi", max_tokens=2).usage.completion_tokens == 2

        # One slot, no queue: while a long request runs, another is turned away with 503.
        with cf.ThreadPoolExecutor(1) as pool:
            long = pool.submit(lambda: good.completions.create(model="m", prompt="Count:", max_tokens=150, temperature=0))
            wait_for(lambda: s.metrics()["brisk_running_sequences"] == 1, 30, "the long request to start")
            r = httpx.post(s.url + "/v1/completions", json={"prompt": "x", "max_tokens": 2},
                           headers={"Authorization": "Bearer sekret"})
            assert r.status_code == 503 and r.headers["retry-after"] == "1"
            assert r.json()["error"]["type"] == "overloaded_error"
            assert long.result().usage.completion_tokens == 150

        # SIGTERM mid-stream: the client gets an end, the server exits 0.
        with httpx.Client(timeout=60) as h:
            with h.stream("POST", s.url + "/v1/chat/completions", headers={"Authorization": "Bearer sekret"},
                          json={"messages": CHAT, "max_tokens": 400, "stream": True}) as r:
                seen = []
                for line in r.iter_lines():
                    if line.startswith("data: "):
                        seen.append(line)
                        if len(seen) == 2:
                            s.proc.send_signal(signal.SIGTERM)
                assert seen[-1] == "data: [DONE]" and "error" in seen[-2]
        assert s.proc.wait(30) == 0
    finally:
        s.stop()
