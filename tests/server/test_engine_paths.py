"""The engine behind `brisk serve`, through the official openai client on the real Gemma 3
270M (CPU): logit_bias bans and favours tokens; a KV pool far smaller than the concurrent
requests need preempts and recomputes sequences without changing a byte of any answer;
and `brisk run` gives exactly the tokens `brisk serve` gives for the same sampled request
(one generation path, one sampler)."""
import concurrent.futures as cf
import subprocess

import pytest

from conftest import BRISK, Server, default_model

FAVOURED = 1234  # any ordinary token id of the 262k vocabulary


@pytest.fixture(scope="module")
def small_pool():
    # 8 blocks of 16 positions; four chats without max_tokens run to their EOS or to the
    # context of 96 positions: up to 24 blocks together (3x the pool), one alone 6 at most.
    s = Server("--parallel", "4", "--ctx", "96", "--kv-blocks", "8", "--kv-block", "16", model=default_model())
    yield s
    assert s.stop() == 0


def test_logit_bias_favours_and_bans(server):
    c = server.client()
    favoured = c.completions.create(model="m", prompt="The capital of France is", max_tokens=5, temperature=0,
                                    logit_bias={str(FAVOURED): 100}).choices[0].text
    piece = favoured[: len(favoured) // 5]
    assert piece and favoured == piece * 5, favoured
    # A prompt of that token repeated invites the model to repeat it; banned, it never does.
    ids = [2] + [FAVOURED] * 24
    plain = c.completions.create(model="m", prompt=ids, max_tokens=8, temperature=0).choices[0].text
    banned = c.completions.create(model="m", prompt=ids, max_tokens=8, temperature=0,
                                  logit_bias={str(FAVOURED): -100}).choices[0].text
    sampled = c.completions.create(model="m", prompt=ids, max_tokens=8, temperature=1.0, seed=3,
                                   logit_bias={str(FAVOURED): -100}).choices[0].text
    assert plain != banned
    for text in (banned, sampled):
        assert not text.startswith(piece), text


def chat(client, i):
    r = client.chat.completions.create(
        model="m", temperature=0,
        messages=[{"role": "user", "content": f"Write a short story about robot number {i}, who likes {i * 7} apples."}])
    return r.choices[0].message.content, r.choices[0].finish_reason


def test_preemption_changes_no_answer(small_pool):
    c = small_pool.client()
    alone = [chat(c, i) for i in range(4)]  # one at a time: the pool holds one sequence easily
    assert small_pool.metrics()["brisk_preemptions_total"] == 0
    with cf.ThreadPoolExecutor(4) as pool:
        together = list(pool.map(lambda i: chat(c, i), range(4)))
    assert together == alone
    m = small_pool.metrics()
    assert m["brisk_preemptions_total"] > 0, "the pool was meant to run dry"
    assert m["brisk_kv_blocks_used"] == 0 and m["brisk_running_sequences"] == 0


@pytest.mark.parametrize("seed", [1, 7, 1234])
def test_run_and_serve_give_the_same_tokens(server, seed):
    prompt = "Once upon a time, in a quiet village,"
    out = subprocess.run([str(BRISK), "run", "--device", "cpu", "-t", "2", "-p", prompt, "-n", "24", "--seed", str(seed),
                          "--temp", "0.8", "--top-p", "0.9", "--top-k", "0", "--min-p", "0", "--repeat-penalty", "1.3",
                          "--repeat-last-n", "-1", "--ignore-eos"],
                         capture_output=True, text=True, timeout=300, check=True).stdout
    assert out.startswith(prompt)
    ran = out[len(prompt):].removesuffix("\n")
    served = server.client().completions.create(model="m", prompt=prompt, max_tokens=24, temperature=0.8, top_p=0.9,
                                                seed=seed, extra_body={"repetition_penalty": 1.3, "ignore_eos": True})
    assert served.choices[0].text == ran
