"""The run order of tests/ordering.py: long tests head every worker's share, as the
installed pytest-xdist's worksteal scheduler hands the shares out."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest
from ordering import ordered, shares
from xdist.scheduler.worksteal import WorkStealingScheduling


@dataclass(eq=False)
class Item:
    nodeid: str
    markers: tuple[str, ...] = ()

    def get_closest_marker(self, name: str) -> object | None:
        return name if name in self.markers else None


@dataclass(eq=False)
class Node:
    """A worker as the scheduler sees it: the indices it is sent."""

    sent: list[int] = field(default_factory=list)
    shutting_down: bool = False
    gateway: SimpleNamespace = field(default_factory=lambda: SimpleNamespace(id="gw"))

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent.extend(indices)


@pytest.mark.parametrize(("count", "workers"), [(2582, 2), (7, 3), (10, 4), (3, 1)])
def test_the_shares_are_what_worksteal_sends_each_worker_first(count, workers):
    config = SimpleNamespace(getvalue=lambda name: [f"{workers}*popen"])
    scheduler = WorkStealingScheduling(config)  # type: ignore[arg-type]
    nodes = [Node() for _ in range(workers)]
    for node in nodes:
        scheduler.add_node(node)  # type: ignore[arg-type]
        scheduler.add_node_collection(node, [f"t{i}" for i in range(count)])  # type: ignore[arg-type]
    scheduler.schedule()
    assert [len(node.sent) for node in nodes] == shares(count, workers)
    assert [i for node in nodes for i in node.sent] == list(range(count))  # in order


def test_the_shares_split_by_hand():
    assert shares(7, 3) == [2, 2, 3]  # 7 // 3, then 5 // 2, then 3
    assert shares(2582, 2) == [1291, 1291]


def items() -> list[Item]:
    return [
        Item("a.py::q1"),
        Item("a.py::s1", ("slow",)),
        Item("b.py::q1"),
        Item("b.py::l1", ("long", "slow")),
        Item("c.py::q1"),
        Item("c.py::q2"),
        Item("c.py::s1", ("slow",)),
        Item("d.py::l1", ("long",)),
    ]


def test_on_two_workers_each_share_starts_with_a_long_test():
    # long ones dealt b.l1, d.l1, then slow ones a.s1, c.s1; the quick ones fill the shares
    # of four in order (a.q1, b.q1 | c.q1, c.q2); within a share a module stays together,
    # the module with a long test first
    run = [i.nodeid for i in ordered(items(), 2)]
    assert run == [
        "b.py::l1", "b.py::q1", "a.py::s1", "a.py::q1",
        "d.py::l1", "c.py::s1", "c.py::q1", "c.py::q2",
    ]  # fmt: skip


def test_on_one_worker_the_modules_with_long_tests_come_first():
    run = [i.nodeid for i in ordered(items(), 1)]
    assert run == [
        "b.py::l1", "b.py::q1", "d.py::l1",
        "a.py::s1", "a.py::q1", "c.py::s1", "c.py::q1", "c.py::q2",
    ]  # fmt: skip


def test_more_long_and_slow_tests_than_a_share_holds_are_all_still_run():
    many = [Item(f"m.py::l{i}", ("long",)) for i in range(5)] + [Item("m.py::q")]
    run = ordered(many, 4)  # shares of 1, 1, 2, 2
    assert sorted(i.nodeid for i in run) == sorted(i.nodeid for i in many)
    assert len(run) == len(many)
