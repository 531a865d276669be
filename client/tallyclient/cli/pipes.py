"""``tally … | head -1``: a reader that stops early ends the command quietly.

Python ignores SIGPIPE, so a write to a closed pipe raises BrokenPipeError, and
without care a traceback follows (at the failed write, or when the interpreter
flushes stdout on its way out).  The recipe of Python's ``signal`` documentation:
flush inside the handler, and on a broken pipe point stdout at ``/dev/null`` so the
final flush has nowhere to fail, then exit as a command ended by SIGPIPE would.
"""

from __future__ import annotations

import functools
import os
import signal
import sys
from collections.abc import Callable
from typing import ParamSpec

# What a shell reports for a command that SIGPIPE ended (128 + the signal's number).
EXIT_BROKEN_PIPE = 128 + signal.SIGPIPE

_Args = ParamSpec("_Args")


def quiet_on_broken_pipe(main: Callable[_Args, int]) -> Callable[_Args, int]:
    """``main`` with its output flushed, and a reader gone ending it without a word."""

    @functools.wraps(main)
    def wrapper(*args: _Args.args, **kwargs: _Args.kwargs) -> int:
        try:
            code = main(*args, **kwargs)
            sys.stdout.flush()
        except BrokenPipeError:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            return EXIT_BROKEN_PIPE
        return code

    return wrapper
