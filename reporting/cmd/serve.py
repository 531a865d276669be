"""``tally-reporting --config-file F``: the Reporting API under gunicorn.

The app is built once in the master (so a bad configuration fails the start with one
line before any worker exists) and forked into ``[api] workers`` workers.
Prometheus' multiprocess directory is a fresh temporary directory, set before
anything imports prometheus_client, and removed at exit.
"""

from __future__ import annotations

import gc
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from typing import Any

from oslo_config import cfg

from reporting.cmd import (
    ConfigError,
    check_settings,
    load_conf,
    one_line,
    require_database,
    setup_logging,
)

PROG = "tally-reporting"
GC_THRESHOLD = 50_000
LOG = logging.getLogger(__name__)

# gunicorn's request limits, at or above what the proxy in front passes on (nginx's
# large_client_header_buffers 4 8k: a request line or header line of 8190 characters,
# 32 KiB of headers, deploy/nginx/tally-reporting.conf), so a request the proxy took
# is answered by the API (in JSON), never by gunicorn's HTML error page.  The request
# line is gunicorn's largest; a header line may grow in the proxy (X-Forwarded-For).
REQUEST_LIMITS = {
    "limit_request_line": 8190,
    "limit_request_fields": 32768,
    "limit_request_field_size": 16384,
}


def tune_worker_gc() -> None:
    """A worker collects cyclic garbage every GC_THRESHOLD allocations: a batch of 1000
    events builds some 25,000 objects that live until its answer, which at the default
    threshold (700) the collector traversed some 30 times a batch."""
    gc.set_threshold(GC_THRESHOLD)


def _worker_started(flask_app: Any) -> None:
    tune_worker_gc()
    from reporting.api.handoff import deliverer_of

    deliverer = deliverer_of(flask_app)
    if deliverer is not None:  # [handoff] webhook_url: this worker delivers too
        deliverer.ensure_running()


def _gunicorn_app(conf: cfg.ConfigOpts, flask_app: Any) -> Any:
    from gunicorn.app.base import BaseApplication
    from prometheus_client import multiprocess

    class ReportingApplication(BaseApplication):
        def load_config(self) -> None:
            settings = {
                "bind": [conf.api.bind],
                "workers": conf.api.workers,
                "threads": conf.api.threads,
                "worker_class": "gthread",
                "timeout": conf.api.timeout,
                "preload_app": True,
                "proc_name": PROG,
                "accesslog": None,
                "errorlog": "-",
                # gunicorn 23+ opens a control socket under $HOME; a service
                # account's HOME is often unwritable and Tally never uses it.
                "control_socket_disable": True,
                **REQUEST_LIMITS,
                "child_exit": lambda _arbiter, worker: multiprocess.mark_process_dead(worker.pid),
                "post_fork": lambda _arbiter, _worker: _worker_started(flask_app),
            }
            for key, value in settings.items():
                if key in self.cfg.settings:  # control_socket_* exist from gunicorn 23
                    self.cfg.set(key, value)

        def load(self) -> Any:
            return flask_app

    return ReportingApplication()


def main(argv: Sequence[str] | None = None) -> int:
    metrics_dir = tempfile.mkdtemp(prefix="tally-reporting-metrics-")
    # gunicorn's workers fork inside run() below and leave by SystemExit, which
    # unwinds through this function's finally in the worker too: only this process
    # (the master) may remove the directory, or the first worker to exit (a restart,
    # max_requests, a shutdown) removes every other worker's metrics under them.
    owner_pid = os.getpid()
    # prometheus_client reads the directory from the environment; put back what was
    # there when main returns, so a caller in the same process (a test, an embedding
    # script) and the processes it starts never inherit a directory removed below.
    previous_metrics_dir = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir
    try:
        try:
            conf = load_conf(argv, prog=PROG)
            setup_logging(conf, PROG)
            database = require_database(conf)
            from reporting.cmd.bind import check_bind

            bind = check_bind(conf.api.bind)
            conf.set_override("bind", bind, group="api")  # what gunicorn gets: HOST:PORT
            from reporting.worker_timeout import timeout_problem

            problem = timeout_problem(conf)
            if problem is not None:
                raise ConfigError(problem)
            from reporting.api.replica_reads import replica_engine
            from reporting.app import create_app
            from reporting.db.session import ENGINE_KEY

            flask_app = create_app(conf)
            # keystonemiddleware registers [keystone_authtoken] when the app builds it.
            check_settings(conf, PROG, only=("keystone_authtoken",))
            # Workers open their own connections after the fork.
            flask_app.extensions[ENGINE_KEY].dispose()
            replica = replica_engine(flask_app)
            if replica is not None:
                replica.dispose()
        except ConfigError as exc:
            print(f"{PROG}: configuration error: {exc}", file=sys.stderr)
            return 2
        except Exception as exc:  # noqa: BLE001 - one clear line for the operator
            print(f"{PROG}: configuration error: {one_line(exc)}", file=sys.stderr)
            return 2
        LOG.info("database: %s", database)
        if conf.database.slave_connection:
            from tally_common.config_check import redact_url

            LOG.info("read replica: %s (answers GET requests once it has replayed the "
                     "caller's own last write)", redact_url(conf.database.slave_connection))
        LOG.info("clouds file: %s", conf.sync.clouds_file or "(none: every sync answers 404)")
        if conf.sync.clouds_file:  # the adapter's credentials, read again at every run
            from reporting.openstack.credentials import describe_search

            LOG.info("OpenStack clouds.yaml: %s", describe_search(os.environ))
        if conf.handoff.webhook_url:
            from tally_common.config_check import redact_url

            LOG.info("webhook on close: %s (%s)", redact_url(conf.handoff.webhook_url),
                     "posted by every worker" if conf.handoff.deliver
                     else "posted by other instances: [handoff] deliver = false")
        else:
            LOG.info("webhook on close: none (closes write no delivery)")
        LOG.info("serving the Reporting API on http://%s with %s workers", bind, conf.api.workers)
        LOG.info("prometheus multiprocess directory %s", metrics_dir)
        # The workers fork from this process: what start-up built is frozen out of
        # their full garbage collections (each one would traverse it all, holding
        # the GIL, and dirty the pages the workers share with this process).
        gc.collect()
        gc.freeze()
        _gunicorn_app(conf, flask_app).run()
        return 0
    finally:
        if os.getpid() == owner_pid:  # not a worker leaving (see owner_pid)
            shutil.rmtree(metrics_dir, ignore_errors=True)
            if previous_metrics_dir is None:
                os.environ.pop("PROMETHEUS_MULTIPROC_DIR", None)
            else:
                os.environ["PROMETHEUS_MULTIPROC_DIR"] = previous_metrics_dir


if __name__ == "__main__":
    sys.exit(main())
