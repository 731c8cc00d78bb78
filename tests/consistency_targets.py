"""Targets and evaluators whose every call a seed decides: the experiments the consistency
test (``test_view_consistency``) generates and reads back through every view.

A row's inputs carry ``seed`` (a conversation's carry it in each turn). A target counts
its calls of each (seed, row, turn), so each repetition draws again: from
``random.Random`` seeded by the seed, the target, the row and the call's number, it
decides whether the call raises, stops at ``interrupt()`` or answers, which model it calls
and how many tokens that model reports. The evaluators read the answer: ``said_yes`` is a
pass/fail outcome, ``quality`` a rate that is null for some answers.
"""

from __future__ import annotations

import random
import threading
from typing import Any

from fakes import reply, scripted
from langgraph.types import Interrupt

MODELS = ("m-small", "m-large")
PRICING = {"m-small": {"input": 0.15, "output": 0.60}, "m-large": {"input": 2.5, "output": 10.0}}

_calls: dict[tuple[str, ...], int] = {}
_lock = threading.Lock()

# Per target: the chance in percent that a call raises, that it stops at interrupt(), that
# its answer says yes; a target named ``t_E_I_Y`` (any suffix after) has them in its name.
FATES = {"alpha": (15, 5, 70), "beta": (25, 0, 50), "gamma": (10, 10, 85)}


def _draw(name: str, inputs: dict[str, Any]) -> random.Random:
    turn = str(len(inputs.get("history") or ()))
    key = (name, str(inputs.get("seed")), str(inputs.get("question")), turn)
    with _lock:
        count = _calls[key] = _calls.get(key, 0) + 1
    return random.Random("/".join((*key, str(count))))


def _answer(name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    errors, interrupts, yes = (p / 100 for p in FATES.get(name) or _fates(name))
    rng = _draw(name, inputs)
    model = scripted(
        rng.choice(MODELS), reply("thinking", tokens=(rng.randint(20, 900), rng.randint(5, 300)))
    )
    model.invoke(str(inputs.get("question")))
    fate = rng.random()
    if fate < errors:
        raise ValueError(f"{name} failed on {inputs.get('question')}")
    if fate < errors + interrupts:
        return {"final_response": "", "__interrupt__": [Interrupt(value="approve?", id="i1")]}
    words = "yes" if rng.random() < yes else "no"
    return {"final_response": f"{words} {rng.randint(0, 9)}"}


def _fates(name: str) -> tuple[int, int, int]:
    _, errors, interrupts, yes, *_ = name.split("_")
    return int(errors), int(interrupts), int(yes)


def __getattr__(name: str) -> Any:
    """``t_E_I_Y[_salt]``: a target of those chances (the spec names it as its import path)."""
    if not name.startswith("t_"):
        raise AttributeError(name)
    _fates(name)

    def target(inputs: dict[str, Any]) -> dict[str, Any]:
        return _answer(name, inputs)

    target.__name__ = name
    return target


def alpha(inputs: dict[str, Any]) -> dict[str, Any]:
    return _answer("alpha", inputs)


def beta(inputs: dict[str, Any]) -> dict[str, Any]:
    return _answer("beta", inputs)


def gamma(inputs: dict[str, Any]) -> dict[str, Any]:
    return _answer("gamma", inputs)


def said_yes(outputs: dict[str, Any]) -> bool:
    """Pass/fail: the answer says yes."""
    return str(outputs.get("final_response", "")).startswith("yes")


def quality(outputs: dict[str, Any]) -> dict[str, Any]:
    """A rate from the answer's digit; null (it could not tell) for a 7."""
    digit = int(str(outputs.get("final_response", "x 0")).split()[-1])
    score = None if digit == 7 else digit / 9
    return {"key": "quality", "score": score, "comment": "seven" if score is None else None}
