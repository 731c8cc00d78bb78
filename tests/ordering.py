"""The order the tests run in, so that parallel workers end together.

pytest-xdist's ``worksteal`` scheduler sends each worker a share of the collection in order
(``remaining // workers left`` tests to each, its ``check_schedule``); a worker runs its
share in order, and one that runs out takes (steals) tests from the end of another's. So
what heads a share runs first and is never taken away, and the run ends on tests from the
shares' ends. The tests marked ``long`` are dealt out across the shares and head each one,
the ``slow`` ones come next, and the quick ones fill the rest in their own order: the run
ends on quick tests, not with one worker on a forty-second test while the other waits.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import islice
from typing import Protocol, TypeVar


class Test(Protocol):
    nodeid: str

    def get_closest_marker(self, name: str) -> object | None: ...


T = TypeVar("T", bound=Test)


def rank(item: Test) -> int:
    """0 for a test marked long, 1 for one marked slow, 2 for the rest."""
    return 0 if item.get_closest_marker("long") else 1 if item.get_closest_marker("slow") else 2


def shares(count: int, workers: int) -> list[int]:
    """How many of ``count`` tests each of ``workers`` is sent first, as worksteal splits."""
    sizes = []
    for left in range(workers, 0, -1):
        sizes.append(count // left)
        count -= sizes[-1]
    return sizes


def ordered(items: Sequence[T], workers: int) -> list[T]:
    """``items`` in the order to run them on ``workers`` workers. A module's tests stay
    together within a share (a fixture it keeps for the module is set up once there), led
    by the modules that hold a long test, then those that hold a slow one."""
    split: list[list[T]] = [[] for _ in range(workers)]
    dealt = 0
    for level in (0, 1):
        for item in (i for i in items if rank(i) == level):
            split[dealt % workers].append(item)
            dealt += 1
    quick = iter([i for i in items if rank(i) == 2])
    for share, size in zip(split, shares(len(items), workers), strict=True):
        share.extend(islice(quick, max(0, size - len(share))))
    split[-1].extend(quick)  # when the long and slow ones outnumber a share
    position = {id(item): index for index, item in enumerate(items)}
    result: list[T] = []
    for share in split:
        modules: dict[str, list[T]] = {}
        for item in share:
            modules.setdefault(item.nodeid.split("::")[0], []).append(item)
        groups = sorted(modules.values(), key=lambda g: (min(map(rank, g)), position[id(g[0])]))
        for group in groups:
            result.extend(sorted(group, key=lambda i: (rank(i), position[id(i)])))
    return result
