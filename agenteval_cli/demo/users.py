"""An offline simulated customer for the demo: the same conversation every time.

``simulated_user: {function: agenteval_cli.demo.users:scripted_customer}`` drives a row
such as ``{"scenario": "I was charged twice in May.", "followups": ["Can you also send me
the invoice?"]}``: the customer opens with the scenario (or the row's ``question``), asks
each follow-up in order, one a turn, and says it is done (returns None) when none are left.
It reads only its arguments, so it stands for a user's own function, with no model and no
key.
"""

from __future__ import annotations

from typing import Any


def scripted_customer(
    transcript: list[dict[str, Any]], *, inputs: dict[str, Any], turn: int
) -> str | None:
    """Turn 1 is the scenario, turn ``n`` the ``n-1``-th follow-up; None after the last."""
    if turn == 1:
        opening = inputs.get("scenario") or inputs.get("question")
        if not isinstance(opening, str) or not opening.strip():
            raise ValueError("the row has no 'scenario' (or 'question') to open with")
        return opening
    followups = inputs.get("followups") or []
    if not isinstance(followups, list):
        raise ValueError(f"'followups' must be a list of messages, got {type(followups).__name__}")
    if turn - 2 < len(followups):
        return str(followups[turn - 2])
    return None
