"""Counting the notifications oslo.messaging drops as undecodable.

oslo.messaging's RabbitMQ driver decodes each message before any listener sees it; a
body that is not the JSON it expects (``Failed to process message ... skipping it.``)
is rejected without requeue: RabbitMQ drops it, or dead-letters it when the queue has
a dead-letter exchange.  The collector never receives it, so the only trace is that
log line: a filter on the driver's logger counts each one
(``tally_collector_undecodable_total``) and lets the line through.
"""

from __future__ import annotations

import logging

import prometheus_client

DRIVER_LOGGER = "oslo.messaging._drivers.impl_rabbit"  # oslo names its loggers so
_DROPPED = "Failed to process message"


class UndecodableCounter(logging.Filter):
    def __init__(self, counter: prometheus_client.Counter) -> None:
        super().__init__()
        self._counter = counter

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str) and record.msg.startswith(_DROPPED):
            self._counter.inc()
        return True

    def install(self) -> None:
        logging.getLogger(DRIVER_LOGGER).addFilter(self)

    def remove(self) -> None:
        logging.getLogger(DRIVER_LOGGER).removeFilter(self)
