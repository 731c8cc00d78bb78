"""Who did what in one request: agents, their order and the handoffs between them, read from
the tree of LangChain runs the recorder saw (:mod:`agenteval_cli.trace.recorder`).

**Agents.** An agent is a *named* agent, not a graph node. Walking from the request's root
down, a run opens a new agent level when it is

- a run whose ``lc_agent_name`` (set by ``langchain.agents.create_agent(name=...)``) is set
  and differs from its parent's: the boundary upstream uses for sub-agents;
- a compiled graph run inside another graph, named (``create_react_agent(name=...)``,
  ``compile(name=...)``); a node whose body is such a graph and nothing else takes the
  graph's name;
- a node (task) of a graph that coordinates agents, named after the node. The nodes of a
  single agent's own graph (``agent``/``tools``/``model``, middleware hooks) are its steps.

Plumbing never names an agent: a step node (``model``, ``tools``, ``<Middleware>.<hook>``...)
opens no level of its own. An unnamed single agent invoked directly is the target's own agent,
named after the target (``own``); a step node among a graph's agents belongs to the agent that
ran in the step before it (a supervisor's own ``tools`` node), else to the graph's agent.

So every model and tool call has an agent *path*, outer to inner (``money_team > account``).
An agent level opened inside a tool run makes that tool a delegation (an agent called as a
tool), not an ordinary tool.

**Order.** Calls are ordered by the graph's own structure, never by callback timing: a
graph's tasks by superstep, tasks of one superstep as parallel branches (in a fixed order),
and the runs inside one task by start, runs that overlapped in time being parallel.

**Handoffs.** Each change of agent along that order is a handoff; a fan-out to ``k``
branches is ``k`` handoffs and so is the join. A handoff is explained by what the graph did:
a handoff tool's destination (its metadata or the ``Command(goto=...)`` it returned), a
node's ``Command(goto=...)``, an agent run as a tool, else the graph's edges.

**Coordinators** regain control by design: agents declared so (in the spec, or found in the
graph when the target is loaded: :func:`graph_coordinators`, and the agents whose tools run
agents, :mod:`agenteval_cli.trace.agent_tools`), nodes that other nodes reach
by a fixed edge (langgraph-supervisor's supervisor, a router), agents that call agents as
tools, and an agent that handed off explicitly and got control back by an edge.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter, gt
from typing import Any

from agenteval_cli.core.records import AGENT_TOOL, HANDOFF, Handoff

__all__ = ["Attribution", "RunNode", "attribute", "command_destinations"]

# A compiled graph that was given no name is called this.
DEFAULT_GRAPH_NAME = "LangGraph"
# Nodes of one agent's own graph: create_react_agent's and create_agent's (whose middleware
# hooks are named "<Middleware>.<hook>").
AGENT_STEP_NODES = frozenset(
    {"agent", "tools", "model", "pre_model_hook", "post_model_hook", "generate_structured_response"}
)
# The target's own agent when neither its graph nor the caller gives it a name.
OWN_AGENT = "agent"


def is_step_node(node: str | None) -> bool:
    """A node of one agent's own graph: a step of that agent, never an agent itself."""
    return node is not None and (node in AGENT_STEP_NODES or "." in node)


def _is_task(run: RunNode) -> bool:
    """A graph's node run (a task): it starts a checkpoint namespace of its own."""
    parent = run.parent
    return (
        run.namespace is not None
        and parent is not None
        and parent.namespace != run.namespace
        and run.node is not None
    )


def _opens_lc_agent(run: RunNode) -> bool:
    """A run whose lc_agent_name is set and is not its parent's: a new agent's."""
    parent_lc = run.parent.lc_name if run.parent is not None else None
    return run.lc_name is not None and run.lc_name != parent_lc


