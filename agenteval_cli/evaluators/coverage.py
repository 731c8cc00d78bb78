"""Resolution coverage: were all parts of a (multi-domain) request addressed?"""

from __future__ import annotations

from typing import Any

from agenteval_cli.evaluators.registry import register
from agenteval_cli.metrics.registry import metric


def response_text(outputs: dict[str, Any] | None) -> str:
    """The final response plus the resolution notes, as one lower-cased string."""
    outputs = outputs or {}
    notes = outputs.get("resolution_notes") or []
    if isinstance(notes, str):
        notes = [notes]
    parts = [str(outputs.get("final_response") or ""), *(str(n) for n in notes)]
    return " ".join(parts).lower()


@register(
    "resolution_coverage",
    family="outcome",
    reads="outputs.must_mention; final_response + resolution_notes",
    references=("must_mention",),
    description="share of must_mention terms found, case-insensitive, in response and notes",
    metrics=[
        metric(
            "resolution_coverage",
            "resolution coverage",
            fmt="percent",
            short="coverage",
            pass_mark=">= 1",
            headline=True,
        )
    ],
)
def resolution_coverage() -> Any:
    """Share of ``must_mention`` terms present; 1.0 when there are none (nothing to miss)."""

    def evaluate(outputs: dict, reference_outputs: dict) -> dict:
        terms = reference_outputs.get("must_mention") or []
        if isinstance(terms, str):
            terms = [terms]
        if not terms:
            return {"key": "resolution_coverage", "score": 1.0, "comment": "nothing to mention"}
        text = response_text(outputs)
        missing = [t for t in terms if str(t).lower() not in text]
        score = (len(terms) - len(missing)) / len(terms)
        comment = f"missing {missing}" if missing else "all terms mentioned"
        return {"key": "resolution_coverage", "score": score, "comment": comment}

    return evaluate
