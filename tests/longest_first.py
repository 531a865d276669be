"""The xdist schedule of ``--dist worksteal`` with the known-long tests started first.

worksteal hands each worker a contiguous chunk of the collection and lets an idle
worker steal from the end of the longest queue; a long test stays where the
collection order put it, so one found late in a chunk (the end-to-end month behind
hundreds of others, the two-machines test queued behind the month on the same
worker) starts late and the run ends on a long tail.  Here each group of LONG
begins a worker's chunk, the groups spread over the workers longest first (each to
the worker with the fewest known seconds so far), and worksteal balances the rest
as before.  A group is every test whose node id begins with its prefix, kept
together: the tests of a module share its module-scoped fixtures (a built
virtualenv, a started keystone) only on one worker.

The seconds are a measured call plus setup of each (2026-12-03, `-n 2`, a shared
machine); they only rank the groups.  Only the order changes: every collected test
runs, on the same kind of worker, with the same fixtures.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdist.scheduler import WorkStealingScheduling

# (node id prefix, seconds); dealt by the seconds, whatever the order here.
LONG: tuple[tuple[str, float], ...] = (
    ("tests/e2e/test_reconciled_month.py", 300),
    # The first keystone test builds keystone's virtualenv on a new machine.
    ("tests/functional/keystone/test_api_tokens.py", 250),
    ("tests/functional/keystone/test_service_login.py", 200),
    ("tests/e2e/test_many_machines.py", 85),
    ("tests/functional/reporting/test_fuzz_api.py", 95),
    ("tests/functional/cli/test_client_alone.py", 50),
    ("tests/functional/demo/test_demo.py", 120),
    ("tests/functional/billing/test_close_property.py", 70),
    ("tests/functional/collector/test_crash_safety.py", 46),
    ("tests/functional/demo/test_demo_billing.py", 37),
    ("tests/functional/openstack/test_openstack_billing.py", 110),
)


def chunk_sizes(total: int, workers: int) -> list[int]:
    """The chunk each worker gets first, as ``WorkStealingScheduling.check_schedule``
    deals ``total`` pending tests to ``workers`` idle workers."""
    sizes = []
    for i in range(workers):
        size = total // (workers - i)
        sizes.append(size)
        total -= size
    return sizes


def longest_first(collection: Sequence[str], workers: int,
                  long: Sequence[tuple[str, float]] = LONG) -> list[int]:
    """The indices of ``collection`` in the order to deal them: worker i's chunk
    (``chunk_sizes``) opens with the groups of ``long`` it was given, then the rest
    in collection order."""
    sizes = chunk_sizes(len(collection), workers)
    groups: list[tuple[float, list[int]]] = []
    taken: set[int] = set()
    for prefix, seconds in long:
        members = [i for i, nodeid in enumerate(collection)
                   if nodeid.startswith(prefix) and i not in taken]
        if members:
            groups.append((seconds, members))
            taken.update(members)
    chunks: list[list[int]] = [[] for _ in range(workers)]
    load = [0.0] * workers
    placed: set[int] = set()
    for seconds, members in sorted(groups, key=lambda group: -group[0]):
        room = [w for w in range(workers) if len(chunks[w]) + len(members) <= sizes[w]]
        if not room:
            continue  # a small run: the group stays where the collection put it
        worker = min(room, key=lambda w: (load[w], w))
        chunks[worker].extend(members)
        load[worker] += seconds
        placed.update(members)
    rest = iter(i for i in range(len(collection)) if i not in placed)
    for worker, chunk in enumerate(chunks):
        chunk.extend(next(rest) for _ in range(sizes[worker] - len(chunk)))
    return [index for chunk in chunks for index in chunk]


class LongestFirstScheduling(WorkStealingScheduling):
    """worksteal, its first deal ordered by ``longest_first``."""

    def schedule(self) -> None:
        assert self.collection_is_completed
        if self.collection is not None:  # dealt already: worksteal's own rebalancing
            self.check_schedule()
            return
        if not self._check_nodes_have_same_collection():
            self.log("**Different tests collected, aborting run**")
            return
        self.collection = next(iter(self.node2collection.values()))
        self.pending[:] = longest_first(self.collection, len(self.nodes))
        if not self.collection:
            return
        self.check_schedule()
