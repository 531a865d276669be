"""Generate a seeded month of churn: every resource's phases and the notifications.

Each resource type has a small state machine.  Operations take realistic time, so a
resource spends seconds to minutes in a transition (nova task states, cinder's
transitional statuses, octavia's PENDING_*), and each step is recorded as a
:class:`~simcloud.model.Phase` plus the legacy notifications the real service sends
for it (:class:`Note`).  Nothing here does I/O; the same config gives the same world.
"""

from __future__ import annotations

import itertools
import math
import random
import uuid
from typing import NamedTuple

from simcloud import lifecycles, model
from simcloud.config import WorldConfig
from simcloud.model import FLAVORS, VOLUME_TYPES, Phase, Resource

DAY = 86400.0
# Share of the live population per resource type.
TYPE_WEIGHTS = ((model.INSTANCE, 0.35), (model.VOLUME, 0.30), (model.FLOATING_IP, 0.15),
                (model.IMAGE, 0.10), (model.LOADBALANCER, 0.10))
PUBLIC_FLAVORS = [i for i, f in enumerate(FLAVORS) if f.is_public]


class Note(NamedTuple):
    """One notification to publish: ``event_type`` about ``resource`` at ``at``.

    ``phase`` indexes the resource's phase the payload describes; ``seq`` orders
    notes of the same instant in the order the services send them.
    """

    at: float
    seq: int
    resource: int
    event_type: str
    phase: int


class Project(NamedTuple):
    id: str
    name: str


class GeneratedWorld(NamedTuple):
    projects: list[Project]
    admin_project: Project
    resources: list[Resource]
    notes: list[Note]


class _Builder:
    def __init__(self, config: WorldConfig) -> None:
        self.config = config
        self.rng = random.Random(config.seed)
        self.start = config.start.timestamp()
        self.end = config.end.timestamp()
        self.resources: list[Resource] = []
        self.notes: list[Note] = []
        self._seq = 0
        self._ops_rate = config.daily_operations / DAY

    # -- helpers -------------------------------------------------------------------

    def uuid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def hexid(self) -> str:
        return uuid.UUID(int=self.rng.getrandbits(128), version=4).hex

    def secs(self, low: float, high: float) -> float:
        return float(round(self.rng.uniform(low, high)))

    def note(self, res: Resource, at: float, event_type: str) -> None:
        """A notification about ``res`` at ``at``, describing its latest phase."""
        if at < self.start:
            return  # before the clock started: nobody was listening
        self._seq += 1
        self.notes.append(Note(at, self._seq, len(self.resources), event_type,
                               len(res.phases) - 1))

    def next_op(self, t: float) -> float:
        if self._ops_rate <= 0:
            return math.inf
        return t + float(round(self.rng.expovariate(self._ops_rate))) + 1.0

    # -- population ----------------------------------------------------------------

    def lifetimes(self, count: int) -> list[tuple[float, float | None, bool]]:
        """(created, death or None, pre-existing) for ``count`` live slots and their churn."""
        rng = self.rng
        turnover = self.config.daily_turnover
        mean_life = DAY / turnover if turnover > 0 else math.inf
        out: list[tuple[float, float | None, bool]] = []

        def death(born: float) -> float | None:
            if math.isinf(mean_life):
                return None
            d = max(born, self.start) + float(round(rng.expovariate(1.0 / mean_life))) + 60.0
            return d if d < self.end else None

        for _ in range(count):
            if self.config.empty_start:
                born = self.start + float(round(rng.uniform(0, DAY)))
                out.append((born, death(born), False))
            else:
                born = self.start - float(round(rng.uniform(60.0, 90 * DAY)))
                out.append((born, death(born), True))
        churn = round(count * turnover * self.config.days)
        for _ in range(churn):
            born = self.start + float(round(rng.uniform(0, self.end - self.start)))
            out.append((born, death(born), False))
        return out

    def add(self, res: Resource) -> None:
        res.finish()
        self.resources.append(res)

    def resource(self, kind: str, created: float, project_user: tuple[str, str],
                 host: str) -> Resource:
        return Resource(kind=kind, id=self.uuid(), name=f"{kind}-{len(self.resources):06d}",
                        user_id=project_user[1], host=host, created_at=created,
                        ready_at=created, deleted_at=None, phases=[])


def generate(config: WorldConfig) -> GeneratedWorld:
    """Build the whole simulated month for ``config``."""
    b = _Builder(config)
    rng = b.rng
    n_projects = min(max(config.scale // 250, 2), 400)
    projects: list[Project] = []
    for index in range(n_projects):
        projects.append(Project(b.hexid(), "demo" if index == 0 else f"project-{index:03d}"))
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
