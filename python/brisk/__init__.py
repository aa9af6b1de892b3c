"""brisk: a fast LLM inference engine (C++20 and CUDA) for GGUF and Hugging Face checkpoints.

    import brisk
    llm = brisk.LLM("model.gguf")                       # device="auto": the GPU when one works
    print(llm.generate("The capital of France is", brisk.SamplingParams(max_tokens=8))[0].text)

`brisk` on the command line (run, chat, serve, bench, ...) is the same engine;
`python -m brisk doctor` checks the devices and runs a real kernel on each.
"""

from . import _libs

_libs.preload()

from ._brisk import chat_template_names, device_report  # noqa: E402
from ._errors import (BriskError, FormatError, InternalError, InvalidArgument, IoError,  # noqa: E402
                      LimitExceeded, Unsupported)
from ._llm import LLM, ChatCompletion, Completion, SamplingParams, Stream, ToolCall  # noqa: E402

__version__ = "0.1.0"

__all__ = ["LLM", "SamplingParams", "Completion", "ChatCompletion", "ToolCall", "Stream", "BriskError",
           "InvalidArgument", "IoError", "FormatError", "Unsupported", "LimitExceeded", "InternalError",
           "device_report", "chat_template_names", "__version__"]
