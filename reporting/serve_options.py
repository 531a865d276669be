"""The ``[api]`` options of the Reporting API's server: where it listens, its gunicorn
workers and threads, and the worker timeout.

Read by ``reporting.cmd.serve`` (which hands them to gunicorn) and
``reporting.worker_timeout``; declared apart from the command so that
``reporting.opts`` lists them without importing the command (and the app it serves).
"""

from __future__ import annotations

from oslo_config import cfg

serve_opts: list[cfg.Opt] = [
    cfg.StrOpt(
        "bind",
        default="127.0.0.1:8779",
        help="HOST:PORT the Reporting API listens on ([::1]:8779 for IPv6; a host "
        "alone listens on port 8779; port 0 picks a free port, named by the log line "
        "'Listening at'). Checked at start: an address that cannot be listened on "
        "stops the start.",
    ),
    cfg.IntOpt("workers", default=2, min=1, help="gunicorn worker processes."),
    cfg.IntOpt(
        "threads",
        default=4,
        min=1,
        help="Threads per worker (gthread); requests served concurrently per worker.",
    ),
    cfg.IntOpt(
        "timeout",
        default=120,
        min=10,
        help="Seconds a request may take before gunicorn restarts its worker. One value "
        "for the whole worker, so it must be at least [sync] budget_s + 15 (the "
        "synchronous sync route); the service refuses to start otherwise.",
    ),
]
