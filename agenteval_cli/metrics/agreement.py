"""How often a judge agrees with people: Cohen's kappa over paired labels.

A judge's score and a person's label for the same result are one pair. The distinct values
seen on either side, sorted, are the categories (a 0/1 judge has two, a 1-5 judge up to
five; a continuous score's distinct values each count as one, so round such a judge's scale
before labelling it). With two categories this is Cohen's kappa; with more it is the
quadratic-weighted kappa over the categories' ranks (a miss by one level costs less than a
miss by four), as ``sklearn.metrics.cohen_kappa_score(weights="quadratic")`` computes it.

The interval is the large-sample 95% interval of Fleiss, Cohen & Everitt (1969),
``kappa +/- 1.96 * se``, clipped to [-1, 1]. It assumes the pairs are independent; at
perfect agreement its width is 0, so read it with ``n``. Everything is exact arithmetic on
counts: the same pairs always give the same figures.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

Z_95 = 1.959963984540054


@dataclass(frozen=True)
class Agreement:
    """People against a judge on one score key, over ``n`` labelled results."""

    n: int
    categories: tuple[float, ...]  # sorted; rows and columns of ``confusion``
    confusion: tuple[tuple[int, ...], ...]  # [person's category][judge's category]
    agreement: float  # share of pairs where the judge gave exactly the person's value
    kappa: float | None  # None when both sides used one category only (kappa undefined)
    kappa_low: float | None
    kappa_high: float | None
    weighted: bool  # quadratic weights (more than two categories)

    def to_json(self) -> dict[str, object]:
        return {
            "n": self.n,
            "agreement": self.agreement,
            "kappa": self.kappa,
            "kappa_ci": None if self.kappa_low is None else [self.kappa_low, self.kappa_high],
            "weighted": "quadratic" if self.weighted else None,
            "categories": list(self.categories),
            "confusion": [list(row) for row in self.confusion],
        }


def agreement(pairs: Iterable[tuple[float, float]]) -> Agreement:
    """Kappa, raw agreement and the confusion of ``(person, judge)`` pairs (at least one)."""
    pairs = [(float(person), float(judge)) for person, judge in pairs]
    if not pairs:
        raise ValueError("no labelled pairs")
    categories = tuple(sorted({v for pair in pairs for v in pair}))
    index = {value: i for i, value in enumerate(categories)}
    k = len(categories)
    counts = [[0] * k for _ in range(k)]
    for person, judge in pairs:
        counts[index[person]][index[judge]] += 1
    n = len(pairs)
    agreed = sum(counts[i][i] for i in range(k)) / n
    kappa, se = weighted_kappa(counts, quadratic_weights(k))
    low = high = None
    if kappa is not None and se is not None:
        low, high = max(-1.0, kappa - Z_95 * se), min(1.0, kappa + Z_95 * se)
    return Agreement(
        n=n,
        categories=categories,
        confusion=tuple(tuple(row) for row in counts),
        agreement=agreed,
        kappa=kappa,
        kappa_low=low,
        kappa_high=high,
        weighted=k > 2,
    )


def quadratic_weights(k: int) -> list[list[float]]:
    """Agreement weights ``1 - (i - j)^2 / (k - 1)^2``; for two categories, Cohen's own
    (1 on the diagonal, 0 off it)."""
    if k == 1:
        return [[1.0]]
    return [[1.0 - (i - j) ** 2 / (k - 1) ** 2 for j in range(k)] for i in range(k)]


def weighted_kappa(
    counts: Sequence[Sequence[int]], weights: Sequence[Sequence[float]]
) -> tuple[float | None, float | None]:
    """Kappa of a square table of counts with agreement weights, and its large-sample
    standard error (Fleiss, Cohen & Everitt 1969); ``(None, None)`` when chance agreement
    is total (every pair in one category), where kappa is undefined."""
    k = len(counts)
    n = sum(sum(row) for row in counts)
    p = [[counts[i][j] / n for j in range(k)] for i in range(k)]
    rows = [math.fsum(p[i]) for i in range(k)]
    cols = [math.fsum(p[i][j] for i in range(k)) for j in range(k)]
    observed = math.fsum(weights[i][j] * p[i][j] for i in range(k) for j in range(k))
    chance = math.fsum(weights[i][j] * rows[i] * cols[j] for i in range(k) for j in range(k))
    if chance >= 1.0 - 1e-12:
        return None, None
    kappa = (observed - chance) / (1.0 - chance)
    row_w = [math.fsum(cols[j] * weights[i][j] for j in range(k)) for i in range(k)]
    col_w = [math.fsum(rows[i] * weights[i][j] for i in range(k)) for j in range(k)]
    spread = math.fsum(
        p[i][j] * (weights[i][j] - (row_w[i] + col_w[j]) * (1.0 - kappa)) ** 2
        for i in range(k)
        for j in range(k)
    )
    variance = (spread - (kappa - chance * (1.0 - kappa)) ** 2) / (n * (1.0 - chance) ** 2)
    return kappa, math.sqrt(max(variance, 0.0))
