"""The collector's start-up check of its ``[collector] cloud`` against the API.

One cloud booked under two names doubles its usage.  The API knows the clouds its
reconciliation syncs (its clouds file) and every name its history holds
(``GET /v1/clouds``); the collector asks once at start, retrying while the API is
unreachable, and says loudly when its cloud is unknown: an ERROR log and
``tally_collector_cloud_known{cloud} 0``.  It keeps collecting either way (nothing is
lost: the API dead-letters the events as ``unknown cloud``, replayable once the cloud
is added).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from collector.api_client import CLOUDS_PATH, endpoint
from collector.metrics import CollectorMetrics
from tally_common.service_auth import ApiClient, ApiNoAnswer

LOG = logging.getLogger(__name__)


class CloudCheck:
    def __init__(self, reporting_url: str, token: str | None, cloud: str,
                 metrics: CollectorMetrics, *, timeout: float, retry_s: float,
                 client: ApiClient | None = None) -> None:
        # ``client``: the collector's; None: a bearer client of ``reporting_url``, ``token``.
        self._client, self._path = endpoint(
            client, reporting_url.rstrip("/") + CLOUDS_PATH, token, CLOUDS_PATH)
        self._url = reporting_url.rstrip("/") + CLOUDS_PATH if client is None \
            else f"{client.describe()} {CLOUDS_PATH}"
        self._cloud = cloud
        self._metrics = metrics
        self._timeout = timeout
        self._retry_s = retry_s
        self.done = threading.Event()

    def run(self, stopping: threading.Event) -> None:
        """Ask until the API answers (or the collector stops)."""
        while not stopping.is_set():
            if self.once() is not None:
                break
            self._metrics.cloud_check_failures.inc()
            stopping.wait(self._retry_s)
        self._client.close()
        self.done.set()

    def once(self) -> bool | None:
        """Whether the API knows the cloud; None when it did not answer."""
        failure = None
        try:
            response = self._client.request("GET", self._path, timeout=self._timeout)
            body: Any = response.json() if response.status_code == 200 else None
        except ApiNoAnswer as exc:
            failure = str(exc)
        except ValueError:
            failure = f"HTTP {response.status_code} with a body that is not JSON"
        if failure is not None:
            # Logged outside the except block: oslo.log appends the exception being
            # handled to a WARNING (urllib3's pool text, ~450 characters).  The
            # reason names the API's address.
            LOG.warning("Checking cloud %s (GET /v1/clouds) failed (%s); asking again in %ss",
                        self._cloud, failure, self._retry_s)
            return None
        if not isinstance(body, dict) or not isinstance(body.get("items"), list):
            LOG.warning("Checking cloud %s against %s: HTTP %s; asking again in %ss",
                        self._cloud, self._url, response.status_code, self._retry_s)
            return None
        names = {item.get("cloud"): item for item in body["items"] if isinstance(item, dict)}
        others = ", ".join(sorted(str(n) for n in names if n != self._cloud)) or "none"
        mine = names.get(self._cloud)
        if body.get("clouds_file") is True:
            is_known = bool(mine and mine.get("in_clouds_file"))
            if not is_known:
                LOG.error("[collector] cloud %r is not a cloud the Reporting API's clouds file "
                          "names (it names: %s): every event will be dead-lettered as "
                          "'unknown cloud'. Fix the name, or add the cloud to the clouds file "
                          "and replay.", self._cloud, others)
        else:
            is_known = True
            if mine is None and others != "none":
                LOG.warning("[collector] cloud %r is new to the Reporting API's history, which "
                            "holds: %s. If it is one of those under another name, fix it now: "
                            "two names book every resource twice.", self._cloud, others)
        self._metrics.cloud_known.labels(cloud=self._cloud).set(1 if is_known else 0)
        if is_known:
            LOG.info("Cloud %s is known to the Reporting API", self._cloud)
        return is_known
