"""Evaluator registry: one small factory per evaluator, looked up by the name used in YAML.

Each entry declares the metric keys it scores, with their label, direction and format
(:func:`~agenteval_cli.metrics.registry.metric`); registering declares them as built-ins in
the metric registry. What a spec declares goes into its experiment's catalog instead
(:func:`spec_catalog`, and the bound evaluators' metrics).

A factory takes keyword options (from the spec's ``{name: ..., option: value}`` form, plus
experiment-wide context such as ``pricing`` or ``base_dir`` when it declares that parameter)
and returns an evaluator callable ``(inputs, outputs, reference_outputs, trace) -> result``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Annotated, Any, Literal, get_args, get_origin, get_type_hints

from pydantic import Field
from typing_extensions import TypedDict  # pydantic reads it on Python 3.11

from agenteval_cli.core.errors import UserError, did_you_mean
from agenteval_cli.evaluators.factory_options import CONTEXT_PARAMETERS, check_options
from agenteval_cli.metrics.catalog import Catalog
from agenteval_cli.metrics.registry import (
    ALIASES,
    METRICS,
    AcrossTurns,
    Direction,
    Format,
    Level,
    MetricFields,
    MetricInfo,
    declare,
    metric,
    with_options,
)
from agenteval_cli.spec.fields import NonEmptyStr

Evaluator = Callable[..., Any]
Factory = Callable[..., Evaluator]


@dataclass(frozen=True)
class EvaluatorInfo:
    """What ``agenteval evaluators list/show`` print, and how to build the evaluator."""

    name: str
    family: str
    reads: str
    description: str
    factory: Factory
    metrics: tuple[MetricInfo, ...]  # the score keys the evaluator emits, declared
    example: str = ""  # a YAML list item using the evaluator
    summary: bool = False  # dataset-level: called once with every row of a target
    # The reference fields it reads: it needs one of ``references`` (without any it scores
    # as if nothing were expected); ``optional_references`` it reads when a row has them.
    references: tuple[str, ...] = ()
    optional_references: tuple[str, ...] = ()

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(m.key for m in self.metrics)

    @property
    def needs_answer(self) -> bool:
        """Whether a key it scores needs a final answer (null for a result without one)."""
        return any(m.needs_answer for m in self.metrics)

    @property
    def names_its_score(self) -> bool:
        """Whether it writes its score under the item's name itself (a judge,
        ``trajectory_match``, your function): its factory takes ``name``."""
        return "name" in inspect.signature(self.factory).parameters

    def options(self) -> list[tuple[str, Any]]:
        """``(option, default)`` pairs a spec may set; ``inspect.Parameter.empty`` if required."""
        params = inspect.signature(self.factory).parameters.values()
        return [(p.name, p.default) for p in params if p.name not in CONTEXT_PARAMETERS]

    def choices(self) -> dict[str, tuple[Any, ...]]:
        """The allowed values of each option the factory types as a ``Literal``."""
        hints = get_type_hints(self.factory)
        return {
            name: get_args(hint)
            for name, hint in hints.items()
            if get_origin(hint) is Literal and name not in CONTEXT_PARAMETERS
        }


REGISTRY: dict[str, EvaluatorInfo] = {}


def register(
    name: str,
    *,
    family: str,
    reads: str,
    description: str,
    metrics: Sequence[MetricInfo] = (),
    headline: str | None = None,
    example: str = "",
    summary: bool = False,
    needs_answer: bool | None = None,
    references: Sequence[str] = (),
    optional_references: Sequence[str] = (),
) -> Callable[[Factory], Factory]:
    """Register ``factory`` under ``name``; used as a decorator on the factory.

    ``metrics`` declares each key it scores (by default one plain key, ``name``);
    ``headline`` is the key a threshold on ``name`` means, when ``name`` is not a key;
    ``needs_answer=False`` declares every key read from the trace alone, so it is scored for
    results that raised or stopped at an interrupt too (None: as each metric declares).
    ``references`` are the reference fields it needs one of, ``optional_references`` those it
    reads when present: a run warns when no row has what it needs."""
    declared = tuple(metrics) or (metric(name),)
    if needs_answer is not None:
        declared = tuple(replace(m, needs_answer=needs_answer) for m in declared)
    declare(*declared)
    if headline is not None:
        ALIASES[name] = headline

    def decorate(factory: Factory) -> Factory:
        REGISTRY[name] = EvaluatorInfo(
            name=name,
            family=family,
            reads=reads,
            description=description,
            factory=factory,
            metrics=declared,
            example=example or f"- {name}",
            summary=summary,
            references=tuple(references),
            optional_references=tuple(optional_references),
        )
        return factory

    return decorate


def lookup(name: str, *, file: str | None = None, line: int | None = None) -> EvaluatorInfo:
    """The registry entry for ``name``; an unknown name is a UserError with a suggestion."""
    info = REGISTRY.get(name)
    if info is None:
        hint = did_you_mean(name, REGISTRY) or f"known evaluators: {', '.join(sorted(REGISTRY))}"
        raise UserError(f"unknown evaluator {name!r}", file=file, line=line, hint=hint)
    return info


def build_evaluator(
    name: str,
    options: dict[str, Any] | None = None,
    *,
    context: dict[str, Any] | None = None,
    file: str | None = None,
    line: int | None = None,
) -> Evaluator:
    """Build the evaluator called ``name``; unknown names and options are UserErrors."""
    info = lookup(name, file=file, line=line)
    params = inspect.signature(info.factory).parameters
    options = dict(options or {})
    for key in options:
        if key not in params or key in CONTEXT_PARAMETERS:
            allowed = [p for p in params if p not in CONTEXT_PARAMETERS]
            hint = did_you_mean(key, allowed) or _options_hint(allowed)
            raise UserError(
                f"evaluator {name!r} has no option {key!r}", file=file, line=line, hint=hint
            )
    missing = [
        p.name
        for p in params.values()
        if p.default is inspect.Parameter.empty
        and p.name not in options
        and p.name not in CONTEXT_PARAMETERS
        and p.kind is not inspect.Parameter.VAR_KEYWORD
    ]
    if missing:
        raise UserError(
            f"evaluator {name!r} needs the option(s) {', '.join(missing)}",
            file=file,
            line=line,
            hint=f"see 'agenteval evaluators show {name}'",
        )
    for key, choices in info.choices().items():
        if key in options and options[key] not in choices:
            listed = ", ".join(str(a) for a in choices)
            raise UserError(
                f"evaluator {name!r}: {key} must be one of {listed}, got {options[key]!r}",
                file=file,
                line=line,
                hint=did_you_mean(str(options[key]), [str(a) for a in choices]),
            )
    problem = check_options(info.factory, options)
    if problem is not None:
        raise UserError(
            f"evaluator {name!r}: {problem}",
            file=file,
            line=line,
            hint=f"see 'agenteval evaluators show {name}'",
        )
    for key, value in (context or {}).items():
        if key in params and key not in options:
            options[key] = value
    try:
        return info.factory(**options)
    except UserError:
        raise
    except (TypeError, ValueError) as exc:
        raise UserError(f"evaluator {name!r}: {exc}", file=file, line=line) from None


def _options_hint(allowed: list[str]) -> str:
    return f"options: {', '.join(allowed)}" if allowed else "it takes no options"


class MetricOptions(TypedDict, total=False):
    """Options of a spec entry that declare its score's metadata rather than configure it
    (:func:`entry_metrics`)."""

    label: str
    direction: Direction
    lower_is_better: bool
    format: Format
    binary: bool
    needs_answer: bool
    across_turns: AcrossTurns
    metrics: dict[str, MetricFields]  # last: the others are about the entry's one key


class ItemOptions(MetricOptions, total=False):
    """What every evaluator item of a spec may hold beside its evaluator's own options
    (read by :func:`agenteval_cli.evaluators.loading.bind_evaluators`); each described for
    ``agenteval evaluators show``, the evaluator reference and the spec's JSON Schema."""

    type: Annotated[
        NonEmptyStr,
        Field(description="registry entry, when name is your own (e.g. type: llm_judge)"),
    ]
    sample: Annotated[
        float,
        Field(
            gt=0,
            le=1,
            description="score only this share of the examples, e.g. 0.25, picked by a hash "
            "of their ids",
        ),
    ]
    seed: Annotated[
        int,
        Field(
            description="which examples the sample picks: another number, another share (default 0)"
        ),
    ]
    level: Annotated[
        Level,
        Field(
            description="conversation: score each conversation once, on its whole transcript, "
            "instead of each turn (default request)"
        ),
    ]


