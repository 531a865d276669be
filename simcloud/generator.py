"""Generate a seeded month of churn: every resource's phases and the notifications.

Each resource type has a small state machine.  Operations take realistic time, so a
resource spends seconds to minutes in a transition (nova task states, cinder's
transitional statuses, octavia's PENDING_*), and each step is recorded as a
:class:`~simcloud.model.Phase` plus the legacy notifications the real service sends
for it (:class:`Note`).  Nothing here does I/O; the same config gives the same world.
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

from simcloud import lifecycles, model
from simcloud.builder import Builder, Note, Project
from simcloud.config import WorldConfig
from simcloud.model import FLAVORS, VOLUME_TYPES, Phase, Resource

# Share of the live population per resource type.
TYPE_WEIGHTS = ((model.INSTANCE, 0.35), (model.VOLUME, 0.30), (model.FLOATING_IP, 0.15),
                (model.IMAGE, 0.10), (model.LOADBALANCER, 0.10))
PUBLIC_FLAVORS = [i for i, f in enumerate(FLAVORS) if f.is_public]

# Keystone domains the projects are spread over, round robin: demo (the first) and
# the admin project are in keystone's own "default".
DOMAINS = ("default", "d-acme", "d-globex")


class GeneratedWorld(NamedTuple):
    projects: list[Project]
    admin_project: Project
    resources: list[Resource]
    notes: list[Note]


def generate(config: WorldConfig) -> GeneratedWorld:
    """Build the whole simulated month for ``config``."""
    b = Builder(config)
    rng = b.rng
    n_projects = min(max(config.scale // 250, 2), 400)
    projects: list[Project] = []
    for index in range(n_projects):
        projects.append(Project(b.hexid(), "demo" if index == 0 else f"project-{index:03d}",
                                DOMAINS[index % len(DOMAINS)]))
    admin_project = Project(b.hexid(), "admin")
    users = {p.id: b.hexid() for p in projects}
    users[admin_project.id] = b.hexid()
    # A few big projects and a long tail, as real clouds have.
    cumulative = list(itertools.accumulate(1.0 / (i + 1) ** 0.6 for i in range(n_projects)))

    counts = _type_counts(config.scale)
    for kind, count in counts.items():
        for born, death, pre in b.lifetimes(count):
            project = rng.choices(projects, cum_weights=cumulative)[0]
            owner = (project.id, users[project.id])
            lifecycles.BUILDERS[kind](b, born, death, pre, owner, projects)
    notes = sorted(b.notes)  # by (at, seq): seq is unique, so nothing further is compared
    return GeneratedWorld(projects, admin_project, b.resources, notes)


def _type_counts(scale: int) -> dict[str, int]:
    if scale < len(TYPE_WEIGHTS):
        return {kind: (1 if i < scale else 0) for i, (kind, _) in enumerate(TYPE_WEIGHTS)}
    return {kind: max(1, round(scale * weight)) for kind, weight in TYPE_WEIGHTS}


__all__ = ["GeneratedWorld", "Note", "Phase", "Project", "VOLUME_TYPES", "PUBLIC_FLAVORS",
           "generate"]
