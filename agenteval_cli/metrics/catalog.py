"""An experiment's metric catalog: how each of its keys reads (label, direction, format...).

A catalog is kept with its experiment (the store's ``experiments.metrics_json``), so a
report, compare or the gate reads every experiment by its own declarations, never by what
else the process happened to read: two specs may declare the same custom key differently.
The built-in metrics (:data:`agenteval_cli.metrics.registry.METRICS`) fill in the keys an
experiment did not declare; a key nobody declared is a higher-is-better number.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from agenteval_cli.metrics import registry
from agenteval_cli.metrics.info import format_value
from agenteval_cli.metrics.registry import MetricInfo

CATALOG_FORMAT = 1  # the shape of a stored catalog (see :meth:`Catalog.to_json`)


@dataclass(frozen=True)
class Catalog:
    """The declarations of one experiment's metrics, and its per-result keys in order."""

    declared: Mapping[str, MetricInfo] = field(default_factory=dict)
    keys: tuple[str, ...] = ()  # its evaluators' per-result keys, in the spec's order

    @classmethod
    def of(cls, metrics: Iterable[MetricInfo], keys: Iterable[str] = ()) -> Catalog:
        """A catalog of ``metrics`` (a later declaration of a key replaces the earlier)."""
        return cls({m.key: m for m in metrics}, tuple(dict.fromkeys(keys)))

    def info(self, key: str) -> MetricInfo:
        """What is declared for ``key``: the experiment's, else the built-in's, else a
        higher-is-better number under its own name."""
        found = self.declared.get(key) or registry.METRICS.get(key)
        return found if found is not None else MetricInfo(key)

    def all(self) -> dict[str, MetricInfo]:
        """Every declaration in force: the built-ins in their order, then the experiment's
        other keys; the experiment's own replace the built-ins'."""
        return {**registry.METRICS, **self.declared}

    def __iter__(self) -> Iterator[MetricInfo]:
        return iter(self.all().values())

    def label(self, key: str) -> str:
        return self.info(key).label

    def higher_is_better(self, key: str) -> bool:
        return self.info(key).higher_is_better

    def is_percent(self, key: str) -> bool:
        return self.info(key).format == "percent"

    def is_quantity(self, key: str) -> bool:
        """A quantity (tokens, cost, a count) rather than an outcome: never a "failure",
        left out of disagreement."""
        return self.info(key).kind == "quantity"

    def is_binary(self, key: str) -> bool:
        """Whether ``key`` is a pass/fail outcome of each result (0 or 1): what pass@k,
        pass^k and the flaky examples are figured over. Declared, never guessed from values,
        so every experiment of a metric reads it the same way."""
        declared = self.info(key)
        return declared.binary and declared.kind == "outcome" and declared.scope == "result"

    def needs_answer(self, key: str) -> bool:
        """Whether ``key`` is null for a result with no final answer."""
        return self.info(key).needs_answer

    def fmt(self, key: str, value: float | None) -> str:
        """A value as the tables show it: percentages, token counts, dollars or numbers."""
        return format_value(self.info(key).format, value)

    def fmt_diff(self, key: str, value: float | None) -> str:
        """A signed difference in the metric's unit (percentage points for rates)."""
        if value is None:
            return "–"
        sign = "+" if value > 0 else "−" if value < 0 else "±"
        if self.is_percent(key):
            return f"{sign}{abs(value) * 100:.1f} pp"
        return sign + self.fmt(key, abs(value))

    def run_metrics(self) -> list[str]:
        """The run's own figures, in their order: error rate, latency, totals."""
        return [m.key for m in self if m.scope == "run"]

    def conversation_metrics(self) -> list[str]:
        """The keys only a conversation has as a whole (turns, resolved...), in order."""
        return [m.key for m in self if m.level == "conversation"]

    def sums(self) -> list[MetricInfo]:
        """The totals: metrics that sum per-result keys (``of``)."""
        return [m for m in self if m.aggregation == "sum"]

    def pass_marks(self) -> dict[str, str]:
        """key -> an example's check where the spec sets no threshold."""
        return {m.key: m.pass_mark for m in self if m.pass_mark is not None}

    def ordered(self, keys: Iterable[str], configured: Iterable[str] | None = None) -> list[str]:
        """``keys`` in the order the reports show them: the ``configured`` ones (the
        experiment's own keys unless given) in theirs, then the other declared keys in
        declaration order, then the undeclared alphabetically; the run's own figures last."""
        keys = set(keys)
        declared = self.all()
        run = [k for k, m in declared.items() if m.scope == "run" and k in keys]
        first = self.keys if configured is None else configured
        shown = [k for k in dict.fromkeys(first) if k in keys and k not in run]
        rest = keys - set(shown) - set(run)
        shown += [k for k in declared if k in rest]
        shown += sorted(rest - set(declared))
        return shown + run

    def with_keys(self, keys: Iterable[str]) -> Catalog:
        """This catalog with ``keys`` after its own (those already in it left where they
        are): an experiment's catalog with the figures its results had besides its
        evaluators' keys (a conversation's turns, resolved...)."""
        return Catalog(self.declared, tuple(dict.fromkeys((*self.keys, *keys))))

    def to_json(self) -> dict[str, Any]:
        """What the store keeps: the declarations as their fields that differ from the
        defaults (so a field added later reads as its default), and the keys."""
        defaults = {f.name: f.default for f in fields(MetricInfo) if f.name != "key"}
        declared = []
        for declared_info in self.declared.values():
            entry: dict[str, Any] = {"key": declared_info.key}
            for name, value in asdict(declared_info).items():
                if name != "key" and value != defaults[name]:
                    entry[name] = list(value) if isinstance(value, tuple) else value
            declared.append(entry)
        return {"format": CATALOG_FORMAT, "keys": list(self.keys), "metrics": declared}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Catalog:
        """A stored catalog; a field this version does not know is left out."""
        known = {f.name for f in fields(MetricInfo)}
        metrics = []
        for entry in data.get("metrics") or []:
            values = {k: v for k, v in entry.items() if k in known}
            if "of" in values:
                values["of"] = tuple(values["of"])
            metrics.append(MetricInfo(**values))
        return cls.of(metrics, (str(k) for k in data.get("keys") or ()))


