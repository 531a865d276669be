"""Sending a claimed batch to ``POST /v1/events`` and settling it: the part of the
collector that must not lose an event.

Why every event the listener acknowledged reaches the Reporting API (at least once):

1. The listener acknowledges a notification only after its event is committed to
   the disk buffer (``collector.listener``), so from then on the buffer holds it.
2. An event leaves the buffer in exactly two ways, both here and nowhere else:

   - ``EventBuffer.remove`` of the events a 200 answer names, by index, as
     ``stored``, ``duplicate`` or ``rejected``: the API has committed each of them,
     to its history or (rejected) to its dead letter, before it answers;
   - ``EventBuffer.move_to_parked`` of one event the API refused on its own (400 or
     413 for a request holding that event alone) while other events of the same
     round went through: the parked copy is committed before the event is removed,
     and the parked store keeps it until the API's dead letter has filed it
     (``collector.forward``).  If every event of a round is refused, the API refuses
     everything, not one event: nothing is parked, the round is retried later.

3. Everything else keeps the events in the buffer: no answer (connection error,
   timeout), any other status, a 200 that cannot be read, an answer that does not
   cover an event, a crash at any point.  They are sent again, later or after a
   restart.  Resending is always safe: ingest deduplicates on ``event_id``, so an
   event whose answer was lost comes back ``duplicate`` and is removed then.
4. An answer settles only the events of its own request: results are matched by
   index to the events that request carried, and each event is one position of one
   buffer item (``BufferedEvent``), so removing it cannot touch a neighbour.  The
   claims (``collector.next_batch``) keep an event out of two requests at once and
   are released only after settling.

A 400 or 413 for a whole request is split in halves until the refused event stands
alone, so one poisoned event cannot hold back the others.
"""

from __future__ import annotations

import logging
from collections import Counter

import orjson
import requests

from collector.api_client import (
    EVENTS_PATH,
    DeliveryRefused,
    endpoint,
    error_summary,
    post,
    refusal,
)
from collector.buffer import BufferedEvent, EventBuffer
from collector.delivery_config import DeliveryConfig
from collector.metrics import CollectorMetrics

LOG = logging.getLogger(__name__)

# The outcomes of a 200 answer that mean the API has committed the event.
ANSWERED = ("stored", "duplicate", "rejected")


class Sender:
    """Sends claimed batches and settles them.  Safe to use from several threads at
    once, each with its own claim (the client keeps one HTTP session per thread)."""

    def __init__(self, config: DeliveryConfig, buffer: EventBuffer,
                 metrics: CollectorMetrics) -> None:
        self._client, self._path = endpoint(config.client, config.url, config.token,
                                            EVENTS_PATH)
        self._timeout = config.timeout
        self._buffer = buffer
        self._metrics = metrics

    def send(self, items: list[BufferedEvent]) -> int:
        """Send ``items`` (claimed by the caller) and settle them; answers how many
        left the buffer (answered or parked).  Raises DeliveryRefused when some must be
        sent again later; those stay in the buffer."""
        answered, refused_alone = self._send(items)
        if refused_alone and not answered:
            # Nothing went through: the API refuses everything, not this event.
            raise DeliveryRefused("client_error", refused_alone[0][1])
        for event, reason in refused_alone:
            LOG.error("Buffered event refused on its own (%s); parked", reason)
            self._buffer.move_to_parked(event, reason)
            self._metrics.parked.labels("refused").inc()
        return answered + len(refused_alone)

    def _send(
        self, items: list[BufferedEvent]
    ) -> tuple[int, list[tuple[BufferedEvent, str]]]:
        """POST items, splitting on 400/413.  Returns (answered, events refused alone)."""
        response = self._post(items)
        if response.status_code in (400, 413):
            detail = f"HTTP {response.status_code} {error_summary(response)}"
            if len(items) == 1:
                return 0, [(items[0], detail)]
            self._metrics.delivery_failures.labels("split").inc()
            LOG.warning("Batch of %d refused (%s); splitting it", len(items), detail)
            middle = len(items) // 2
            first = self._send(items[:middle])
            second = self._send(items[middle:])
            return first[0] + second[0], first[1] + second[1]
        if response.status_code != 200:
            raise refusal(response)
        return self._settle(items, response), []

    def _settle(self, items: list[BufferedEvent], response: requests.Response) -> int:
        """Remove exactly the events the 200 answer names as committed."""
        try:
            results = orjson.loads(response.content)["results"]
            if not isinstance(results, list):
                raise TypeError("results is not a list")
        except (ValueError, KeyError, TypeError) as exc:
            raise DeliveryRefused("bad_response", f"unreadable 200 answer: {exc}") from None
        done: dict[int, str] = {}
        for result in results:
            index = result.get("index") if isinstance(result, dict) else None
            status = result.get("status") if isinstance(result, dict) else None
            # JSON true is a Python int: an index must be a number the API wrote
            if type(index) is int and 0 <= index < len(items) and status in ANSWERED:
                done[index] = status
        if done:
            self._buffer.remove(items[index] for index in done)
            for status, count in Counter(done.values()).items():
                self._metrics.delivered.labels(status).inc(count)
        if len(done) < len(items):
            raise DeliveryRefused(
                "bad_response",
                f"the answer covered {len(done)} of {len(items)} events; the rest is kept")
        return len(done)

    def _post(self, items: list[BufferedEvent]) -> requests.Response:
        body = '{"events":[' + ",".join(item.value for item in items) + "]}"
        return post(self._client, self._path, body.encode("utf-8"), self._timeout)
