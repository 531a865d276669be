"""The simulated cloud's listening socket, opened before anything else is built.

werkzeug, left to bind itself, prints three lines of its own and exits with status 1
on an address in use; ``tally-simcloud serve`` opens the socket here first (a
standard-library import only), so a bad ``--bind`` is one line and exit status 2.
"""

from __future__ import annotations

import errno
import socket


class ListenError(OSError):
    """``host:port`` cannot be listened on; the message says why, in words."""


def format_bind(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def listen(host: str, port: int) -> socket.socket:
    """A socket listening on ``host:port`` (port 0: a free one), SO_REUSEADDR as
    werkzeug sets it; ListenError otherwise."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        address = socket.getaddrinfo(host, port, family, socket.SOCK_STREAM,
                                     flags=socket.AI_PASSIVE)[0][4]
    except socket.gaierror as exc:
        raise ListenError(f"unknown host {host!r} ({exc.strerror})") from None
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        why = "address already in use" if exc.errno == errno.EADDRINUSE else exc.strerror
        raise ListenError(f"cannot listen there: {why}") from None
    return sock