METRIC_OPTIONS = tuple(MetricOptions.__annotations__)


def common_options() -> list[tuple[str, str]]:
    """``(option, description)`` of the options every evaluator item takes that the loader
    handles rather than the factory (those of :class:`ItemOptions` beside the metric ones)."""
    hints = get_type_hints(ItemOptions, include_extras=True)
    found = []
    for name, hint in hints.items():
        if name in METRIC_OPTIONS:
            continue
        descriptions = [getattr(m, "description", None) for m in getattr(hint, "__metadata__", ())]
        found.append((name, next(d for d in descriptions if d)))
    return found


# The attribute :func:`declares` sets on a user's function.
DECLARED = "agenteval_metrics"


def entry_parts(item: Any) -> tuple[str, dict[str, Any]]:
    """A spec's evaluator item (``name``, ``{name: ..., ...}`` or an ``EvaluatorSpec``) as
    its name and options."""
    if isinstance(item, str):
        return item, {}
    if isinstance(item, Mapping):
        options = dict(item.get("options") or {})
        options.update({k: v for k, v in item.items() if k not in ("name", "options")})
        return str(item.get("name", "")), options
    return str(item.name), dict(getattr(item, "options", {}) or {})


def entry_metrics(item: Any, fn: Any = None) -> list[MetricInfo]:
    """The metrics a spec's evaluator item scores: a registry entry's own; for an item
    with a ``type:`` (a judge, your function), what the function declares (:func:`declares`,
    else ``fn.score_keys``), else one key, its name (or the judge's ``feedback_key``), but
    a built-in scoring several keys keeps its own.
    The item's ``label``, ``direction`` / ``lower_is_better`` and ``format`` apply to its
    one key; ``metrics: {key: {label, direction, format}}`` to any key. ValueError for a
    value that is none of the allowed ones."""
    name, options = entry_parts(item)
    kind = options.get("type") or name
    info = REGISTRY.get(kind) if isinstance(kind, str) else None
    found = function_metrics(fn)
    if not found:
        if info is not None and (kind == name or len(info.metrics) > 1):  # its own keys
            found = list(info.metrics)
        elif info is not None and not info.names_its_score:  # its one key, under the name
            found = [replace(info.metrics[0], key=name, label=name)]
        else:
            found = [known(str(options.get("feedback_key") or name))]
            if info is not None and not info.needs_answer:  # a built-in under a name of its own
                found = [replace(m, needs_answer=False) for m in found]
    if options.get("level") == "conversation":  # scored once per conversation
        found = [replace(m, level="conversation") for m in found]
    own = {k: options[k] for k in METRIC_OPTIONS[:-1] if options.get(k) is not None}
    if own:
        if len(found) != 1:
            keys = ", ".join(m.key for m in found)
            raise ValueError(
                f"{name} scores several keys ({keys}): give each its label, direction and "
                "format under metrics: {key: {...}}"
            )
        found = [with_options(found[0], own)]
    per_key = options.get("metrics") or {}
    if not isinstance(per_key, Mapping):
        raise ValueError(
            f"metrics must map score keys to their label, direction, format, got {per_key!r}"
        )
    by_key = {m.key: m for m in found}
    for key, fields in per_key.items():
        if not isinstance(fields, Mapping):
            raise ValueError(f"metrics.{key} must be a mapping, got {fields!r}")
        by_key[str(key)] = with_options(by_key.get(str(key)) or known(str(key)), dict(fields))
    return list(by_key.values())


