"""The tools the patterns' agents do their work with: the errand and the research notes."""

from __future__ import annotations

from langchain_core.tools import tool


@tool
def buy_milk() -> str:
    """Order one litre of milk for the office kitchen."""
    return "Ordered 1 litre of semi-skimmed milk, delivered today."


@tool
def record_findings(language: str, findings: str) -> str:
    """Record what the notes say about a language, for the comparison."""
    return f"Recorded the findings on {language}."
