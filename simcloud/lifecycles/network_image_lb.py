"""neutron floating IPs, glance images and octavia load balancers."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from simcloud import model
from simcloud.lifecycles.common import Owner, ops_until
from simcloud.model import Phase

if TYPE_CHECKING:
    from simcloud.builder import Builder, Project


def floating_ip(b: Builder, born: float, death: float | None, pre: bool, owner: Owner,
                projects: list[Project]) -> None:
    rng = b.rng
    res = b.resource(model.FLOATING_IP, born, owner, f"neutron-{rng.randrange(1, 4)}")
    version = 6 if rng.random() < 0.15 else 4
    n = len(b.resources)
    res.address = (f"2001:db8::{n:x}" if version == 6
                   else f"172.{24 + (n >> 16) % 8}.{(n >> 8) & 255}.{n & 255}")
    project = owner[0]

    def phase(at: float, status: str, port: str | None) -> None:
        res.phases.append(Phase(at, status, None, "active", project, version, port))

    if pre:
        active = rng.random() < 0.7
        phase(born, "ACTIVE" if active else "DOWN", b.uuid() if active else None)
        t = max(born, b.start)
    else:
        phase(born, "DOWN", None)
        b.note(res, born, "floatingip.create.start")
        b.note(res, born, "floatingip.create.end")
        t = born
    while True:
        t, dying = ops_until(b, t, death)
        if math.isinf(t):
            break
        if dying:
            res.deleted_at = t
            b.note(res, t, "floatingip.delete.start")
            b.note(res, t, "floatingip.delete.end")
            break
        associate = res.phases[-1].status == "DOWN"
        b.note(res, t, "floatingip.update.start")
        phase(t, "ACTIVE" if associate else "DOWN", b.uuid() if associate else None)
        b.note(res, t, "floatingip.update.end")
    b.add(res)


# --- glance ----------------------------------------------------------------------------


def image(b: Builder, born: float, death: float | None, pre: bool, owner: Owner,
          projects: list[Project]) -> None:
    rng = b.rng
    res = b.resource(model.IMAGE, born, owner, "localhost")
    res.hidden = rng.random() < b.config.hidden_image_fraction
    res.ownerless = rng.random() < b.config.ownerless_image_fraction
    res.visibility = "public" if (res.ownerless or rng.random() < 0.15) else "private"
    size = int(rng.lognormvariate(20.5, 1.2)) + 1  # ~1 GiB median
    project = owner[0]

    def phase(at: float, status: str, nbytes: int | None) -> None:
        state = "active" if status == "active" else status
        res.phases.append(Phase(at, status, None, state, project, nbytes))

    if pre:
        phase(born, "active", size)
        t = max(born, b.start)
    else:
        phase(born, "queued", None)
        b.note(res, born, "image.create")  # no size yet: Tally skips it
        t = born
        if rng.random() < 0.97:
            t += b.secs(5, 60)
            phase(t, "saving", None)
            t += b.secs(30, 600)
            res.ready_at = t
            phase(t, "active", size)
            b.note(res, t, "image.upload")
            b.note(res, t, "image.activate")
        else:
            res.ready_at = math.inf  # never uploaded: no image.upload ever books it
    while True:
        t, dying = ops_until(b, t, death)
        if math.isinf(t):
            break
        if dying:
            res.deleted_at = t
            b.note(res, t, "image.delete")
            break
        last = res.phases[-1]
        phase(t, last.status, last.size)  # a metadata update
        b.note(res, t, "image.update")
    b.add(res)


# --- octavia ---------------------------------------------------------------------------


def loadbalancer(b: Builder, born: float, death: float | None, pre: bool, owner: Owner,
                 projects: list[Project]) -> None:
    rng = b.rng
    res = b.resource(model.LOADBALANCER, born, owner, "octavia-worker")
    n = len(b.resources)
    res.address = f"10.{(n >> 16) & 255}.{(n >> 8) & 255}.{n & 255}"
    project = owner[0]

    def phase(at: float, status: str, counts: tuple[int, int]) -> None:
        res.phases.append(Phase(at, status, None, "active", project, counts))

    def new_counts() -> tuple[int, int]:
        listeners = rng.randint(1, 3)
        return listeners, rng.randint(1, listeners + 1)

    if pre:
        phase(born, "ACTIVE", new_counts())
        t = max(born, b.start)
    else:
        phase(born, "PENDING_CREATE", (0, 0))
        t = born + b.secs(60, 240)
        res.ready_at = t
        phase(t, "ACTIVE", (0, 0))
        b.note(res, t, "octavia.loadbalancer.create.end")
        if death is None or death > t + 700:
            # Listeners and pools follow; octavia sends no loadbalancer notification.
            t += b.secs(30, 600)
            phase(t, "PENDING_UPDATE", (0, 0))
            t += b.secs(10, 60)
            phase(t, "ACTIVE", new_counts())
    while True:
        t, dying = ops_until(b, t, death)
        if math.isinf(t):
            break
        counts = res.phases[-1].size
        if dying:
            phase(t, "PENDING_DELETE", counts)
            t += b.secs(10, 60)
            res.deleted_at = t
            b.note(res, t, "octavia.loadbalancer.delete.end")
            break
        phase(t, "PENDING_UPDATE", counts)
        t += b.secs(10, 60)
        if rng.random() < 0.6:
            phase(t, "ACTIVE", new_counts())
        else:
            phase(t, "ACTIVE", counts)  # renamed: the one change octavia notifies
            b.note(res, t, "octavia.loadbalancer.update.end")
    b.add(res)