BUILT_IN = Catalog()  # the built-in metrics alone: for figures no experiment declares


def differences(a: MetricInfo, b: MetricInfo) -> list[str]:
    """How two declarations of one key differ, in words: ``direction higher / lower``."""
    return [
        f"{f.name} {getattr(a, f.name)} / {getattr(b, f.name)}"
        for f in fields(MetricInfo)
        if getattr(a, f.name) != getattr(b, f.name)
    ]


def merged(named: Sequence[tuple[str, Catalog]]) -> tuple[Catalog, list[str]]:
    """One catalog for a table of several experiments (``(name, catalog)`` pairs, in the
    table's order), and a note for each key they declare differently. A clash reads as the
    first experiment that declares the key does, and the note says so."""
    chosen: dict[str, MetricInfo] = {}
    first: dict[str, str] = {}
    notes: list[str] = []
    clashed: set[tuple[str, str]] = set()
    for name, catalog in named:
        for key, declared in catalog.declared.items():
            if key not in chosen:
                chosen[key], first[key] = declared, name
            elif declared != chosen[key] and (key, name) not in clashed:
                clashed.add((key, name))
                notes.append(
                    f"metric {key!r} is declared differently by {first[key]!r} and {name!r} "
                    f"({'; '.join(differences(chosen[key], declared))}); "
                    f"the table reads it as {first[key]!r} declares it"
                )
    keys = [k for _, catalog in named for k in catalog.keys]
    return Catalog.of(chosen.values(), keys), notes
