"""The state machine of each resource type: phases, durations and notifications.

Each builder lives one resource from its creation to its deletion (or the end of
the month).  The sequence of statuses, task states and notifications follows what
nova, cinder, neutron, glance and octavia do for the same operation; only the
durations are drawn from the seeded generator.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from simcloud import model
from simcloud.lifecycles.cinder import volume
from simcloud.lifecycles.network_image_lb import floating_ip, image, loadbalancer
from simcloud.lifecycles.nova import instance

BUILDERS: dict[str, Callable[..., Any]] = {
    model.INSTANCE: instance,
    model.VOLUME: volume,
    model.FLOATING_IP: floating_ip,
    model.IMAGE: image,
    model.LOADBALANCER: loadbalancer,
}
