"""No import circles: no module of Tally imports itself through other modules.

A circle makes the import order decide what exists when (a name read before its
module finished loading), hides which module is the lower one, and forces imports
inside functions.  The graph is grimp's (the one import-linter checks the contracts
of pyproject.toml on), with every import counted: at module level, inside
functions and under ``TYPE_CHECKING``.  docs/developer.md "Layers" describes the
order the modules stand in.
"""

from __future__ import annotations

import grimp

PACKAGES = ("mapping", "tally_common", "collector", "reporting", "simcloud", "tallyclient",
            "tests")


def strongly_connected(graph: grimp.ImportGraph) -> list[list[str]]:
    """The groups of two or more modules that reach each other (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(
                        graph.find_modules_directly_imported_by(successor)))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        groups.append(sorted(group))
    return groups


def _described(graph: grimp.ImportGraph, group: list[str]) -> str:
    lines = [" <-> ".join(group)]
    for importer in group:
        for imported in group:
            for detail in graph.get_import_details(importer=importer, imported=imported):
                lines.append(f"    {importer}:{detail['line_number']} "
                             f"{detail['line_contents']}")
    return "\n".join(lines)


def test_the_checker_finds_a_circle() -> None:
    graph = grimp.ImportGraph()
    for name in ("pkg", "pkg.a", "pkg.b", "pkg.c", "pkg.d"):
        graph.add_module(name)
    graph.add_import(importer="pkg.a", imported="pkg.b")
    graph.add_import(importer="pkg.b", imported="pkg.c")
    graph.add_import(importer="pkg.c", imported="pkg.a")
    graph.add_import(importer="pkg.d", imported="pkg.a")
    assert strongly_connected(graph) == [["pkg.a", "pkg.b", "pkg.c"]]


def test_no_module_imports_itself_through_others() -> None:
    graph = grimp.build_graph(*PACKAGES)
    circles = strongly_connected(graph)
    assert not circles, "import circles:\n" + "\n".join(
        _described(graph, group) for group in circles)
