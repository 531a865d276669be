"""Parked items to the Reporting API's dead letter (``POST /v1/rejected-events``).

One thread files what the collector parked, oldest first, in batches of at most
``_BATCH_ITEMS`` items and ``_BATCH_BYTES`` of text, each under its ``parked_id``
(the API files a key once, so a retry after a lost answer files nothing new).  An
item leaves the parked store only once the API answered that it is filed, i.e.
committed; while the API does not answer (or answers 5xx, 429, 401, ...), the items
stay and the thread backs off as delivery does (``collector.backoff``, a pause of its
own).  A 400 or 413 of a batch is split in halves; an item the API refuses on its own
(one larger than its body limit) stays parked, is logged once and is not offered
again until the collector restarts.

The same thread honours requeue requests (``python -m collector.parked requeue``
while the collector runs marks the records): it appends each marked event to the
buffer, the buffer's one owner, and then drops it from the parked store.
"""

from __future__ import annotations

import json
import logging
import random
import threading
from collections.abc import Callable

import requests
from oslo_config import cfg

from collector.api_client import (
    REJECTED_PATH,
    DeliveryRefused,
    client_from_conf,
    endpoint,
    error_summary,
    post,
    refusal,
)
from collector.backoff import Backoff
from collector.buffer import EventBuffer
from collector.metrics import CollectorMetrics
from collector.parked_store import ParkedItem
from mapping.event import MAX_REASON_LEN
from tally_common.service_auth import ApiClient

LOG = logging.getLogger(__name__)

_BATCH_ITEMS = 100
_BATCH_BYTES = 1024 * 1024
_FILED = ("filed", "duplicate")


def _clean_reason(text: str) -> str:
    """The reason as the API takes it: no NUL, no unpaired surrogate, 1000 at most."""
    text = text.replace("\x00", "\ufffd").encode("utf-8", "replace").decode("utf-8")
    return text if len(text) <= MAX_REASON_LEN else text[: MAX_REASON_LEN - 3] + "..."


class ParkedForwarder:
    """The filing loop.  ``run`` until ``stop`` is set; ``forward_once`` and
    ``requeue_marked`` for tests."""

    def __init__(
        self,
        url: str,
        token: str | None,
        buffer: EventBuffer,
        metrics: CollectorMetrics,
        written: threading.Event,
        *,
        timeout: float = 30.0,
        initial_delay: float = 0.5,
        max_delay: float = 60.0,
        poll: float = 1.0,
        jitter: Callable[[float, float], float] = random.uniform,
        client: ApiClient | None = None,
    ) -> None:
        # ``client``: the collector's (then ``url`` is unused); None: a bearer client
        # of ``url`` (the full URL of POST /v1/rejected-events) and ``token``.
        self._client, self._path = endpoint(client, url, token, REJECTED_PATH)
        self._buffer = buffer
        self._metrics = metrics
        self._written = written
        self._timeout = timeout
        self._poll = poll
        self._backoff = Backoff(initial_delay, max_delay, jitter)
        self._refused: dict[int, str] = {}  # parked keys the API will not file: why

    @classmethod
    def from_conf(cls, conf: cfg.ConfigOpts, buffer: EventBuffer, metrics: CollectorMetrics,
                  written: threading.Event, client: ApiClient | None = None,
                  ) -> ParkedForwarder:
        group = conf.collector
        client = client or client_from_conf(conf)
        return cls(
            client.describe(), None, buffer, metrics, written,
            timeout=group.request_timeout_s, initial_delay=group.retry_initial_delay_s,
            max_delay=group.retry_max_delay_s, poll=group.idle_poll_s, client=client,
        )

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            forwarded = 0
            try:
                self.requeue_marked()
                if not self._backoff.remaining():
                    forwarded = self.forward_once()
                    self._backoff.succeeded()
            except DeliveryRefused as exc:
                self._metrics.parked_forward_failures.labels(exc.reason).inc()
                LOG.warning("Filing parked items in the Reporting API's dead letter failed "
                            "(%s: %s); they stay parked, retrying in %.1fs",
                            exc.reason, exc, self._backoff.failed(exc.retry_after))
            except Exception:
                self._metrics.parked_forward_failures.labels("internal").inc()
                LOG.exception("Filing parked items failed")
                self._backoff.failed(None)
            if not forwarded:
                stop.wait(self._poll)
        self._client.close()

    def requeue_marked(self) -> int:
        """Move every event an operator marked for requeue back into the buffer."""
        moved = 0
        for item in self._buffer.parked.items():
            event = item.event
            if not item.requeue_requested or event is None:
                continue
            self._buffer.append([event])  # a crash before the drop: a harmless duplicate
            self._buffer.parked.drop(item.key)
            moved += 1
        if moved:
            self._metrics.parked_requeued.inc(moved)
            self._written.set()
            LOG.info("Requeued %d parked events into the buffer", moved)
        return moved

    def forward_once(self) -> int:
        """File one batch of the oldest parked items; answers how many the API filed
        (0: nothing left to offer).  Raises DeliveryRefused when it must be retried."""
        batch: list[ParkedItem] = []
        size = 0
        for item in self._buffer.parked.items(skip=self._refused):
            if item.requeue_requested:
                continue
            if batch and (len(batch) >= _BATCH_ITEMS or size + len(item.raw) > _BATCH_BYTES):
                break
            batch.append(item)
            size += len(item.raw)
        return self._send(batch) if batch else 0

    def _send(self, batch: list[ParkedItem]) -> int:
        """POST ``batch``, splitting on 400/413; answers how many were filed."""
        response = self._post(batch)
        if response.status_code in (400, 413):
            detail = f"HTTP {response.status_code} {error_summary(response)}"
            if len(batch) == 1:
                self._refused[batch[0].key] = detail
                self._metrics.parked_forward_failures.labels("refused").inc()
                LOG.error("The Reporting API refuses to file parked item %s (%s); it stays "
                          "parked until an operator looks", batch[0].parked_id, detail)
                return 0
            self._metrics.parked_forward_failures.labels("split").inc()
            middle = len(batch) // 2
            return self._send(batch[:middle]) + self._send(batch[middle:])
        if response.status_code != 200:
            raise refusal(response)
        return self._settle(batch, response)

    def _post(self, batch: list[ParkedItem]) -> requests.Response:
        body = {"items": [{"key": item.parked_id, "raw": item.raw,
                           "reason": _clean_reason(item.reason)} for item in batch]}
        return post(self._client, self._path, json.dumps(body).encode("ascii"), self._timeout)

    def _settle(self, batch: list[ParkedItem], response: requests.Response) -> int:
        try:
            results = response.json()["results"]
            answered = {(r["index"], r["key"]): r for r in results}
        except (ValueError, KeyError, TypeError) as exc:
            raise DeliveryRefused("bad_response", f"unreadable 200 answer: {exc}") from None
        rows = []
        for index, item in enumerate(batch):
            result = answered.get((index, item.parked_id))
            if not isinstance(result, dict) or result.get("status") not in _FILED:
                continue
            # An item marked for requeue meanwhile stays: the mark is honoured next.
            self._buffer.parked.drop_unchanged(item)
            self._metrics.parked_forwarded.labels(result["status"]).inc()
            rows.append(str(result.get("id")))
        filed = len(rows)
        if rows:
            LOG.info("Filed %d parked items in the Reporting API's dead letter (rows %s)",
                     filed, ", ".join(rows) if filed <= 10 else f"{rows[0]} to {rows[-1]}")
        if filed < len(batch):
            raise DeliveryRefused(
                "bad_response",
                f"the answer covered {filed} of {len(batch)} parked items; the rest stays")
        return filed
