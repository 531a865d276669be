"""The delivery's options and the values read from them, checked once at start."""

from __future__ import annotations

from dataclasses import dataclass, field

from oslo_config import cfg

from collector.api_client import client_from_conf, events_url
from mapping.event import MAX_BATCH
from tally_common.service_auth import ApiClient, strategy_opt

OPTS = [
    cfg.StrOpt(
        "reporting_url",
        help="Base URL of the Reporting API, e.g. http://127.0.0.1:8779. Required "
        "unless the collector logs in with [service_credentials], which finds the API "
        "in keystone's catalog (service type usage-history) when this is unset.",
    ),
    strategy_opt("[collector] reporting_url", "[collector] token_file"),
    cfg.StrOpt(
        "token_file",
        help="auth_strategy token: file holding the bearer token (role ingest) sent "
        "to the Reporting API (its first line).",
    ),
    cfg.IntOpt(
        "batch_size", default=MAX_BATCH, min=1, max=MAX_BATCH,
        help="Events per POST /v1/events.",
    ),
    cfg.IntOpt(
        "delivery_concurrency", default=2, min=1, max=32,
        help="Delivery requests in flight at once, each carrying its own events "
        "(never one event in two requests). Match the Reporting API's workers; "
        "1 sends one request at a time.",
    ),
    cfg.FloatOpt(
        "request_timeout_s", default=30.0, min=0.1,
        help="Timeout of one delivery request.",
    ),
    cfg.FloatOpt(
        "retry_initial_delay_s", default=0.5, min=0.01,
        help="First pause after a failed delivery; doubled per consecutive failure.",
    ),
    cfg.FloatOpt(
        "retry_max_delay_s", default=60.0, min=0.01,
        help="Cap of the pause between failed deliveries.",
    ),
    cfg.FloatOpt(
        "batch_linger_s", default=0.25, min=0.0, max=60.0,
        help="While the listener drains a backlog (oslo hands over full listener "
        "batches), how long buffered events may wait for more to fill a delivery "
        "batch before a partial one is sent. The backlog then travels in full "
        "batches (the API stores 1000 events in one request at far less cost than "
        "in five). Otherwise, and with 0, whatever is there is sent at once.",
    ),
    cfg.FloatOpt(
        "idle_poll_s", default=1.0, min=0.01,
        help="How often an empty buffer is looked at again (new events wake the "
        "delivery at once).",
    ),
]


@dataclass(frozen=True)
class DeliveryConfig:
    """What the delivery's parts are built from.  The defaults are the options'
    except ``linger`` (0: tests send at once unless they ask for lingering)."""

    url: str  # of POST /v1/events, for a client of its own (tests)
    token: str | None = None
    batch_size: int = MAX_BATCH
    concurrency: int = 2
    timeout: float = 30.0
    initial_delay: float = 0.5
    max_delay: float = 60.0
    linger: float = 0.0
    idle_poll: float = 1.0
    # The configured client (tally_common.service_auth); None: a bearer client of url, token.
    client: ApiClient | None = field(default=None, compare=False)

    @classmethod
    def from_conf(cls, conf: cfg.ConfigOpts, client: ApiClient | None = None) -> DeliveryConfig:
        """Read and check ``[collector]``: a malformed URL, an unreadable token file or
        credentials that can never log in are a ConfigurationError before anything is
        consumed.  ``client``: the collector's shared one (built here if None)."""
        group = conf.collector
        client = client or client_from_conf(conf)
        return cls(
            url=client.describe() if group.reporting_url is None
            else events_url(group.reporting_url),
            client=client,
            batch_size=group.batch_size,
            concurrency=group.delivery_concurrency,
            timeout=group.request_timeout_s,
            initial_delay=group.retry_initial_delay_s,
            max_delay=group.retry_max_delay_s,
            linger=group.batch_linger_s,
            idle_poll=group.idle_poll_s,
        )
