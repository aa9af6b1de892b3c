"""brisk.LLM: a model on a device with its engine, for Python programs.

    llm = brisk.LLM("model.gguf")                       # the GPU when one works, else the CPU
    outs = llm.generate(["The capital of France is"], brisk.SamplingParams(max_tokens=16))
    for piece in llm.stream("Once upon a time"): print(piece, end="")
    answer = llm.chat([{"role": "user", "content": "Hi"}])

Every call may come from any number of Python threads at once: the engine batches them
(continuous batching), and the GIL is released while it works.
"""

import json
import time
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Sequence, Union

from . import _brisk
from ._errors import InvalidArgument, LimitExceeded

# How long one wait lasts with the GIL released before Python looks at signals again.
_POLL_SECONDS = 0.05


@dataclass
class SamplingParams:
    """How to pick tokens and when to stop (vLLM's names and defaults)."""

    max_tokens: int = 16
    temperature: float = 1.0  # 0: greedy
    top_p: float = 1.0
    top_k: int = 0  # 0 or -1: off
    min_p: float = 0.0
    repetition_penalty: float = 1.0
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    seed: Optional[int] = None
    stop: Union[str, Sequence[str], None] = None
    ignore_eos: bool = False
    logprobs: Optional[int] = None  # alternatives per token (0..20); None: off
    logit_bias: Optional[Dict[int, float]] = None
    # Structured output (at most one): the text is a sentence of this. A JSON schema (a dict
    # or its text), a regex, one of the choices, or a GBNF grammar (llama.cpp's syntax).
    json_schema: Union[dict, str, None] = None
    regex: Optional[str] = None
    choice: Optional[Sequence[str]] = None
    grammar: Optional[str] = None

    def _options(self) -> "_brisk.GenerateOptions":
        o = _brisk.GenerateOptions()
        if not isinstance(self.max_tokens, int) or self.max_tokens < 1:
            raise InvalidArgument("max_tokens must be a positive integer", "max_tokens")
        o.max_tokens = self.max_tokens
        s = o.sampling
        s.temperature = float(self.temperature)
        s.top_p = float(self.top_p)
        s.top_k = max(0, int(self.top_k))
        s.min_p = float(self.min_p)
        s.repeat_penalty = float(self.repetition_penalty)
        s.presence_penalty = float(self.presence_penalty)
        s.frequency_penalty = float(self.frequency_penalty)
        penalised = self.repetition_penalty != 1.0 or self.presence_penalty != 0.0 or self.frequency_penalty != 0.0
        s.repeat_last_n = -1 if penalised else 0
        s.seed = self.seed
        if self.logit_bias:
            s.logit_bias = [(int(k), float(v)) for k, v in self.logit_bias.items()]
        o.sampling = s
        o.stop = [self.stop] if isinstance(self.stop, str) else list(self.stop or [])
        o.ignore_eos = bool(self.ignore_eos)
        o.logprobs = -1 if self.logprobs is None else int(self.logprobs)
        o.constraint = self._constraint()
        return o

    def _constraint(self) -> "_brisk.OutputConstraint":
        given = [(k, v) for k, v in (("json_schema", self.json_schema), ("regex", self.regex),
                                     ("choice", self.choice), ("grammar", self.grammar)) if v is not None]
        c = _brisk.OutputConstraint()
        if len(given) > 1:
            raise InvalidArgument("give one of json_schema, regex, choice and grammar", given[1][0])
        if not given:
            return c
        kind, value = given[0]
        if kind == "json_schema":
            c.kind = _brisk.ConstraintKind.JSON_SCHEMA
            c.text = value if isinstance(value, str) else json.dumps(value)
        elif kind == "choice":
            if isinstance(value, str) or not all(isinstance(x, str) for x in value):
                raise InvalidArgument("choice is a list of strings", "choice")
            c.kind = _brisk.ConstraintKind.CHOICE
            c.choices = list(value)
        else:
            c.kind = _brisk.ConstraintKind.REGEX if kind == "regex" else _brisk.ConstraintKind.GBNF
            c.text = value
        return c


@dataclass
class Completion:
    """A finished request."""

    text: str
    token_ids: List[int]
    finish_reason: str  # "stop", "length", "cancelled" or "error"
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int = 0
    ttft_seconds: float = 0.0
    total_seconds: float = 0.0
    error: str = ""
    # With SamplingParams.logprobs: per token (id, logprob, [(id, logprob) of the alternatives]).
    logprobs: Optional[list] = None


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: str  # JSON text, as the model wrote it

    def parsed_arguments(self) -> Any:
        return json.loads(self.arguments)


@dataclass
class ChatCompletion(Completion):
    """A chat answer read with the template's syntax (OpenAI's message fields)."""

    content: str = ""
    reasoning_content: str = ""
    tool_calls: List[ToolCall] = field(default_factory=list)


