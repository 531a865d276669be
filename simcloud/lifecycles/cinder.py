"""cinder: create (or manage), attach/detach, extend, retype, transfer, backup, delete."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from simcloud import model
from simcloud.lifecycles.common import Owner, another_project, ops_until, pick
from simcloud.model import Phase

if TYPE_CHECKING:
    from simcloud.builder import Builder, Project

VOLUME_SIZES = (1, 5, 10, 20, 50, 100, 200, 500)
VOLUME_SIZE_WEIGHTS = (5, 10, 20, 20, 15, 15, 10, 5)


def volume(b: Builder, born: float, death: float | None, pre: bool, owner: Owner,
           projects: list[Project]) -> None:
    rng = b.rng
    res = b.resource(model.VOLUME, born, owner, f"cinder-{rng.randrange(1, 9)}@lvmdriver-1#lvm")
    phases = res.phases
    size = (pick(rng, VOLUME_SIZES, VOLUME_SIZE_WEIGHTS),
            pick(rng, range(len(model.VOLUME_TYPES)), (30, 40, 25, 5)))
    project = owner[0]

    def phase(at: float, status: str, state: str, attached: str | None = None) -> None:
        phases.append(Phase(at, status, None, state, project, size, attached))

    if pre:
        in_use = rng.random() < 0.5
        phase(born, "in-use" if in_use else "available", "in-use" if in_use else "available",
              b.uuid() if in_use else None)
        t = max(born, b.start)
    else:
        how = pick(rng, ("create", "image", "manage"), (92, 6, 2))
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
        t, dying = ops_until(b, t, death)
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
        op = pick(rng, ("attach", "extend", "retype", "transfer", "backup", "upload",
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
            project = another_project(rng, projects, project)
            phase(t, "available", "available")
            b.note(res, t, "volume.transfer.accept.end")
        else:
            transitional = {"backup": "backing-up", "upload": "uploading",
                            "restore": "restoring-backup"}[op]
            phase(t, transitional, "available")
            t += b.secs(30, 600)
            phase(t, "available", "available")
    b.add(res)