@dataclass(eq=False, slots=True)
class RunNode:
    """One LangChain run as the recorder saw it start (and end)."""

    parent: RunNode | None
    kind: str  # "chain", "model" or "tool"
    name: str
    seq: int  # start order within the request
    namespace: str | None = None  # langgraph_checkpoint_ns
    node: str | None = None  # langgraph_node
    step: int | None = None  # langgraph_step
    branch: str = ""  # langgraph_path, which tells parallel tasks of a step apart
    lc_name: str | None = None  # lc_agent_name in the run's metadata (children inherit it)
    # Runs below it, and the nodes a Command it returned sends control to (a list once
    # there is one; most runs have neither, so they start as the shared empty tuple).
    children: Sequence[RunNode] = ()
    end: int | None = None  # the order of its end among the request's events
    goto: Sequence[str] = ()
    destination: str | None = None  # a handoff tool's declared destination
    turn: int | None = None  # a tool run: the model call (its seq) that asked for it
    active: str | None = None  # the agent a declared state key names (a task, a tool run)

    # properties over plain functions, which the walk calls without a property's lookup
    is_task = property(_is_task)
    opens_lc_agent = property(_opens_lc_agent)


def command_destinations(value: Any) -> list[str]:
    """The nodes a ``Command(goto=...)`` (or a list holding Commands) sends control to."""
    if isinstance(value, (list, tuple)):  # a node's list of updates
        return [d for item in value if type(item).__name__ == "Command" for d in _goto(item)]
    return _goto(value) if type(value).__name__ == "Command" else []


def _goto(command: Any) -> list[str]:
    goto = getattr(command, "goto", None)
    if not goto:  # Command's default: no destination
        return []
    if type(goto) is str:  # one node by name: the usual case
        return [] if goto.startswith("__") else [goto]  # not __end__
    items = goto if isinstance(goto, (list, tuple)) else (goto,)
    names = []
    for item in items:
        if type(item).__name__ == "Send":
            item = getattr(item, "node", None)
        if isinstance(item, str) and item and not item.startswith("__"):  # not __end__
            names.append(item)
    return names


@dataclass
class Attribution:
    """The result of :func:`attribute`."""

    paths: dict[int, list[str]]  # id(RunNode) -> agent path, for model and tool runs
    agent_path: list[str]
    handoffs: list[Handoff]
    coordinators: list[str]
    delegations: dict[int, str]  # id(tool RunNode) -> the agent it ran
    handoff_targets: dict[int, str]  # id(tool RunNode) -> the agent it handed off to
    aliases: dict[str, str]  # node name -> the agent it runs, where they differ
    # per handoff, the target's first model run of its own (no hook's helper call), or None
    receivers: list[RunNode | None] = field(default_factory=list)


@dataclass(eq=False, slots=True)
class _Activation:
    """A stretch of consecutive model calls by one agent."""

    path: tuple[str, ...]
    run: RunNode | None = None  # the model run it starts with
    order: int = 0  # position in the graph's order
    merged: _Activation | None = None  # the stretch this one continues
    came_from: list[int] = field(default_factory=list)  # the links (by place) that led here


# The model calls below a run: (entries, exits, flat), the activations control enters them by
# and leaves them from (several where branches ran side by side), and all of them in order. A
# plain tuple, as one is made for every model call.
_Ran = tuple[list[_Activation], list[_Activation], list[_Activation]]


def _found(items: list[_Ran | None]) -> list[_Ran]:
    """The items below which a model was called."""
    return [item for item in items if item is not None]


def _par(items: list[_Ran | None]) -> _Ran | None:
    """Items that ran side by side: control enters and leaves each of them."""
    found = _found(items)
    if len(found) < 2:
        return found[0] if found else None
    entries: list[_Activation] = []
    exits: list[_Activation] = []
    flat: list[_Activation] = []
    for item_entries, item_exits, item_flat in found:
        entries += item_entries
        exits += item_exits
        flat += item_flat
    return entries, exits, flat


@dataclass(slots=True)
class _Intent:
    """An explicit passing of control: by a handoff tool, a Command or an agent tool."""

    source: tuple[str, ...]
    destination: str
    tool: str
    via: str


_by_seq = attrgetter("seq")
_by_name = attrgetter("name", "seq")


def _task_order(attempts: list[RunNode]) -> tuple[str, str]:
    """Tasks of one superstep as parallel branches, in a fixed order."""
    return attempts[0].branch, attempts[0].node or ""