class Stream:
    """The text pieces of one request as they are generated; iterate it, or cancel() it from
    any thread. Closing it (or leaving a for-loop over it early) cancels the request."""

    def __init__(self, request, with_logprobs=False):
        self._request = request
        self._with_logprobs = with_logprobs
        self._done = False

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        while not self._done:
            got, piece = self._request.wait_piece(_POLL_SECONDS)
            if got == 1:
                return piece
            if got == 2:
                self._done = True
        raise StopIteration

    def cancel(self) -> None:
        self._request.cancel()

    def close(self) -> None:
        if not self._done:
            self.cancel()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def completion(self) -> Completion:
        """The whole request once it has ended (waits for the end)."""
        _wait(self._request)
        return _completion(self._request, with_logprobs=self._with_logprobs)


def _wait(request) -> None:
    try:
        while not request.wait_done(_POLL_SECONDS):
            pass
    except BaseException:  # KeyboardInterrupt: the request ends with it
        request.cancel()
        raise


def _completion(request, cls=Completion, with_logprobs=False, **extra) -> Completion:
    r = request.result()
    logprobs = [(i, l, list(top)) for i, l, top in request.logprobs()] if with_logprobs else None
    return cls(text=request.text(), token_ids=list(request.token_ids()), finish_reason=r["finish_reason"],
               prompt_tokens=r["prompt_tokens"], completion_tokens=r["completion_tokens"],
               cached_tokens=r["cached_tokens"], ttft_seconds=r["ttft_seconds"], total_seconds=r["total_seconds"],
               error=r["error"], logprobs=logprobs, **extra)


def _constraint(response_format) -> "_brisk.OutputConstraint":
    """OpenAI's response_format ({"type": "json_object"} or {"type": "json_schema", ...})."""
    c = _brisk.OutputConstraint()
    if response_format is None:
        return c
    if hasattr(response_format, "model_json_schema"):  # a Pydantic model class
        response_format = {"type": "json_schema",
                           "json_schema": {"name": response_format.__name__,
                                           "schema": response_format.model_json_schema(), "strict": True}}
    if not isinstance(response_format, dict) or "type" not in response_format:
        raise InvalidArgument("response_format must be {'type': 'text' | 'json_object' | 'json_schema', ...}",
                              "response_format")
    kind = response_format["type"]
    if kind == "text":
        return c
    if kind == "json_object":
        c.kind = _brisk.ConstraintKind.JSON_OBJECT
        return c
    if kind == "json_schema":
        spec = response_format.get("json_schema")
        if not isinstance(spec, dict) or not isinstance(spec.get("schema"), dict):
            raise InvalidArgument("response_format json_schema needs {'name': ..., 'schema': {...}}", "response_format")
        c.kind = _brisk.ConstraintKind.JSON_SCHEMA
        c.text = json.dumps(spec["schema"])
        c.strict = bool(spec.get("strict", True))
        return c
    raise InvalidArgument("unknown response_format type '%s'" % kind, "response_format")