def known(key: str) -> MetricInfo:
    """``key``'s declaration, or a plain higher-is-better number."""
    return METRICS.get(key) or metric(key)


def function_metrics(fn: Any) -> list[MetricInfo]:
    """What a user's function declares: ``fn.agenteval_metrics`` (MetricInfo, keys, or
    mappings of their fields; see :func:`declares`), else ``fn.score_keys`` as keys."""
    declared = getattr(fn, DECLARED, None) if fn is not None else None
    if declared:
        found = []
        for entry in declared:
            if isinstance(entry, MetricInfo):
                found.append(entry)
            elif isinstance(entry, str):
                found.append(known(entry))
            elif isinstance(entry, Mapping) and "key" in entry:
                fields = dict(entry)
                found.append(with_options(known(str(fields.pop("key"))), fields))
            else:
                raise ValueError(f"metrics entries are keys or mappings with a key, got {entry!r}")
        return found
    keys = getattr(fn, "score_keys", None) if fn is not None else None
    return [known(str(k)) for k in keys or ()]


def declares(*metrics: MetricInfo | str | Mapping[str, Any]) -> Callable[[Any], Any]:
    """A decorator for your own evaluator: the keys it scores and how to read them,
    ``@declares(metric("steps", "steps taken", lower=True, fmt="count"))``."""

    def mark(fn: Any) -> Any:
        setattr(fn, DECLARED, tuple(metrics))
        return fn

    return mark