def _one_agent(run: RunNode) -> bool | None:
    """None for a run that is no graph; for a graph, whether it is one agent: its nodes are
    one agent's steps, not agents of their own, or it opens an agent by lc_agent_name."""
    one: bool | None = None
    for child in run.children:
        if _is_task(child):
            if not is_step_node(child.node):
                one = False
                break
            one = True
    return _opens_lc_agent(run) if one is False else one


def attribute(
    roots: Sequence[RunNode], declared: Iterable[str] = (), own: str | None = None
) -> Attribution:
    """Resolve agent paths, order, handoffs and coordinators over the request's run trees.
    ``own`` names the target's own agent where its graph names none (the target's name)."""
    resolver = _Resolver(set(declared), own or OWN_AGENT)
    for root in roots:
        resolver.walk(root)
    return resolver.finish(sorted(roots, key=_by_seq))


class _Resolver:
    """One walk over the runs gives every run its agent path on the way down and, on the way
    up (children before parents), the order of the model calls below it, the handoffs linked
    as the order is built. What explains each handoff is read at the end, once every tool's
    and Command's intent and every node's alias is known."""

    def __init__(self, declared: set[str], own: str = OWN_AGENT) -> None:
        self.declared = declared
        self.own = own  # the target's own agent, where its graph names none
        self.paths: dict[RunNode, tuple[str, ...]] = {}  # run -> its agent path
        self.delegations: dict[int, str] = {}
        self.handoff_targets: dict[int, str] = {}
        self.aliases: dict[str, str] = {}
        self.intents: list[_Intent] = []
        self.coordinators: dict[str, None] = {}
        # control passing from an activation to the next, in the order found: (from, to,
        # whether branches ran side by side)
        self.links: list[tuple[_Activation, _Activation, bool]] = []
        # runs (hashed by identity) ->
        self.graphs: dict[RunNode, bool] = {}  # a graph run -> whether it is one agent
        self.callers: dict[RunNode, list[RunNode]] = {}  # a run -> its children calling a model
        self.ran: dict[RunNode, _Ran] = {}  # a run -> the model calls below it, in order

    # -- agent paths ---------------------------------------------------------------------

    def walk(self, root: RunNode) -> None:
        """Give ``root`` and the runs below it their agent paths, each run's before its
        children's, and order each run once the runs below it are done. On a list, not
        Python's stack: traces nest deeper than Python recurses. A run is on the list with
        its parent's path and ``renamable`` to be entered, with its own path and None to be
        left; a run with no children is left as soon as it is entered.

        ``renamable``: the path's last level was opened by a node whose body this run is
        part of (no tool between), so a named graph found here names that node's agent."""
        paths = self.paths
        callers = self.callers
        ran = self.ran
        graphs = self.graphs
        stack: list[tuple[RunNode, tuple[str, ...], bool | None]] = [(root, (), False)]
        pop, push = stack.pop, stack.append
        while stack:
            run, path, renamable = pop()
            kind = run.kind
            parent = run.parent
            children = run.children
            if renamable is not None:  # entered: its agent path, from its parent's
                if kind == "tool":
                    renamable = False
                elif kind == "model" and not path:  # a model called outside any graph
                    path = (run.name,)
                if children:
                    one = _one_agent(run)
                    if one is not None:
                        graphs[run] = one
                lc_name = run.lc_name
                if lc_name and (parent is None or lc_name != parent.lc_name):  # a new lc agent
                    path, renamable = self._open(path, lc_name, renamable), False
                elif (
                    children
                    and parent is not None
                    and run.name != DEFAULT_GRAPH_NAME
                    and run in graphs
                ):
                    path, renamable = self._open(path, run.name, renamable), False
                if parent is not None and _is_task(run):  # a task of the graph run ``parent``
                    # a step of one agent's graph, inside that agent, stays its parent's
                    if not path or run.active is not None or not graphs.get(parent):
                        path, renamable = self._task(run, parent, path, renamable)
                elif kind == "tool" and run.active is not None:
                    # the target's declared state key says which agent this tool works as
                    path, renamable = (*path[:-1], run.active), False
                paths[run] = path
                if children:
                    push((run, path, None))
                    for child in reversed(children):
                        push((child, path, renamable))
                    continue
            # left: the runs below it are done
            if kind == "tool":
                self._tool_done(run, path)
            elif run.goto and _is_task(run):
                self._command(run, path)
            if kind == "model":
                if path:
                    alone = [_Activation(path, run)]
                    ran[run] = (alone, alone, alone)
            else:
                below = callers.pop(run, None) if children else None
                if below is None:  # no model call below it: it passes no control
                    continue
                if (
                    len(below) == 1
                    and run not in graphs
                    and not (kind == "chain" and run.name.startswith("RunnableParallel"))
                ):  # a wrapper of one run that calls: what that run ran
                    found = ran.get(below[0])
                else:
                    found = self._order(run, below)
                if found is not None:
                    ran[run] = found
            if parent is not None:  # a model call is in it
                siblings = callers.get(parent)
                if siblings is None:
                    callers[parent] = [run]
                else:
                    siblings.append(run)

    def _task(
        self, run: RunNode, graph: RunNode, path: tuple[str, ...], renamable: bool
    ) -> tuple[tuple[str, ...], bool]:
        """The agent path of a task of ``graph``: an agent of its own where the graph's
        nodes are agents, else the agent its step works for."""
        one = self.graphs.get(graph)
        node = run.node or ""
        if not (_one_agent(graph) if one is None else one):
            if is_step_node(node):  # a step among agents: whose step
                path = self._step_owner(run, graph, path)
            else:
                path = self._open(path, node or run.name, False)
                renamable = self._wraps_one_agent(run)
        elif not path:  # the invoked graph is one agent: its name, or the target's
            named = graph.lc_name or (graph.name if graph.name != DEFAULT_GRAPH_NAME else "")
            path = (named or self.own,)
        if run.active is not None:
            # the target's declared state key says which agent this task works as
            path, renamable = (*path[:-1], run.active), False
        return path, renamable

    def _tool_done(self, run: RunNode, path: tuple[str, ...]) -> None:
        """What a tool run passed on, once the runs below it have their paths: the agent it
        ran (the first found below it), the handoff it made."""
        for child in run.children:
            deeper = self._deeper_agent(child, path)
            if deeper is not None:
                self.delegations[id(run)] = deeper
                break
        self._tool_intent(run, path)

    def _command(self, task: RunNode, path: tuple[str, ...]) -> None:
        """The handoffs a task's ``Command(goto=...)`` made."""
        for destination in task.goto:
            self.intents.append(_Intent(path, destination, "", "command"))

    def _open(self, path: tuple[str, ...], name: str, renamable: bool) -> tuple[str, ...]:
        if path and path[-1] == name:
            return path
        if renamable and path:
            self.aliases[path[-1]] = name
            return (*path[:-1], name)
        return (*path, name)

    def _step_owner(self, task: RunNode, graph: RunNode, path: tuple[str, ...]) -> tuple[str, ...]:
        """The agent a step node among a graph's agents works for: the agent node that ran
        in the latest earlier superstep (the model node its ``tools`` node serves), else
        the agent the graph itself is part of (the target's own at the top)."""
        step = task.step or 0
        latest: RunNode | None = None
        latest_key = (0, 0)
        for child in graph.children:
            if not _is_task(child) or is_step_node(child.node):
                continue
            key = (child.step or 0, child.seq)
            if key[0] < step and (latest is None or key > latest_key):
                latest, latest_key = child, key
        if latest is not None:
            node = latest.node or latest.name
            return self._open(path, self.aliases.get(node, node), False)
        return path or (self.own,)

    def _wraps_one_agent(self, task: RunNode) -> bool:
        """A node whose body is one agent and nothing else (no model call of its own, no
        second agent): that agent names the node's level. An agent starts at a run with a
        new lc_agent_name or at a named graph."""
        agents = 0
        stack = list(task.children)
        while stack:
            run = stack.pop()
            if run.kind == "model":
                return False
            if _opens_lc_agent(run) or (
                run.name != DEFAULT_GRAPH_NAME and _one_agent(run) is not None  # a named graph
            ):
                agents += 1
                continue
            stack.extend(run.children)
        return agents == 1

    def _deeper_agent(self, run: RunNode, path: tuple[str, ...]) -> str | None:
        """The first agent below ``path`` that made a model call in ``run``'s subtree."""
        paths = self.paths
        depth = len(path)
        stack = [run]
        while stack:
            current = stack.pop()
            if current.kind == "model":
                inner = paths.get(current, path)
                if len(inner) > depth and inner[:depth] == path:
                    return inner[depth]
            stack.extend(reversed(current.children))
        return None

    def _tool_intent(self, tool: RunNode, path: tuple[str, ...]) -> None:
        delegated = self.delegations.get(id(tool))
        if delegated is not None:
            self.intents.append(_Intent(path, delegated, tool.name, "agent_tool"))
            if path:
                self.coordinators.setdefault(path[-1], None)
            return
        for destination in [tool.destination, *tool.goto]:
            if destination:
                self.intents.append(_Intent(path, destination, tool.name, "tool"))
                self.handoff_targets.setdefault(id(tool), destination)

    # -- order ---------------------------------------------------------------------------

    def _order(self, run: RunNode, callers: list[RunNode]) -> _Ran | None:
        """What ran below ``run`` (``callers``: its children with a model call below them, in
        order), in the graph's order: its model calls' stretches (an activation each), their
        handoffs recorded as they follow one another."""
        ran = self.ran.get
        # A graph's tasks run by superstep. The functional API's tasks (children of the
        # entrypoint's task) all say step 0: they are ordered like any other runs.
        if run in self.graphs and not _is_task(run):
            by_step: dict[int, list[RunNode]] = {}  # its tasks by superstep
            starts: list[int] = []  # what ran below its children, by where it starts
            items: list[_Ran] = []
            for child in run.children:
                if _is_task(child):
                    step = child.step or 0
                    tasks = by_step.get(step)
                    if tasks is None:
                        by_step[step] = [child]
                    else:
                        tasks.append(child)
                else:
                    found = ran(child)
                    if found is not None:
                        starts.append(child.seq)
                        items.append(found)
            for tasks in by_step.values():
                if len(tasks) == 1:
                    found = ran(tasks[0])
                    first = tasks[0].seq
                else:
                    found = self._superstep(tasks)
                    first = min(map(_by_seq, tasks))
                if found is not None:
                    starts.append(first)
                    items.append(found)
            if len(items) < 2:
                return items[0] if items else None
            if any(map(gt, starts, starts[1:])):  # not in order yet
                places = sorted(range(len(starts)), key=starts.__getitem__)
                items = [items[place] for place in places]
            return self._seq(items)
        if run.kind == "chain" and run.name.startswith("RunnableParallel"):
            # its branches run side by side, whether or not they overlapped this time
            return _par([ran(c) for c in sorted(run.children, key=_by_name)])
        if len(callers) == 1:  # a wrapper of one run that calls: what that run ran
            return ran(callers[0])
        return self._seq(_found([self._group(group) for group in self._groups(callers)]))

    def _superstep(self, tasks: list[RunNode]) -> _Ran | None:
        """Tasks of one superstep: parallel branches, in a fixed order; one task's runs
        (one namespace) are its attempts (a retry policy), in turn."""
        ran = self.ran.get
        by_task: dict[str | None, list[RunNode]] = {}
        for task in tasks:
            attempts = by_task.get(task.namespace)
            if attempts is None:
                by_task[task.namespace] = [task]
            else:
                attempts.append(task)
        branches = []
        for attempts in sorted(by_task.values(), key=_task_order):
            if len(attempts) == 1:
                branches.append(ran(attempts[0]))
            else:
                branches.append(self._seq(_found([ran(a) for a in sorted(attempts, key=_by_seq)])))
        return _par(branches)

    def _groups(self, calling: list[RunNode]) -> list[list[RunNode]]:
        """Children that call a model, by start, in groups of those that ran at once
        (overlapped in time, or were asked for by one model turn). A run holding no model
        call passes no control: it never makes the runs it overlaps parallel (a wrapper such
        as with_fallbacks whose attempts LangChain reports beside it), so it is not here."""
        groups: list[list[RunNode]] = []
        group: list[RunNode] = []
        latest_end = -1
        for child in sorted(calling, key=_by_seq):
            turn = child.turn
            end = child.end if child.end is not None else 1 << 62
            if group and (child.seq < latest_end or (turn is not None and turn == group[-1].turn)):
                group.append(child)  # at once, or one turn's calls
                latest_end = max(latest_end, end)
            else:
                group = [child]
                groups.append(group)
                latest_end = end
        return groups

    def _group(self, group: list[RunNode]) -> _Ran | None:
        if len(group) == 1:
            return self.ran.get(group[0])
        return _par([self.ran.get(c) for c in sorted(group, key=_by_name)])

    def _seq(self, items: list[_Ran]) -> _Ran | None:
        """Items that ran one after the other: each one's exits hand control to the next
        one's entries."""
        if len(items) < 2:
            return items[0] if items else None
        flat: list[_Activation] = []
        exits: list[_Activation] | None = None
        links = self.links
        for entries, item_exits, item_flat in items:
            if exits is None:
                pass
            elif len(exits) == 1 and len(entries) == 1:  # one stretch to the next
                source, target = exits[0], entries[0]
                if source.path == target.path:  # the same agent goes on: no handoff
                    _root(target).merged = _root(source)
                else:
                    _root(target).came_from.append(len(links))
                    links.append((source, target, False))
            else:
                self._link(exits, entries)
            flat += item_flat
            exits = item_exits
        return items[0][0], items[-1][1], flat

    def finish(self, roots: list[RunNode]) -> Attribution:
        whole = self._seq(_found([self.ran.get(root) for root in roots]))
        flat = whole[2] if whole is not None else []
        for order, activation in enumerate(flat):
            activation.order = order
        # Handoffs in the graph's order; each names the handoffs that led to its source.
        links = self.links
        handoffs = []
        receivers = []
        if links:
            ranked = sorted([(t.order, s.order, i) for i, (s, t, _) in enumerate(links)])
            place = [0] * len(links)
            for rank, (_, _, i) in enumerate(ranked):
                place[i] = rank
            for _, _, i in ranked:
                source, target, parallel = links[i]
                tool, via = self._cause(source, target)
                handoff = Handoff(source.path[-1], target.path[-1], tool, via, parallel)
                came_from = _root(source).came_from
                if came_from:
                    handoff.after = sorted([place[j] for j in came_from])
                handoffs.append(handoff)
                receivers.append(_receiver(target, flat))
        coordinators = dict.fromkeys(self.declared)
        coordinators.update(self.coordinators)
        handed: set[tuple[str, str]] = set()  # (from, to) of the explicit handoffs so far
        for handoff in handoffs:
            if handoff.via in ("tool", "command"):
                handed.add((handoff.source, handoff.target))
            elif (handoff.target, handoff.source) in handed:  # back by the graph's design
                coordinators.setdefault(handoff.target, None)
        # consecutive calls by one agent are one step; two agents of one name in different
        # teams (each team's "supervisor") stay two
        steps = []
        names = set()
        previous: tuple[str, ...] | None = None
        for activation in flat:
            agent = activation.path[-1]
            names.add(agent)
            if activation.path != previous:
                steps.append(agent)
                previous = activation.path
        paths = self.paths
        return Attribution(
            paths={id(run): [*path] for run, path in paths.items()},
            agent_path=steps,
            handoffs=handoffs,
            coordinators=[c for c in coordinators if c in names or c in self.declared],
            delegations=self.delegations,
            handoff_targets=self.handoff_targets,
            aliases=self.aliases,
            receivers=receivers,
        )

    def _link(self, sources: list[_Activation], targets: list[_Activation]) -> None:
        """Control passes from ``sources`` (what just ran) to ``targets`` (what runs next)."""
        continuing = {a.path: a for a in sources}
        fresh = []
        for target in targets:
            same = continuing.get(target.path)
            if same is not None:  # the same agent goes on: no handoff
                _root(target).merged = _root(same)
            else:
                fresh.append(target)
        if not fresh:
            return
        going_on = {t.path for t in targets}
        ended = [s for s in sources if s.path not in going_on] or sources
        parallel = len(ended) > 1 or len(fresh) > 1
        if len(ended) == 1 or len(fresh) == 1:
            pairs = [(s, t) for s in ended for t in fresh]
        else:
            width = max(len(ended), len(fresh))
            pairs = [(ended[i % len(ended)], fresh[i % len(fresh)]) for i in range(width)]
        links = self.links
        for source, target in pairs:
            _root(target).came_from.append(len(links))
            links.append((source, target, parallel))

    def _cause(self, source: _Activation, target: _Activation) -> tuple[str, str]:
        """What passed control from ``source`` to ``target``: (tool name, via)."""
        names = target.path
        if source.path[: len(names)] == names:  # back to who called it as a tool
            delegate = source.path[len(names)]
            for intent in self.intents:
                if (
                    intent.via == "agent_tool"
                    and intent.destination == delegate
                    and intent.source == names
                ):
                    return intent.tool, "agent_tool"
        aliases = self.aliases
        for intent in self.intents:
            destination = aliases.get(intent.destination, intent.destination)
            # a team's node passes control for whichever of its members ran last
            mine = intent.source and source.path[: len(intent.source)] == intent.source
            if destination in names and mine:
                return intent.tool, intent.via
        return "", "edge"


