"""Repetitions the way users quote them: pass@k and pass^k of each 0/1 outcome, and the share
of flaky examples (those whose repetitions disagree), from what each repetition of each
example did.

For an example run n times that passed c of them, the unbiased estimates (every k of the n
repetitions, drawn without replacement, as equally likely) are

- pass@k = 1 − C(n−c, k) / C(n, k): the chance that at least one of k repetitions passes;
- pass^k = C(c, k) / C(n, k): the chance that all k pass (τ-bench's reliability figure);

each averaged over the examples. pass@1 = pass^1 is the share of repetitions that passed.
Both are defined for k up to n, so an example counts at k only when it has k repetitions.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Z95 = 1.959963984540054  # the standard normal's 97.5% quantile: two-sided 95%


def pass_at_k(n: int, c: int, k: int) -> float:
    """The chance that at least one of ``k`` of ``n`` repetitions (``c`` passed) passes."""
    _check(n, c, k)
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """The chance that all ``k`` of ``n`` repetitions (``c`` passed) pass: pass^k."""
    _check(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def _check(n: int, c: int, k: int) -> None:
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")


def wilson(successes: int, total: int, z: float = Z95) -> tuple[float, float]:
    """Wilson's score interval for a share: never of zero width, inside [0, 1], and it keeps
    its level at small ``total`` where the normal approximation does not."""
    if total <= 0 or not 0 <= successes <= total:
        raise ValueError(f"need 0 <= successes <= total and total > 0, got {successes}/{total}")
    share = successes / total
    z2 = z * z
    centre = (share + z2 / (2 * total)) / (1 + z2 / total)
    half = z / (1 + z2 / total) * math.sqrt(share * (1 - share) / total + z2 / (4 * total**2))
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class AtK:
    """pass@k and pass^k at one k, over the ``examples`` with at least k repetitions."""

    k: int
    examples: int
    pass_at: float
    pass_hat: float

    def to_json(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "examples": self.examples,
            "pass_at_k": self.pass_at,
            "pass_hat_k": self.pass_hat,
        }


@dataclass(frozen=True)
class Flaky:
    """Examples whose repetitions disagree, of those ``repeated`` (two or more outcomes),
    with Wilson's 95% interval of the share."""

    examples: int
    repeated: int

    @property
    def share(self) -> float | None:
        return self.examples / self.repeated if self.repeated else None

    @property
    def interval(self) -> tuple[float, float] | None:
        return wilson(self.examples, self.repeated) if self.repeated else None

    def to_json(self) -> dict[str, Any]:
        interval = self.interval
        return {
            "examples": self.examples,
            "of": self.repeated,
            "share": self.share,
            "ci95": None if interval is None else list(interval),
        }


@dataclass(frozen=True)
class Repeated:
    """One outcome's figures over the repetitions: pass@k and pass^k for k = 1 to the most
    repetitions an example had, and its flaky examples; or none, with the ``reason``."""

    key: str
    examples: int  # examples with an outcome in some repetition
    repetitions: int  # the most outcomes one example had
    at: tuple[AtK, ...] = ()
    flaky: Flaky = Flaky(0, 0)
    reason: str | None = None

    def at_k(self, k: int) -> AtK | None:
        return next((a for a in self.at if a.k == k), None)

    def to_json(self) -> dict[str, Any]:
        if self.reason is not None:
            return {"reason": self.reason}
        return {
            "examples": self.examples,
            "repetitions": self.repetitions,
            "flaky": self.flaky.to_json(),
            "k": [a.to_json() for a in self.at],
        }


def repeated(key: str, outcomes: Mapping[str, Sequence[bool]]) -> Repeated:
    """The figures of ``key`` from each example's outcomes (True: that repetition passed)."""
    counted = [(len(o), sum(o)) for o in outcomes.values() if o]
    most = max((n for n, _ in counted), default=0)
    at = []
    for k in range(1, most + 1):
        eligible = [(n, c) for n, c in counted if n >= k]
        at.append(
            AtK(
                k,
                len(eligible),
                math.fsum(pass_at_k(n, c, k) for n, c in eligible) / len(eligible),
                math.fsum(pass_hat_k(n, c, k) for n, c in eligible) / len(eligible),
            )
        )
    return Repeated(key, len(counted), most, tuple(at), flaky_examples(outcomes.values()))


def flaky_examples(outcomes: Iterable[Sequence[bool]]) -> Flaky:
    """How many of the examples with two or more outcomes had both a pass and a failure."""
    repeated_ones = [o for o in outcomes if len(o) > 1]
    return Flaky(sum(1 for o in repeated_ones if len(set(o)) > 1), len(repeated_ones))


def shown_ks(repetitions: int) -> list[int]:
    """The k a table shows: 1, 2 and the number of repetitions (all k are in ``--json``)."""
    return sorted({k for k in (1, 2, repetitions) if 1 <= k <= repetitions})


def flaky_on_any(per_key: Mapping[str, Mapping[str, Sequence[bool]]]) -> Flaky:
    """Examples whose repetitions disagree on some outcome (``per_key``: key -> example ->
    outcomes), of the examples with two or more outcomes of some key."""
    repeated_ones: dict[str, bool] = {}
    for outcomes in per_key.values():
        for example, seen in outcomes.items():
            if len(seen) > 1:
                repeated_ones[example] = repeated_ones.get(example, False) or len(set(seen)) > 1
    return Flaky(sum(repeated_ones.values()), len(repeated_ones))
