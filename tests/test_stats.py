"""Paired bootstrap intervals and permutation tests against cases with known answers."""

from __future__ import annotations

import math
import random

import pytest

from agenteval_cli.metrics.stats import bootstrap_ci, compare_paired, permutation_test, stdev


def test_identical_samples_differ_by_zero_and_are_not_significant():
    scores = [1.0, 0.5, 0.0, 1.0, 0.75, 1.0, 0.25, 1.0] * 4
    result = compare_paired(scores, list(scores))
    assert result.n == 32
    assert result.diff == 0.0
    assert (result.ci_low, result.ci_high) == (0.0, 0.0)
    assert result.p_value == 1.0
    assert not result.significant


def test_a_constant_shift_is_significant_with_the_interval_on_the_shift():
    rng = random.Random(1)
    a = [rng.random() for _ in range(32)]
    result = compare_paired(a, [x + 0.25 for x in a])
    assert result.diff == pytest.approx(0.25)
    assert result.ci_low == pytest.approx(0.25)
    assert result.ci_high == pytest.approx(0.25)
    # only the all-plus and all-minus sign patterns are as extreme: Monte Carlo p = 1/10001
    assert result.p_value == pytest.approx(1 / 10001)
    assert result.significant
    assert result.mean_b - result.mean_a == pytest.approx(0.25)


def test_a_noisy_shift_has_an_interval_around_the_shift_and_excluding_zero():
    rng = random.Random(7)
    a = [rng.random() for _ in range(60)]
    b = [x - 0.3 + rng.uniform(-0.1, 0.1) for x in a]
    result = compare_paired(a, b)
    assert result.ci_low < result.diff < result.ci_high
    assert result.ci_low < -0.3 + 0.04 and result.ci_high > -0.3 - 0.04
    assert result.ci_high < 0
    assert result.significant


def test_bootstrap_width_matches_the_normal_approximation():
    rng = random.Random(3)
    diffs = [rng.gauss(0.1, 1.0) for _ in range(400)]
    low, high = bootstrap_ci(diffs, resamples=4000)
    expected = 2 * 1.96 * stdev(diffs) / math.sqrt(len(diffs))
    assert high - low == pytest.approx(expected, rel=0.1)


def test_exact_permutation_p_values():
    # all five differences positive: 2 of the 2**5 sign patterns are as extreme
    assert permutation_test([1.0] * 5) == pytest.approx(2 / 32)
    assert permutation_test([1.0] * 6) == pytest.approx(2 / 64)
    # zeros are left out: the same as three positive differences
    assert permutation_test([0.0, 0.5, 0.0, 0.5, 0.5]) == pytest.approx(2 / 8)
    # differences that cancel out: every pattern is as extreme
    assert permutation_test([1.0, -1.0]) == 1.0
    # {3, 1}: |±3 ± 1| >= 4 only for ++ and --
    assert permutation_test([3.0, 1.0]) == pytest.approx(0.5)


def test_five_wins_out_of_five_are_not_enough_at_95_percent():
    result = compare_paired([0.0] * 5, [1.0] * 5)
    assert result.diff == 1.0
    assert result.p_value == pytest.approx(0.0625)
    assert not result.significant


def test_results_are_repeatable_and_depend_on_the_seed():
    rng = random.Random(11)
    a = [rng.random() for _ in range(40)]
    b = [rng.random() for _ in range(40)]
    first, second = compare_paired(a, b), compare_paired(a, b)
    assert first == second
    other = compare_paired(a, b, seed=99)
    assert (other.ci_low, other.ci_high) != (first.ci_low, first.ci_high)


def test_empty_and_mismatched_samples():
    empty = compare_paired([], [])
    assert empty.n == 0 and empty.diff is None and not empty.significant
    with pytest.raises(ValueError, match="differ in length"):
        compare_paired([1.0], [1.0, 2.0])
    assert stdev([1.0]) is None
    assert stdev([1.0, 3.0]) == pytest.approx(math.sqrt(2))


def test_examples_are_paired_by_id_so_the_test_does_not_depend_on_the_stored_order():
    """Two stores of one run hold its results in the order they finished: the paired
    interval and p-value are the same for both."""
    from agenteval_cli.metrics.stats import compare_examples

    rng = random.Random(3)
    ids = [f"ex{i:03d}" for i in range(40)]
    a = {e: rng.random() for e in ids}
    b = {e: a[e] + rng.uniform(-0.2, 0.4) for e in ids}
    shuffled = rng.sample(ids, len(ids))
    a2, b2 = ({e: side[e] for e in shuffled} for side in (a, b))
    one, two = compare_examples(a, b), compare_examples(a2, b2)
    assert one == two
    assert one == compare_paired([a[e] for e in ids], [b[e] for e in ids])  # id order
    # the bootstrap draws positions, so a different order is a different interval
    other = compare_paired([a[e] for e in shuffled], [b[e] for e in shuffled])
    assert (other.ci_low, other.ci_high) != (one.ci_low, one.ci_high)
    b.pop("ex000")
    assert compare_examples(a, b).n == 39  # only the examples both scored
    assert compare_examples(a, {}) is None