class LLM:
    """A model loaded on a device, and the engine that batches every request given to it.

    device: "auto" (the first working GPU, else the CPU), "cpu", "cuda" or "cuda:N".
    parallel: sequences decoded together; context: positions per sequence (0: the model's,
    at most 4096); threads: CPU threads (0: one per core); exact: float32 everywhere.
    """

    def __init__(self, model: str, device: str = "auto", *, parallel: int = 16, context: int = 0,
                 threads: int = 0, exact: bool = False, chat_template: str = "", max_queue: int = 1024,
                 kv_memory: int = 0):
        load = _brisk.LoadOptions()
        load.device = device
        load.threads = threads
        load.exact = exact
        load.chat_template = chat_template
        opts = _brisk.EngineOptions()
        opts.parallel = parallel
        opts.context = context
        opts.max_queue = max_queue
        opts.kv_memory = kv_memory
        self._closed = False
        self._engine = _brisk.Engine(str(model), load, opts)
        self.info = self._engine.model_info()

    # --- text <-> tokens -------------------------------------------------------------
    def tokenize(self, text: str, add_special: bool = True, parse_special: bool = True) -> List[int]:
        return list(self._engine.tokenize(text, add_special, parse_special))

    def detokenize(self, ids: Sequence[int]) -> str:
        return self._engine.detokenize(list(ids)).decode("utf-8", errors="replace")

    # --- requests --------------------------------------------------------------------
    def _prompt_ids(self, prompt) -> List[int]:
        if isinstance(prompt, str):
            if not prompt:
                raise InvalidArgument("the prompt is empty", "prompt")
            return self.tokenize(prompt)
        ids = list(prompt)
        if not ids or not all(isinstance(i, int) for i in ids):
            raise InvalidArgument("a prompt is a string or a non-empty list of token ids", "prompt")
        return ids

    def _submit(self, ids: List[int], options) -> Any:
        """Queues a request, waiting while the engine's queue is full."""
        while True:
            if self._closed:
                raise LimitExceeded("the engine is shut down (LLM.close())")
            request = self._engine.submit(ids, options)
            if request is not None:
                return request
            time.sleep(_POLL_SECONDS)

    def submit(self, prompt, params: Optional[SamplingParams] = None) -> Stream:
        """Queues one prompt (text or token ids) and returns its Stream at once."""
        options = (params or SamplingParams())._options()
        return Stream(self._submit(self._prompt_ids(prompt), options), options.logprobs >= 0)

    def generate(self, prompts, params: Optional[SamplingParams] = None) -> List[Completion]:
        """Completes each prompt (a string, token ids, or a list of them), batched together."""
        if isinstance(prompts, str) or (isinstance(prompts, list) and prompts and isinstance(prompts[0], int)):
            prompts = [prompts]
        options = (params or SamplingParams())._options()
        ids = [self._prompt_ids(p) for p in prompts]  # every prompt checked before any runs
        requests = []
        try:
            for i in ids:
                requests.append(self._submit(i, options))
            for r in requests:
                _wait(r)
        except BaseException:
            for r in requests:
                r.cancel()
            raise
        return [_completion(r, with_logprobs=options.logprobs >= 0) for r in requests]

    def stream(self, prompt, params: Optional[SamplingParams] = None) -> Stream:
        """The text of one prompt (or chat messages: a list of {"role", "content"}) as it comes."""
        if isinstance(prompt, list) and prompt and isinstance(prompt[0], dict):
            return self._chat_request(prompt, params)[0]
        return self.submit(prompt, params)

    def chat(self, messages: List[dict], params: Optional[SamplingParams] = None, *, tools: Optional[list] = None,
             tool_choice: Union[str, dict] = "auto", parallel_tool_calls: bool = True, response_format=None,
             chat_template_kwargs: Optional[dict] = None) -> ChatCompletion:
        """Answers OpenAI-style chat messages with the model's chat template: content, the
        reasoning of a thinking model, and tool calls (tools and tool_choice as OpenAI's)."""
        stream, tool_names, reasoning_open = self._chat_request(messages, params, tools, tool_choice,
                                                                parallel_tool_calls, response_format,
                                                                chat_template_kwargs)
        _wait(stream._request)
        text = stream._request.text()
        parsed = {"content": text, "reasoning": "", "tool_calls": []}
        fmt = self._engine.chat_format()
        if tool_names or fmt.reasoning:
            parsed = _brisk.parse_chat(fmt, tool_names, reasoning_open, text)
        calls = [ToolCall(i, n, a) for i, n, a in parsed["tool_calls"]]
        out = _completion(stream._request, ChatCompletion, stream._with_logprobs, content=parsed["content"],
                          reasoning_content=parsed["reasoning"], tool_calls=calls)
        if calls and out.finish_reason == "stop":
            out.finish_reason = "tool_calls"
        return out

    def _chat_request(self, messages, params, tools=None, tool_choice="auto", parallel_tool_calls=True,
                      response_format=None, chat_template_kwargs=None):
        if not isinstance(messages, list) or not messages:
            raise InvalidArgument("messages must be a non-empty list of {'role', 'content'}", "messages")
        extra = dict(chat_template_kwargs or {})
        options = (params or SamplingParams())._options()
        if response_format is not None:
            if options.constraint.kind != _brisk.ConstraintKind.NONE:
                raise InvalidArgument("response_format and a constraint in SamplingParams cannot be combined",
                                      "response_format")
            options.constraint = _constraint(response_format)
        tool_names = []
        if tools and tool_choice != "none":
            extra["tools"] = tools
            tool_names = [t["function"]["name"] for t in tools]
            forced = _forced_function(tool_choice, tool_names)
            if forced is not None:
                if options.constraint.kind != _brisk.ConstraintKind.NONE:
                    raise InvalidArgument("a required or named tool_choice cannot be combined with response_format",
                                          "tool_choice")
                options.constraint = self._engine.tool_call_constraint(json.dumps(tools), forced,
                                                                       bool(parallel_tool_calls))
        prompt = self._engine.render_chat(json.dumps(messages), json.dumps(extra))
        reasoning_open = _brisk.prompt_opens_reasoning(self._engine.chat_format(), prompt)
        ids = self.tokenize(prompt, add_special=False, parse_special=True)
        return Stream(self._submit(ids, options), options.logprobs >= 0), tool_names, reasoning_open

    # --- the engine --------------------------------------------------------------------
    def stats(self) -> dict:
        return self._engine.stats()

    def close(self, drain: bool = False) -> None:
        """Stops the engine: running requests finish (drain) or are cancelled."""
        self._closed = True
        self._engine.shutdown(drain)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _forced_function(tool_choice, names) -> Optional[str]:
    """The function a tool_choice forces ("" for any of them), or None for "auto"."""
    if tool_choice == "auto":
        return None
    if tool_choice == "required":
        return ""
    if isinstance(tool_choice, dict) and isinstance(tool_choice.get("function"), dict):
        name = tool_choice["function"].get("name")
        if name not in names:
            raise InvalidArgument("tool_choice names '%s', which is not among the tools" % name, "tool_choice")
        return name
    raise InvalidArgument("tool_choice must be 'auto', 'none', 'required' or {'type': 'function', 'function': {'name': ...}}",
                          "tool_choice")
