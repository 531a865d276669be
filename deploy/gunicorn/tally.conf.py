"""gunicorn settings for serving ``reporting.wsgi:application`` under a plain gunicorn.

    TALLY_CONFIG_FILE=/etc/tally/tally.conf gunicorn -c deploy/gunicorn/tally.conf.py

``tally-reporting --config-file F`` does all of this by itself; use this file when
gunicorn has to be run directly (extra gunicorn settings such as TLS or an access
log, a process manager that starts gunicorn).  Listen address, workers, threads and
timeout come from the ``[api]`` section of the Tally configuration, so both ways of
serving behave alike; gunicorn command-line flags still override them.

Prometheus: every worker is a process, so ``/metrics`` needs
``PROMETHEUS_MULTIPROC_DIR``.  When the environment does not set it, a fresh
temporary directory is made here (in the master, before any worker imports
prometheus_client) and removed when gunicorn exits.  When it is set (for example to
a systemd ``RuntimeDirectory``), it must be an empty directory at every start.
"""

from __future__ import annotations

import os
import shutil
import tempfile

from reporting.cmd import load_conf
from reporting.cmd.bind import format_bind, parse_bind
from reporting.cmd.serve import REQUEST_LIMITS
from reporting.worker_timeout import timeout_problem

_config_file = os.environ.get("TALLY_CONFIG_FILE")
if not _config_file:
    raise RuntimeError("TALLY_CONFIG_FILE must name the Tally configuration file")

_own_metrics_dir = not os.environ.get("PROMETHEUS_MULTIPROC_DIR")
if _own_metrics_dir:
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="tally-reporting-metrics-")

_conf = load_conf([], prog="tally-reporting-gunicorn", config_files=[_config_file])
_problem = timeout_problem(_conf)
if _problem is not None:
    raise RuntimeError(_problem)

wsgi_app = "reporting.wsgi:application"
# Parsed as tally-reporting parses it (a host alone listens on 8779, not gunicorn's 8000).
bind = [format_bind(*parse_bind(_conf.api.bind))]
workers = _conf.api.workers
# gthread: a synchronous sync run holds one thread for up to [sync] budget_s + 15 s
# while the worker's other threads keep serving ingest and queries.  A pool thread
# also reads its request, so a client sending half a request holds one: workers x
# threads slow clients starve the API.  Serve it behind a buffering proxy
# (deploy/nginx/tally-reporting.conf, or an ingress; see docs/deployment.md).
worker_class = "gthread"
threads = _conf.api.threads
# At least [sync] budget_s + 15 s (checked above), or gunicorn kills the worker in the
# middle of a sync run (see docs/deployment.md).
timeout = _conf.api.timeout
graceful_timeout = 30
proc_name = "tally-reporting"
# At or above what nginx passes on (deploy/nginx/tally-reporting.conf), as
# tally-reporting sets them: a request the proxy took never gets gunicorn's HTML error.
limit_request_line = REQUEST_LIMITS["limit_request_line"]
limit_request_fields = REQUEST_LIMITS["limit_request_fields"]
limit_request_field_size = REQUEST_LIMITS["limit_request_field_size"]
errorlog = "-"
# gunicorn >= 23 opens a control socket under $HOME, which a read-only root or
# ProtectHome= forbids; Tally does not use it.  Older gunicorn ignores the name.
control_socket_disable = True


def child_exit(server, worker):
    # A dead worker's counters stay in the directory; its live gauges must not.
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)


def on_exit(server):
    if _own_metrics_dir:
        shutil.rmtree(os.environ["PROMETHEUS_MULTIPROC_DIR"], ignore_errors=True)
