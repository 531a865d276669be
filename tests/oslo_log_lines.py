"""A logger's lines as oslo.log's formatter writes them (what the services log)."""

from __future__ import annotations

import contextlib
import io
import logging
import re
from collections.abc import Iterator

from oslo_config import cfg
from oslo_log import formatters, log

# "<date> <time> <pid> <LEVEL> <logger> [<request context or ->] <message>"
_MESSAGE = re.compile(r"^\S+ \S+ \d+ \w+ \S+ \[[^\]]*\] (.*)$", re.M)


@contextlib.contextmanager
def oslo_log_lines(logger_name: str) -> Iterator[list[str]]:
    """Collect the lines ``logger_name`` (and its children) logs in the block, each
    formatted by oslo.log's ContextFormatter; the list is filled when the block ends."""
    conf = cfg.ConfigOpts()
    log.register_options(conf)
    conf([], default_config_files=[], default_config_dirs=[])
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatters.ContextFormatter(project="tally", version="", config=conf))
    logger = logging.getLogger(logger_name)
    logger.addHandler(handler)
    lines: list[str] = []
    try:
        yield lines
    finally:
        logger.removeHandler(handler)
        lines.extend(stream.getvalue().splitlines())


def messages(lines: list[str]) -> list[str]:
    """The message part of each line (after the logger name and the context)."""
    return [match.group(1) for line in lines if (match := _MESSAGE.match(line))]
