"""One ``ast.parse`` at a time in a test process, and none re-entered from a collection
(CPython 3.11's AST depth counter, python/cpython#106905).

CPython 3.11 tracks the depth of the AST it is building in state shared by the whole
interpreter, reset at the start of each ``ast.parse``.  A second parse that starts
while one is building its tree, in another thread or from a finalizer the garbage
collector runs in the middle of the first, leaves the first with a count that does not
match and fails it with ``SystemError: AST constructor recursion depth mismatch``.
Tests meet both: werkzeug compiles each URL rule with ``ast.parse`` while
``create_app`` registers the routes, and 3.11's ``traceback`` parses the failing line
to place its carets whenever something logs an exception, such as SQLAlchemy's pool
when it collects a connection whose database a test already dropped.  So in a test
process ``ast.parse`` holds a lock and parses with the collector paused (it collects
again after).  The served processes are not patched: each builds its app once, before
it serves, and holds no connection of a dropped database.
"""

from __future__ import annotations

import ast
import gc
import threading
from typing import Any

_LOCK = threading.RLock()
_parse = ast.parse


def _parse_one_at_a_time(*args: Any, **kwargs: Any) -> Any:
    with _LOCK:
        collecting = gc.isenabled()
        gc.disable()  # no finalizer, hence no other parse, in the middle of this one
        try:
            return _parse(*args, **kwargs)
        finally:
            if collecting:
                gc.enable()


def install() -> None:
    if ast.parse is not _parse_one_at_a_time:
        ast.parse = _parse_one_at_a_time  # type: ignore[assignment]