def _receiver(target: _Activation, flat: list[_Activation]) -> RunNode | None:
    """The first model run of ``target``'s stretch made by the agent itself: a call made in a
    hook's node (a summariser's ``SummarizationMiddleware.before_model``, ``pre_model_hook``)
    helps the agent and is not its own."""
    stretch = _root(target)
    for place in range(target.order, len(flat)):
        activation = flat[place]
        run = activation.run
        if run is not None and _root(activation) is stretch and not _in_hook(run):
            return run
    return None


def _in_hook(run: RunNode) -> bool:
    """Whether a model run ran in a hook's node: a middleware's (``Name.before_model``) or
    ``create_react_agent``'s ``pre_model_hook`` / ``post_model_hook``."""
    while run.parent is not None:
        if _is_task(run):  # the node it ran in
            node = run.node or ""
            return node in ("pre_model_hook", "post_model_hook") or "." in node
        run = run.parent
    return False


def _root(activation: _Activation) -> _Activation:
    """The stretch an activation belongs to (consecutive calls by one agent are one)."""
    while activation.merged is not None:
        activation = activation.merged
    return activation


def tool_kind(
    run_id: int, attribution: Attribution, synthesized_target: str | None
) -> tuple[str, str | None]:
    """The kind of a tool call and the agent it reaches: a delegation, a handoff, or a tool."""
    delegated = attribution.delegations.get(run_id)
    if delegated is not None:
        return AGENT_TOOL, delegated
    target = attribution.handoff_targets.get(run_id)
    if target is not None:
        return HANDOFF, attribution.aliases.get(target, target)
    if synthesized_target is not None:
        return HANDOFF, synthesized_target
    return "tool", None


