"""The state machine of each resource type: phases, durations and notifications.

Each builder lives one resource from its creation to its deletion (or the end of
the month).  The sequence of statuses, task states and notifications follows what
nova, cinder, neutron, glance and octavia do for the same operation; only the
durations are drawn from the seeded generator.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from simcloud import model
from simcloud.model import Phase, Resource

if TYPE_CHECKING:
    from simcloud.generator import Project, _Builder

Owner = tuple[str, str]


@functools.lru_cache(maxsize=64)
def _cumulative(weights: tuple[int, ...]) -> tuple[list[int], int]:
    cum = list(itertools.accumulate(weights))
    return cum, cum[-1]


def _pick(rng: Any, options: Sequence[Any], weights: tuple[int, ...]) -> Any:
    """``rng.choices(options, weights)[0]`` without rebuilding the cumulative weights."""
    cum, total = _cumulative(weights)
    return options[bisect.bisect_right(cum, rng.random() * total)]
VOLUME_SIZES = (1, 5, 10, 20, 50, 100, 200, 500)
VOLUME_SIZE_WEIGHTS = (5, 10, 20, 20, 15, 15, 10, 5)


def _ops_until(b: _Builder, t: float, death: float | None) -> tuple[float, bool]:
    """The instant of the next operation, and whether it is the deletion."""
    nxt = b.next_op(t)
    limit = death if death is not None else b.end
    if nxt >= limit:
        return (max(death, t + 1.0), True) if death is not None else (math.inf, False)
    return nxt, False


# --- nova ------------------------------------------------------------------------------


def instance(b: _Builder, born: float, death: float | None, pre: bool, owner: Owner,
             projects: list[Project]) -> None:
    rng = b.rng
    host = f"compute-{rng.randrange(1, 41):02d}"
    res = b.resource(model.INSTANCE, born, owner, host)
    project = owner[0]
    flavor = rng.choice(model_public_flavors())
    phases = res.phases

    def phase(at: float, vm: str, task: str | None, size: int | None = None) -> None:
        phases.append(Phase(at, vm, task, vm, project, flavor if size is None else size))

    if pre:
        vm = _pick(rng, ("active", "stopped", "shelved_offloaded"), (80, 12, 8))
        phase(born, vm, None)
        t = max(born, b.start)
    else:
        phase(born, "building", "scheduling")
        b.note(res, born, "compute.instance.create.start")
        phase(born + b.secs(2, 8), "building", "spawning")
        t = born + b.secs(20, 180)
        res.ready_at = t
        phase(t, "active", None)
        b.note(res, t, "compute.instance.create.end")
    vm = phases[-1].status
    while True:
        t, dying = _ops_until(b, t, death)
        if math.isinf(t):
            break
        if dying:
            phase(t, vm, "deleting")
            b.note(res, t, "compute.instance.delete.start")
            t += b.secs(3, 20)
            res.deleted_at = t
            b.note(res, t, "compute.instance.delete.end")
            break
        if vm == "active":
            op = _pick(rng, ("power_off", "resize", "shelve"), (40, 35, 25))
        elif vm == "stopped":
            op = _pick(rng, ("power_on", "resize"), (80, 20))
        else:
            op = "unshelve"
        if op == "power_off":
            phase(t, vm, "powering-off")
            b.note(res, t, "compute.instance.power_off.start")
            t += b.secs(5, 30)
            vm = "stopped"
            phase(t, vm, None)
            b.note(res, t, "compute.instance.power_off.end")
        elif op == "power_on":
            phase(t, vm, "powering-on")
            b.note(res, t, "compute.instance.power_on.start")
            t += b.secs(5, 30)
            vm = "active"
            phase(t, vm, None)
            b.note(res, t, "compute.instance.power_on.end")
        elif op == "shelve":
            phase(t, vm, "shelving")
            b.note(res, t, "compute.instance.shelve.start")
            t += b.secs(5, 20)
            phase(t, vm, "shelving_image_uploading")
            t += b.secs(20, 240)
            phase(t, "shelved", "shelving_offloading")
            b.note(res, t, "compute.instance.shelve.end")
            b.note(res, t, "compute.instance.shelve_offload.start")
            t += b.secs(5, 30)
            vm = "shelved_offloaded"
            phase(t, vm, None)
            b.note(res, t, "compute.instance.shelve_offload.end")
        elif op == "unshelve":
            phase(t, vm, "unshelving")
            b.note(res, t, "compute.instance.unshelve.start")
            t += b.secs(30, 180)
            vm = "active"
            phase(t, vm, None)
            b.note(res, t, "compute.instance.unshelve.end")
        else:
            t, flavor = _resize(b, res, phase, t, vm, flavor)
    b.add(res)


_PUBLIC_FLAVORS = [i for i, f in enumerate(model.FLAVORS) if f.is_public]


def model_public_flavors() -> list[int]:
    return _PUBLIC_FLAVORS


def _resize(b: _Builder, res: Resource, phase: Callable[..., None], t: float, vm: str,
            flavor: int) -> tuple[float, int]:
    """A resize, then its confirm or revert: returns (end instant, flavor after)."""
    rng = b.rng
    new = rng.choice([f for f in model_public_flavors() if f != flavor])
    phase(t, vm, "resize_prep")
    b.note(res, t, "compute.instance.resize.prep.start")
    b.note(res, t + 1.0, "compute.instance.resize.prep.end")
    t += b.secs(3, 10)
    phase(t, vm, "resize_migrating")
    b.note(res, t, "compute.instance.resize.start")
    t += b.secs(30, 200)
    phase(t, vm, "resize_migrated")
    b.note(res, t, "compute.instance.resize.end")  # Tally skips this one
    t += b.secs(2, 10)
    phase(t, vm, "resize_finish", new)
    b.note(res, t, "compute.instance.finish_resize.start")
    t += b.secs(10, 60)
    phase(t, "resized", None, new)
    b.note(res, t, "compute.instance.finish_resize.end")
    t += b.secs(300, 7200)
    if rng.random() < 0.8:
        phase(t, "resized", "resize_confirming", new)
        b.note(res, t, "compute.instance.resize.confirm.start")
        t += b.secs(3, 20)
        phase(t, vm, None, new)
        b.note(res, t, "compute.instance.resize.confirm.end")
        return t, new
    phase(t, "resized", "resize_reverting", new)
    b.note(res, t, "compute.instance.resize.revert.start")
    t += b.secs(30, 120)
    phase(t, vm, None, flavor)
    b.note(res, t, "compute.instance.resize.revert.end")
    return t, flavor


# --- cinder ----------------------------------------------------------------------------


def volume(b: _Builder, born: float, death: float | None, pre: bool, owner: Owner,
           projects: list[Project]) -> None:
    rng = b.rng
    res = b.resource(model.VOLUME, born, owner, f"cinder-{rng.randrange(1, 9)}@lvmdriver-1#lvm")
    phases = res.phases
    size = (_pick(rng, VOLUME_SIZES, VOLUME_SIZE_WEIGHTS),
            _pick(rng, range(len(model.VOLUME_TYPES)), (30, 40, 25, 5)))
    project = owner[0]

    def phase(at: float, status: str, state: str, attached: str | None = None) -> None:
        phases.append(Phase(at, status, None, state, project, size, attached))

    if pre:
        in_use = rng.random() < 0.5
        phase(born, "in-use" if in_use else "available", "in-use" if in_use else "available",
              b.uuid() if in_use else None)
        t = max(born, b.start)
    else:
        how = _pick(rng, ("create", "image", "manage"), (92, 6, 2))
        if how == "manage":
            phase(born, "managing", "managing")
            b.note(res, born, "volume.manage_existing.start")
        else:
            phase(born, "creating", "creating")
            b.note(res, born, "volume.create.start")
            if how == "image":
                phase(born + b.secs(2, 5), "downloading", "creating")
        t = born + b.secs(5, 60) + (b.secs(20, 180) if how == "image" else 0.0)
        res.ready_at = t
        phase(t, "available", "available")
        b.note(res, t, "volume.manage_existing.end" if how == "manage" else "volume.create.end")
    while True:
        t, dying = _ops_until(b, t, death)
        if math.isinf(t):
            break
        status = phases[-1].status
        if status == "in-use":
            server = phases[-1].attached
            phase(t, "detaching", "in-use", server)
            b.note(res, t, "volume.detach.start")
            t += b.secs(2, 10)
            phase(t, "available", "available")
            b.note(res, t, "volume.detach.end")
            if not dying:
                continue
            t += 1.0
        if dying:
            phase(t, "deleting", "available")
            b.note(res, t, "volume.delete.start")
            t += b.secs(3, 30)
            res.deleted_at = t
            b.note(res, t, "volume.delete.end")
            break
        op = _pick(rng, ("attach", "extend", "retype", "transfer", "backup", "upload",
                          "restore"), (30, 15, 10, 8, 12, 5, 5))
        if op == "attach":
            server = b.uuid()
            phase(t, "reserved", "available", server)
            t += b.secs(1, 3)
            phase(t, "attaching", "available", server)
            b.note(res, t, "volume.attach.start")
            t += b.secs(2, 10)
            phase(t, "in-use", "in-use", server)
            b.note(res, t, "volume.attach.end")
        elif op == "extend":
            phase(t, "extending", "available")
            b.note(res, t, "volume.resize.start")
            t += b.secs(5, 30)
            size = (size[0] + rng.choice((1, 5, 10, size[0])), size[1])
            phase(t, "available", "available")
            b.note(res, t, "volume.resize.end")
        elif op == "retype":
            phase(t, "retyping", "available")
            t += b.secs(10, 120)
            size = (size[0], rng.choice([i for i in range(len(model.VOLUME_TYPES))
                                         if i != size[1]]))
            phase(t, "available", "available")
            b.note(res, t, "volume.retype")
        elif op == "transfer":
            phase(t, "awaiting-transfer", "awaiting-transfer")
            b.note(res, t, "volume.transfer.create.start")
            b.note(res, t, "volume.transfer.create.end")
            t += b.secs(60, 6 * 3600)
            b.note(res, t, "volume.transfer.accept.start")
            project = _another_project(rng, projects, project)
            phase(t, "available", "available")
            b.note(res, t, "volume.transfer.accept.end")
        else:
            transitional = {"backup": "backing-up", "upload": "uploading",
                            "restore": "restoring-backup"}[op]
            phase(t, transitional, "available")
            t += b.secs(30, 600)
            phase(t, "available", "available")
    b.add(res)


def _another_project(rng: Any, projects: list[Project], current: str) -> str:
    if len(projects) < 2:
        return current
    while True:  # O(1) expected, where filtering the list would be O(projects)
        choice = rng.choice(projects).id
        if choice != current:
            return str(choice)


# --- neutron ---------------------------------------------------------------------------


def floating_ip(b: _Builder, born: float, death: float | None, pre: bool, owner: Owner,
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
        t, dying = _ops_until(b, t, death)
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


def image(b: _Builder, born: float, death: float | None, pre: bool, owner: Owner,
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
        t, dying = _ops_until(b, t, death)
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


def loadbalancer(b: _Builder, born: float, death: float | None, pre: bool, owner: Owner,
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
        t, dying = _ops_until(b, t, death)
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


BUILDERS: dict[str, Callable[..., Any]] = {
    model.INSTANCE: instance,
    model.VOLUME: volume,
    model.FLOATING_IP: floating_ip,
    model.IMAGE: image,
    model.LOADBALANCER: loadbalancer,
}
