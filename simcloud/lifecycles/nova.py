"""nova: build, power off/on, resize with confirm or revert, shelve/unshelve, delete."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from simcloud import model
from simcloud.lifecycles.common import Owner, ops_until, pick
from simcloud.model import Phase, Resource

if TYPE_CHECKING:
    from simcloud.builder import Builder, Project


def instance(b: Builder, born: float, death: float | None, pre: bool, owner: Owner,
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
        vm = pick(rng, ("active", "stopped", "shelved_offloaded"), (80, 12, 8))
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
        t, dying = ops_until(b, t, death)
        if math.isinf(t):
            break
        if dying:
            phase(t, vm, "deleting")
            b.note(res, t, "compute.instance.exists")  # usage audit nova sends first
            b.note(res, t, "compute.instance.delete.start")
            t += b.secs(3, 20)
            res.deleted_at = t
            b.note(res, t, "compute.instance.delete.end")
            break
        if vm == "active":
            op = pick(rng, ("power_off", "resize", "shelve"), (40, 35, 25))
        elif vm == "stopped":
            op = pick(rng, ("power_on", "resize"), (80, 20))
        else:
            op = "unshelve"
        if op in _POWER:
            task, vm_after = _POWER[op]
            phase(t, vm, task)
            b.note(res, t, f"compute.instance.{op}.start")
            t += b.secs(5, 30)
            vm = vm_after
            phase(t, vm, None)
            b.note(res, t, f"compute.instance.{op}.end")
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


# op -> (the task_state while it runs, the vm_state it leaves)
_POWER = {"power_off": ("powering-off", "stopped"), "power_on": ("powering-on", "active")}

_PUBLIC_FLAVORS = [i for i, f in enumerate(model.FLAVORS) if f.is_public]


def model_public_flavors() -> list[int]:
    return _PUBLIC_FLAVORS


def _resize(b: Builder, res: Resource, phase: Callable[..., None], t: float, vm: str,
            flavor: int) -> tuple[float, int]:
    """A resize, then its confirm or revert: returns (end instant, flavor after)."""
    rng = b.rng
    new = rng.choice([f for f in model_public_flavors() if f != flavor])
    phase(t, vm, "resize_prep")
    b.note(res, t, "compute.instance.exists")  # notify_usage_exists in prep_resize
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
