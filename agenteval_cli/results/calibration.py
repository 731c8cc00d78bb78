"""A judge's scores set against people's labels of the same results.

People label a row under ``outputs.human``, one value per score key they checked
(``{"human": {"helpfulness": 4, "grounded": true}}``), and a conversation's turn under
``outputs.turns[i].human`` for the per-turn scores; the stored results carry their rows'
reference outputs, so an experiment already holds both sides. Any score key can be
calibrated: an LLM judge's, or any evaluator's.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agenteval_cli.core.errors import UserError
from agenteval_cli.core.records import Run
from agenteval_cli.evaluators.reference_fields import HUMAN_LABELS
from agenteval_cli.metrics.agreement import Agreement, agreement

if TYPE_CHECKING:
    from agenteval_cli.store.db import ExperimentRecord, Store

LABELS_FIELD = HUMAN_LABELS  # outputs.human: {<score key>: <a person's value>}


@dataclass(frozen=True)
class Calibration:
    """One score key of one experiment against people's labels."""

    target: str
    experiment: str
    key: str
    agreement: Agreement
    unscored: int  # labelled results the judge gave no score (errored, or no answer)

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "unscored": self.unscored, **self.agreement.to_json()}


def labels_of(reference: Mapping[str, Any], where: str) -> dict[str, float]:
    """A row's labels as numbers (true/false as 1/0); a label that is no number is a
    UserError naming ``where`` (the row, and the turn) and the key."""
    given = reference.get(LABELS_FIELD)
    if given is None:
        return {}
    if not isinstance(given, Mapping):
        raise UserError(
            f"{where}: outputs.{LABELS_FIELD} is a "
            f"{type(given).__name__}, not a map of score keys to labels",
            hint=f'write it as {{"{LABELS_FIELD}": {{"<score key>": <value>}}}}',
        )
    labels = {}
    for key, value in given.items():
        number = _number(value)
        if number is None:
            raise UserError(
                f"{where}: outputs.{LABELS_FIELD}.{key} is {value!r}, not a number or true/false",
                hint="label on the judge's own scale (0/1, true/false, or its 1-5 levels)",
            )
        labels[str(key)] = number
    return labels


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float) and math.isfinite(value):
        return float(value)
    return None


def row_has_labels(reference: Mapping[str, Any]) -> bool:
    """Whether a row (or one of its conversation turns) carries people's labels."""
    turns = reference.get("turns")
    labelled_turns = isinstance(turns, list) and any(
        isinstance(t, Mapping) and t.get(LABELS_FIELD) for t in turns
    )
    return bool(reference.get(LABELS_FIELD)) or labelled_turns


def has_labels(runs: Iterable[Run]) -> bool:
    return any(row_has_labels(run.reference) for run in runs)


def _judged(run: Run) -> Iterator[tuple[dict[str, float], Mapping[str, float | bool | None]]]:
    """Each labelled unit of a result with its scores: the whole row, then each turn of a
    conversation against ``outputs.turns[i]``."""
    yield labels_of(run.reference, f"example {run.example_id!r}"), run.scores
    turns = run.reference.get("turns")
    if not run.turns or not isinstance(turns, list):
        return
    for index, (turn, reference) in enumerate(zip(run.turns, turns, strict=False)):
        if isinstance(reference, Mapping):
            where = f"example {run.example_id!r} (outputs.turns[{index}])"
            labels = labels_of(reference, where)
            yield labels, {score.key: score.score for score in turn.scores}


def calibrate(target: str, experiment: str, runs: Iterable[Run]) -> list[Calibration]:
    """Per labelled score key the experiment scored, the judge against people: each scored
    result is one pair (repetitions of an example each count), keys in first-label order."""
    pairs: dict[str, list[tuple[float, float]]] = {}
    unscored: dict[str, int] = {}
    for run in runs:
        for labels, scores in _judged(run):
            for key, label in labels.items():
                pairs.setdefault(key, [])
                score = scores.get(key)
                if score is None:
                    unscored[key] = unscored.get(key, 0) + 1
                else:
                    pairs[key].append((label, float(score)))
    return [
        Calibration(target, experiment, key, agreement(found), unscored.get(key, 0))
        for key, found in pairs.items()
        if found
    ]


def calibrated(
    target: str, experiment: str, runs: Iterable[Run]
) -> tuple[list[Calibration], str | None]:
    """:func:`calibrate` for a report: a malformed label is its reason, returned to be said
    beside the figures, so the rest of the report is still written."""
    try:
        return calibrate(target, experiment, runs), None
    except UserError as exc:
        return [], str(exc)


def stored_calibration(
    store: Store, record: ExperimentRecord
) -> tuple[list[Calibration], str | None]:
    """:func:`calibrated` over a stored experiment's labelled results (the run table's
    block): the store hands over only rows whose references name the labels field, so a
    run without labels decodes no result."""
    held = store.results(record.id, reference_holding=json.dumps(LABELS_FIELD))
    runs = [
        Run.from_result(s.result, s.inputs, s.reference_outputs)
        for s in held
        if row_has_labels(s.reference_outputs)
    ]
    return calibrated(record.target, record.name, runs) if runs else ([], None)


def unmatched_keys(runs: Iterable[Run]) -> list[str]:
    """Labelled keys no result of the experiment has a score for (a misspelt key)."""
    runs = list(runs)
    scored = {
        key
        for run in runs
        for _, scores in _judged(run)
        for key, v in scores.items()
        if v is not None
    }
    labelled = dict.fromkeys(key for run in runs for labels, _ in _judged(run) for key in labels)
    return [key for key in labelled if key not in scored]