def spec_catalog(items: Iterable[Any]) -> Catalog:
    """The catalog a spec's evaluator items declare (as the spec writes them, the functions
    not loaded): its keys are the per-result ones, in order, the experiment's metrics. An
    item that cannot say is skipped: it is checked, at its line, where it is bound. Nothing
    is declared process-wide."""
    metrics: list[MetricInfo] = []
    keys: list[str] = []
    for item in items:
        try:
            found = entry_metrics(item)
        except (TypeError, ValueError):
            continue
        metrics += found
        if not is_summary(item):  # its scores are the dataset's, not the results' metrics
            keys += [m.key for m in found]
    return Catalog.of(metrics, keys)


def is_summary(item: Any) -> bool:
    """Whether a spec's evaluator item is dataset-level (scored once per target)."""
    name, options = entry_parts(item)
    kind = options.get("type") or name
    info = REGISTRY.get(kind) if isinstance(kind, str) else None
    return bool(options.get("summary")) or (info is not None and info.summary)


# The attribute :func:`reads_references` sets on a user's function.
DECLARED_REFERENCES = "agenteval_references"


def reads_references(*needed: str, optional: Sequence[str] = ()) -> Callable[[Any], Any]:
    """A decorator for your own evaluator: the reference fields it needs one of, and those
    it reads when a row has them, ``@reads_references("expected_route")``; a run warns when
    no row has a field it needs."""

    def mark(fn: Any) -> Any:
        setattr(fn, DECLARED_REFERENCES, (tuple(needed), tuple(optional)))
        return fn

    return mark


def entry_references(kind: str, fn: Any = None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The reference fields an evaluator of registry entry ``kind`` (built as ``fn``) needs
    one of and reads if present: what its function declares, else the entry's."""
    declared = getattr(fn, DECLARED_REFERENCES, None) if fn is not None else None
    if declared:
        needed, optional = declared
        return tuple(map(str, needed)), tuple(map(str, optional))
    info = REGISTRY.get(kind)
    return (info.references, info.optional_references) if info is not None else ((), ())
