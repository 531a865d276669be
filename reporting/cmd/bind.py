"""``[api] bind``: parsed and tried at start, so a bad value is one line naming it.

gunicorn itself would retry an unusable address five times with a misleading
"connection failed" and exit 1; a value without a port would listen on gunicorn's
8000 instead of Tally's 8779.
"""

from __future__ import annotations

import errno
import socket

from reporting.cmd import ConfigError
from tally_common.digits import ascii_digits

DEFAULT_PORT = 8779
EXAMPLES = "e.g. 127.0.0.1:8779, [::1]:8779 or 0.0.0.0:8779"


def parse_bind(value: str) -> tuple[str, int]:
    """``HOST:PORT``, ``[IPv6]:PORT`` or a bare host (port 8779) -> (host, port)."""
    text = (value or "").strip()
    where = f"[api] bind {value!r}"
    if text.startswith("["):
        host, bracket, rest = text[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            raise ConfigError(f"{where} is not HOST:PORT ({EXAMPLES})")
        port_text = rest[1:] if rest else str(DEFAULT_PORT)
    elif text.count(":") > 1:
        raise ConfigError(f"{where}: an IPv6 address needs brackets, e.g. [::1]:8779")
    else:
        host, colon, port_text = text.partition(":")
        if not colon:
            port_text = str(DEFAULT_PORT)
    if not host or any(char.isspace() or char in ";,/" for char in host):
        raise ConfigError(f"{where} is not HOST:PORT ({EXAMPLES})")
    if not ascii_digits(port_text) or not 0 <= int(port_text) <= 65535:
        raise ConfigError(f"{where}: the port must be a number from 0 to 65535 ({EXAMPLES})")
    return host, int(port_text)


def format_bind(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def check_bind(value: str) -> str:
    """Parse ``value`` and try to listen on it (as gunicorn will, with SO_REUSEADDR);
    returns the address gunicorn gets.  Any failure is a ConfigError naming the option."""
    host, port = parse_bind(value)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise ConfigError(f"[api] bind {value!r}: unknown host {host!r} ({exc.strerror})") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
            probe.listen(1)
        except OSError as exc:
            why = "address already in use" if exc.errno == errno.EADDRINUSE else exc.strerror
            raise ConfigError(f"[api] bind {value!r}: cannot listen there: {why}") from None
    return format_bind(host, port)
