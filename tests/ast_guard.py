"""One ``ast.parse`` at a time in a test process (CPython 3.11's ast bug, gh-106905).

CPython 3.11 tracks the depth of the AST it is building in state shared by every thread
of the interpreter, so two threads in ``ast.parse`` at once can make one of them fail
with ``SystemError: AST constructor recursion depth mismatch``.  A test process has
such pairs: werkzeug compiles each URL rule with ``ast.parse`` while ``create_app``
registers the routes, and Python 3.11's ``traceback`` parses the failing line to place
its carets whenever a background thread logs an exception (a server thread, a pool's
connection reset at teardown).  The suite failed on it twice in 3,000 tests; it is not
Tally's code, so the tests serialise ``ast.parse`` rather than retry.  The served
processes are not patched: each builds its app once, before its threads start.
"""

from __future__ import annotations

import ast
import threading
from typing import Any

_LOCK = threading.RLock()  # re-entrant: a collection inside a parse may format a traceback
_parse = ast.parse


def _parse_one_at_a_time(*args: Any, **kwargs: Any) -> Any:
    with _LOCK:
        return _parse(*args, **kwargs)


def install() -> None:
    if ast.parse is not _parse_one_at_a_time:
        ast.parse = _parse_one_at_a_time  # type: ignore[assignment]