def graph_coordinators(graph: Any) -> list[str]:
    """Nodes of a compiled graph (and its subgraphs) that coordinate: they route onwards
    (conditional edges, or ``Command`` destinations to more than one place, ending the run
    counted: a supervisor over one agent chooses between it and the end), and other nodes
    hand control back to them by a fixed edge or by a ``Command`` that can go nowhere else
    (not even to the end), as langgraph-supervisor's supervisor, a router and the supervisor
    tutorial's do."""
    found: dict[str, None] = {}
    graphs = [graph]
    # a graph that cannot list its subgraphs still has its own edges
    with contextlib.suppress(Exception):
        graphs += [sub for _, sub in graph.get_subgraphs(recurse=True)]
    for each in graphs:
        builder = getattr(each, "builder", None) or each  # compiled, or a StateGraph
        nodes = getattr(builder, "nodes", None)
        if not isinstance(nodes, dict):
            continue
        branches = getattr(builder, "branches", {}) or {}
        ends = {name: _choices(spec) for name, spec in nodes.items()}
        returns = set(getattr(builder, "edges", set()) or set())
        returns |= {(name, *only) for name, only in ends.items() if len(only) == 1}
        routes: dict[str, set[str] | None] = {}  # where each node that routes may go
        for name in nodes:
            places: set[str] | None = set(ends[name]) if len(ends[name]) > 1 else set()
            for branch in (branches.get(name) or {}).values():
                mapping = getattr(branch, "ends", None)
                places = (
                    None
                    if places is None or not isinstance(mapping, dict)
                    else places | {str(p) for p in mapping.values()}
                )
            if places is None or places or branches.get(name):
                routes[name] = places
        found.update(dict.fromkeys(_coordinating(set(nodes), returns, routes)))
    return list(found)


