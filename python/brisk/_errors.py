"""brisk's exceptions: one class per error code of the C++ engine (brisk/error.hpp, whose
error_code_name() gives the codes).

Every error carries the engine's message and, where it concerns one, the field or file
position (``where``). Bad arguments are also ``ValueError``s, so callers that catch the
standard exception keep working."""


class BriskError(RuntimeError):
    """An error reported by the engine."""

    code = "error"

    def __init__(self, message, where=""):
        super().__init__(message)
        self.message = message
        self.where = where

    def __str__(self):
        return "%s (%s)" % (self.message, self.where) if self.where else self.message


class InvalidArgument(BriskError, ValueError):
    code = "invalid argument"


class IoError(BriskError, OSError):
    code = "I/O error"


class FormatError(BriskError):
    """A malformed file: truncated, bad magic, inconsistent sizes."""

    code = "format error"


class Unsupported(BriskError):
    """Well formed, but not something brisk handles (a dtype, an architecture, a GPU)."""

    code = "unsupported"


class LimitExceeded(BriskError):
    """A resource cap: a string length, a tensor count, the context, a full queue."""

    code = "limit exceeded"


class InternalError(BriskError):
    code = "internal error"


_BY_CODE = {c.code: c for c in (InvalidArgument, IoError, FormatError, Unsupported, LimitExceeded, InternalError)}


def from_code(code, message, where):
    """The exception for an engine error code (called by the extension)."""
    return _BY_CODE.get(code, BriskError)(message, where)

for _cls in (BriskError, *_BY_CODE.values()):
    _cls.__module__ = "brisk"  # shown as brisk.InvalidArgument in tracebacks
