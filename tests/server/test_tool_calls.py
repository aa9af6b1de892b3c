"""Tool calls and reasoning content through the openai client against `brisk serve`: the real
Gemma 3 270M (its template knows no tools, so brisk's Hermes preamble describes them) and
synthetic Qwen2.5 (Hermes), Llama 3 (JSON calls) and Qwen3 (Hermes + thinking) models with
those built-in templates. tool_choice named and required constrain the answer to calls, so
they must parse into valid tool_calls; streamed deltas must put together exactly what the
whole answer holds; a full round trip with a tool message; reasoning split from content."""
import json
import subprocess

import jsonschema
import pytest

from conftest import BRISK, SANITIZED, Server

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20},
                                                    "unit": {"enum": ["celsius", "fahrenheit"]}},
                   "required": ["city", "unit"]}}}
SEARCH = {"type": "function", "function": {
    "name": "search", "description": "Search the web",
    "parameters": {"type": "object", "properties": {"query": {"type": "string", "maxLength": 30},
                                                    "limit": {"type": "integer"}}, "required": ["query"]}}}
TOOLS = [WEATHER, SEARCH]
SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
ASK = [{"role": "user", "content": "What is the weather in Paris, and what is new in science?"}]


# Under the sanitizers (several times slower; the 270M model takes a minute a test there) the
# small synthetic models of both syntaxes only.
FAMILIES = ["qwen3", "llama3"] if SANITIZED else ["gemma3", "qwen2.5", "llama3", "qwen3"]


@pytest.fixture(scope="module", params=FAMILIES)
def chat_server(request, tmp_path_factory):
    if request.param == "gemma3":
        from conftest import default_model
        s = Server("--parallel", "2", "--ctx", "1024", model=default_model())
    else:
        arch = {"qwen2.5": "qwen2", "llama3": "llama", "qwen3": "qwen3"}[request.param]
        path = tmp_path_factory.mktemp("models") / f"{arch}.gguf"
        subprocess.run([str(BRISK), "gen-model", "--arch", arch, "--size", "small", "--dtype", "q8_0", "--seed", "3",
                        str(path)], check=True, stdout=subprocess.DEVNULL)
        s = Server("--parallel", "2", "--ctx", "2048", "--chat-template", request.param, model=path)
    s.family = request.param
    yield s
    assert s.stop() == 0, "".join(s.log)


def check_calls(calls, names=None):
    assert calls, "no tool calls"
    for c in calls:
        assert c.type == "function" and c.id.startswith("call_")
        assert c.function.name in (names or SCHEMAS)
        jsonschema.validate(json.loads(c.function.arguments), SCHEMAS[c.function.name])
    assert len({c.id for c in calls}) == len(calls)


def ask(server, stream=False, **kw):
    args = dict(model="m", messages=ASK, tools=TOOLS, max_tokens=160, temperature=0, seed=1)
    args.update(kw)
    client = server.client()
    if not stream:
        return client.chat.completions.create(**args)
    return reassemble(client.chat.completions.create(stream=True, **args))


def reassemble(chunks):
    """The streamed deltas put together as the openai client's users do, checking OpenAI's
    shape: a call's index, id and name come first, then only argument fragments."""
    content, reasoning, calls, finish = "", "", [], None
    for chunk in chunks:
        if not chunk.choices:
            continue
        ch = chunk.choices[0]
        d = ch.delta
        content += d.content or ""
        reasoning += getattr(d, "reasoning_content", None) or (d.model_extra or {}).get("reasoning_content") or ""
        for tc in d.tool_calls or []:
            if tc.index == len(calls):
                assert tc.id and tc.function.name and tc.type == "function", tc
                calls.append({"id": tc.id, "name": tc.function.name, "arguments": tc.function.arguments or ""})
            else:
                assert tc.index == len(calls) - 1 and tc.id is None and tc.function.name is None, tc
                calls[-1]["arguments"] += tc.function.arguments
        finish = ch.finish_reason or finish
    return content, reasoning, calls, finish


def test_named_function_is_called(chat_server):
    r = ask(chat_server, tool_choice={"type": "function", "function": {"name": "search"}})
    m = r.choices[0].message
    if r.choices[0].finish_reason == "length":
        pytest.skip("the answer ran past max_tokens")
    assert r.choices[0].finish_reason == "tool_calls"
    assert len(m.tool_calls) == 1 and m.content is None
    check_calls(m.tool_calls, ["search"])