def drawn_coordinators(drawing: Mapping[str, Any]) -> list[str]:
    """:func:`graph_coordinators` of a graph known only by its drawing: the JSON of
    ``graph.get_graph(xray=True)`` (``{"nodes": [{"id"}], "edges": [{"source", "target",
    "conditional"}]}``), which LangGraph's Agent Server gives for a graph it serves. A
    subgraph's nodes are drawn as ``parent:node``; an edge between levels is an edge of the
    level they share, between the nodes that hold its ends there."""
    levels: dict[tuple[str, ...], tuple[set[str], set[tuple[str, ...]], dict[str, Any]]] = {}

    def level(prefix: tuple[str, ...]) -> tuple[set[str], set[tuple[str, ...]], dict[str, Any]]:
        return levels.setdefault(prefix, (set(), set(), {}))

    for node in drawing.get("nodes") or []:
        parts = str(node.get("id", "")).split(":")
        for depth in range(len(parts)):
            level(tuple(parts[:depth]))[0].add(parts[depth])
    for edge in drawing.get("edges") or []:
        source = str(edge.get("source", "")).split(":")
        target = str(edge.get("target", "")).split(":")
        depth = 0
        while depth < min(len(source), len(target)) - 1 and source[depth] == target[depth]:
            depth += 1
        ends = (source[depth], target[depth])
        if ends[0] == ends[1]:
            continue
        nodes, returns, routes = level(tuple(source[:depth]))
        if edge.get("conditional"):
            routes.setdefault(ends[0], set()).add(ends[1])
        else:
            returns.add(ends)
    found: dict[str, None] = {}
    for nodes, returns, routes in levels.values():
        nodes -= {"__start__", "__end__"}
        # a Command that can go one place only is drawn as a conditional edge: a return
        for name, places in list(routes.items()):
            if len(places) == 1:
                returns.add((name, *places))
                del routes[name]
        found.update(dict.fromkeys(_coordinating(nodes, returns, routes)))
    return list(found)


