"""The world a generated month is built into, and what it is made of.

``simcloud.generator`` draws the population and hands each resource to its type's
state machine (``simcloud.lifecycles``), which records phases and notifications on
the :class:`Builder`.  Nothing here does I/O.
"""

from __future__ import annotations

import math
import random
import uuid
from typing import NamedTuple

from simcloud.config import WorldConfig
from simcloud.model import Resource

DAY = 86400.0


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
    # The keystone domain holding the project (GET /v3/projects).
    domain_id: str = "default"


class Builder:
    """The world being built: the seeded generator, the resources and their notes;
    each resource type's state machine (``simcloud.lifecycles``) writes into it."""


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
