"""Compact JSON text of a value that JSON can hold exactly, fast.

orjson is several times faster than the standard library, but it writes NaN and
infinity as null, cannot write an integer beyond 64 bits or a key that is not a
string, and writes types the standard library refuses.  Whatever orjson wrote as
null, could not write or would write differently is written by the standard
library instead, which refuses a non-finite number.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

# Types orjson writes but the standard library refuses: left to the standard library.
_STRICT = (orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
           | orjson.OPT_PASSTHROUGH_SUBCLASS)


def dumps_finite(value: Any, *, ensure_ascii: bool = True) -> str:
    """``value`` as compact JSON.  Raises ValueError for a non-finite number and
    TypeError for what is not JSON data (as ``json.dumps(allow_nan=False)``).

    ``ensure_ascii`` applies to the standard library's text only: it escapes a
    lone surrogate instead of leaving it for a UTF-8 encoder to refuse (orjson
    refuses one itself, so such a value always takes the standard library's way).
    """
    try:
        encoded = orjson.dumps(value, option=_STRICT)
    except orjson.JSONEncodeError:
        encoded = b"null"
    if b"null" not in encoded:
        return encoded.decode()
    return json.dumps(value, allow_nan=False, ensure_ascii=ensure_ascii, separators=(",", ":"))