@pytest.mark.parametrize("parallel", [True, False])
def test_required_calls_any_tool(chat_server, parallel):
    r = ask(chat_server, tool_choice="required", parallel_tool_calls=parallel, max_tokens=300)
    assert r.choices[0].finish_reason in ("tool_calls", "length")
    if r.choices[0].finish_reason == "tool_calls":
        check_calls(r.choices[0].message.tool_calls)
        if not parallel:
            assert len(r.choices[0].message.tool_calls) == 1


@pytest.mark.parametrize("choice", ["required", {"type": "function", "function": {"name": "get_weather"}}, "auto"])
def test_streamed_calls_equal_the_whole_answer(chat_server, choice):
    whole = ask(chat_server, tool_choice=choice)
    content, _, calls, finish = ask(chat_server, stream=True, tool_choice=choice)
    m = whole.choices[0].message
    assert finish == whole.choices[0].finish_reason
    assert content == (m.content or "")
    assert [(c["name"], c["arguments"]) for c in calls] == [(c.function.name, c.function.arguments) for c in m.tool_calls or []]


def test_round_trip_with_a_tool_message(chat_server):
    first = ask(chat_server, tool_choice={"type": "function", "function": {"name": "get_weather"}})
    if first.choices[0].finish_reason == "length":
        pytest.skip("the call ran past max_tokens")
    call = first.choices[0].message.tool_calls[0]
    history = ASK + [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": call.id, "type": "function", "function": {"name": call.function.name, "arguments": call.function.arguments}}]},
        {"role": "tool", "tool_call_id": call.id, "content": json.dumps({"temperature": 18, "sky": "clear"})}]
    again = ask(chat_server, messages=history, tool_choice={"type": "function", "function": {"name": "search"}})
    assert again.choices[0].finish_reason in ("tool_calls", "length")
    if again.choices[0].finish_reason == "tool_calls":
        check_calls(again.choices[0].message.tool_calls, ["search"])
    # The tool result reached the prompt: it is longer than the question alone.
    assert again.usage.prompt_tokens > first.usage.prompt_tokens
    plain = ask(chat_server, messages=history, tool_choice="none", max_tokens=8)
    assert plain.choices[0].message.tool_calls is None


def test_a_call_written_freely_is_parsed(chat_server):
    """tool_choice auto: a call in the family's syntax (forced here with guided_choice, as a
    model would write it) is a tool call; the text before it is the content."""
    args = '{"city": "Oslo", "unit": "celsius"}'
    if chat_server.family == "llama3":
        text = '{"name": "get_weather", "parameters": ' + args + "}"
    else:
        text = 'Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": ' + args + "}\n</tool_call>"
    for stream in (False, True):
        r = ask(chat_server, stream=stream, extra_body={"guided_choice": [text]})
        content, _, calls, finish = r if stream else (
            r.choices[0].message.content or "", None,
            [{"name": c.function.name, "arguments": c.function.arguments} for c in r.choices[0].message.tool_calls or []],
            r.choices[0].finish_reason)
        assert finish == "tool_calls"
        assert [(c["name"], c["arguments"]) for c in calls] == [("get_weather", args)]
        assert content == ("" if chat_server.family == "llama3" else "Let me check.")
    # Without tools the same text is content.
    r = ask(chat_server, tools=None, extra_body={"guided_choice": [text]})
    assert r.choices[0].message.content == text and r.choices[0].message.tool_calls is None


def test_reasoning_content(chat_server):
    text = "<think>\nThe user wants a greeting.\n</think>\n\nHello!"
    for stream in (False, True):
        r = ask(chat_server, stream=stream, tools=None, extra_body={"guided_choice": [text]})
        if stream:
            content, reasoning, _, _ = r
        else:
            m = r.choices[0].message
            content, reasoning = m.content, (m.model_extra or {}).get("reasoning_content")
        if chat_server.family == "qwen3":
            assert (reasoning, content) == ("The user wants a greeting.", "Hello!")
        else:
            assert content == text and not reasoning


def test_chat_template_kwargs_reach_the_template(chat_server):
    on = ask(chat_server, tools=None, max_tokens=1)
    off = ask(chat_server, tools=None, max_tokens=1, extra_body={"chat_template_kwargs": {"enable_thinking": False}})
    if chat_server.family == "qwen3":  # the template pre-fills an empty think block
        assert off.usage.prompt_tokens > on.usage.prompt_tokens
    else:
        assert off.usage.prompt_tokens == on.usage.prompt_tokens
