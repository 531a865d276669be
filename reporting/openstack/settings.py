"""The adapter's own settings (``adapter_config`` of an entry of Tally's clouds file), parsed strictly.

Nothing validates them when the process starts: the framework has no hook for an
adapter's settings, so a mistake surfaces on the first sync of that cloud, which
aborts naming the setting.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from reporting.sync.observation import RunAborted

KNOWN_KEYS = ("os_cloud", "include_octavia")


@dataclasses.dataclass(frozen=True)
class OpenStackSettings:
    os_cloud: str
    include_octavia: bool = False


def parse_settings(config: Any) -> OpenStackSettings:
    """Parse ``adapter_config``; an unknown key, a missing os_cloud or a wrong type aborts."""
    if config is None:
        config = {}
    if not isinstance(config, Mapping):
        raise RunAborted("adapter_config: must be a mapping")
    for key in config:
        if key not in KNOWN_KEYS:
            raise RunAborted(
                f"adapter_config: unknown setting {key!r} (known: {', '.join(KNOWN_KEYS)})"
            )
    os_cloud = config.get("os_cloud")
    if not isinstance(os_cloud, str) or not os_cloud.strip():
        raise RunAborted("adapter_config: os_cloud is required and must name a clouds.yaml entry")
    include_octavia = config.get("include_octavia", False)
    if not isinstance(include_octavia, bool):
        raise RunAborted("adapter_config: include_octavia must be true or false")
    return OpenStackSettings(os_cloud=os_cloud, include_octavia=include_octavia)