def _coordinating(
    nodes: set[str], returns: set[tuple[str, ...]], routes: Mapping[str, set[str] | None]
) -> list[str]:
    """The coordinators of one graph: ``returns`` are its fixed edges (and ``Command`` objects
    that can go one place only), ``routes`` where each node that routes may go (None: to
    places the graph does not list)."""
    found: dict[str, None] = {}
    for source, target in returns:
        if source not in nodes or target not in nodes or source == target:
            continue
        if target in AGENT_STEP_NODES:
            continue
        if target in routes:  # it routes
            found.setdefault(target, None)
    found.update(dict.fromkeys(_dispatchers(nodes, returns, routes)))
    return list(found)


def _dispatchers(
    nodes: set[str], edges: set[tuple[str, ...]], routes: Mapping[str, set[str] | None]
) -> list[str]:
    """The entry node of a graph when it routes onwards and no other node routes to it
    (the Router pattern's classify node), and the node its routes all meet at again by
    fixed edges (the synthesize node): neither is an agent the request is routed to."""
    if any(places is None for places in routes.values()):
        return []  # a route whose destinations the graph does not list
    places_of = {name: places for name, places in routes.items() if places}
    found: list[str] = []
    entries = [edge[-1] for edge in edges if edge[0] == "__start__" and len(edge) == 2]
    for entry in entries:
        if entry not in places_of or is_step_node(entry):
            continue
        if any(entry in places for name, places in places_of.items() if name != entry):
            continue
        found.append(entry)
        routed = places_of[entry] & nodes
        for join in {edge[-1] for edge in edges if edge[0] in routed and edge[-1] in nodes}:
            sources = {edge[0] for edge in edges if edge[-1] == join}
            if len(sources) > 1 and sources <= routed and join not in places_of:
                found.append(join)
    return found


def _choices(node: Any) -> set[str]:
    """Every place a node's ``Command`` may send control, ``__end__`` included."""
    return {str(e) for e in getattr(node, "ends", None) or ()}
