"""A running sum of floats that is exact until it is read, so a metric does not depend on
the order its results arrived in: the same spec run in-process, on Ray workers or in
shards merged later gives the same mean to the last bit."""

from __future__ import annotations

import math

# Every finite float is a whole multiple of 2**-1074 (the smallest subnormal): counted in
# those units, a sum of floats is a sum of integers, which Python keeps exactly.
_UNITS = 1074


class ExactSum:
    """The sum and the count of the values added. Finite values are added as exact
    integers and the total is rounded once (CPython's integer division is correctly
    rounded); infinities and NaN add up as floats would."""

    __slots__ = ("count", "special", "units")

    def __init__(self) -> None:
        self.count = 0
        self.units = 0
        self.special = 0.0  # the infinite and NaN values, summed as floats

    def add(self, x: float) -> None:
        self.count += 1
        if x - x != 0.0:  # inf or nan
            self.special += x
            return
        numerator, denominator = x.as_integer_ratio()  # the denominator is a power of two
        self.units += numerator << (_UNITS + 1 - denominator.bit_length())

    def merge(self, other: ExactSum) -> None:
        self.count += other.count
        self.units += other.units
        self.special += other.special

    def total(self) -> float:
        if self.special:
            return self.special  # inf, -inf or nan, whatever the finite values are
        try:
            return self.units / (1 << _UNITS)
        except OverflowError:  # the exact sum is beyond the largest float
            return math.inf if self.units > 0 else -math.inf

    def mean(self) -> float | None:
        return self.total() / self.count if self.count else None
