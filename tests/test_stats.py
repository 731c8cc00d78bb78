"""Paired intervals and tests against published tables, exact fractions and hand counts."""

from __future__ import annotations

import math
import random
from fractions import Fraction
from math import comb

import pytest

from agenteval_cli.metrics.distributions import (
    incomplete_beta,
    mid_p_interval,
    t_quantile,
    t_two_sided,
    wilson,
)
from agenteval_cli.metrics.kinds import paired_kind
from agenteval_cli.metrics.registry import metric
from agenteval_cli.metrics.stats import (
    SAME_SHIFT,
    TOO_FEW,
    benjamini_hochberg,
    bootstrap_ci,
    compare_examples,
    compare_paired,
    concentrated,
    could_reject,
    holm,
    mcnemar_mid_p,
    side_interval,
    stdev,
)

# Student's t quantiles as printed in any table (e.g. Abramowitz & Stegun, table 26.10).
T_TABLE = [
    (0.975, 1, 12.706),
    (0.975, 5, 2.571),
    (0.975, 9, 2.262),
    (0.975, 19, 2.093),
    (0.975, 31, 2.040),
    (0.95, 5, 2.015),
    (0.95, 30, 1.697),
    (0.995, 10, 3.169),
]


@pytest.mark.parametrize(("probability", "df", "expected"), T_TABLE)
def test_t_quantiles_match_the_printed_table(probability, df, expected):
    assert t_quantile(probability, df) == pytest.approx(expected, abs=6e-4)
    assert t_two_sided(t_quantile(probability, df), df) == pytest.approx(2 * (1 - probability))


def test_incomplete_beta_matches_its_closed_forms():
    for x in (0.01, 0.2, 0.5, 0.77, 0.99):
        assert incomplete_beta(1, 1, x) == pytest.approx(x)
        assert incomplete_beta(3, 1, x) == pytest.approx(x**3)
        assert incomplete_beta(1, 4, x) == pytest.approx(1 - (1 - x) ** 4)
    # t with 1 df is Cauchy: P(|T| >= t) = 1 - 2·atan(t)/π
    for t in (0.3, 1.0, 4.0):
        assert t_two_sided(t, 1) == pytest.approx(1 - 2 * math.atan(t) / math.pi)


def _mid_p_by_fractions(better: int, worse: int) -> Fraction:
    m = better + worse
    k = min(better, worse)
    below = sum(Fraction(comb(m, i), 2**m) for i in range(k)) + Fraction(comb(m, k), 2**m) / 2
    return min(Fraction(1), 2 * below)


@pytest.mark.parametrize(("better", "worse"), [(7, 3), (3, 7), (10, 0), (6, 6), (14, 2), (1, 8)])
def test_mcnemar_mid_p_equals_the_exact_fraction(better, worse):
    assert mcnemar_mid_p(better, worse) == pytest.approx(float(_mid_p_by_fractions(better, worse)))


def test_a_discordant_seven_three_reads_as_counts_not_a_difference():
    """B better on 7, worse on 3, 22 ties: mid-p = 2·(C(10,0)+C(10,1)+C(10,2)+½C(10,3))/2¹⁰."""
    a = [0.0] * 22 + [0.0] * 7 + [1.0] * 3
    b = [0.0] * 22 + [1.0] * 7 + [0.0] * 3
    result = compare_paired(a, b, kind="binary")
    assert (result.better, result.worse, result.ties) == (7, 3, 22)
    assert result.diff == pytest.approx(4 / 32)
    assert result.p_value == pytest.approx(232 / 1024)
    assert result.ci_low < 0 < result.ci_high
    assert not result.significant


def test_the_mid_p_interval_inverts_the_mid_p_test():
    for k, m in [(0, 6), (3, 10), (9, 10), (20, 25)]:
        low, high = mid_p_interval(k, m, 0.05)
        # at each bound, the one-sided mid-p tail equals 2.5%
        if low > 0:
            upper_tail = sum(
                comb(m, i) * low**i * (1 - low) ** (m - i) for i in range(k + 1, m + 1)
            )
            assert upper_tail + comb(m, k) * low**k * (1 - low) ** (m - k) / 2 == pytest.approx(
                0.025, abs=1e-9
            )
        if high < 1:
            lower_tail = sum(comb(m, i) * high**i * (1 - high) ** (m - i) for i in range(k))
            assert lower_tail + comb(m, k) * high**k * (1 - high) ** (m - k) / 2 == pytest.approx(
                0.025, abs=1e-9
            )


def test_wilson_matches_its_formula():
    # 0 of 10: upper bound z²/(n + z²)
    z = 1.959963984540054
    low, high = wilson(0, 10)
    assert low == pytest.approx(0.0, abs=1e-12) and high == pytest.approx(z * z / (10 + z * z))
    # 19 of 20 (Newcombe 1998's table: 0.7639 to 0.9911)
    low, high = wilson(19, 20)
    assert (low, high) == pytest.approx((0.7639, 0.9911), abs=1e-4)


def _datasets(kind: str, rng: random.Random):
    for _ in range(300):
        n = rng.choice([8, 10, 15, 20, 32, 50, 120])
        if kind == "binary":
            psi, d = rng.uniform(0.05, 0.6), rng.uniform(-0.3, 0.3)
            p_better = min(max((psi + d) / 2, 0.0), psi)
            a, b = [], []
            for _ in range(n):
                u, base = rng.random(), float(rng.random() < 0.6)
                if u < p_better:
                    a.append(0.0), b.append(1.0)
                elif u < psi:
                    a.append(1.0), b.append(0.0)
                else:
                    a.append(base), b.append(base)
            yield a, b
        elif kind == "mean":
            shift = rng.uniform(-0.3, 0.3)
            a = [rng.random() for _ in range(n)]
            yield a, [min(1.0, max(0.0, x + shift + rng.gauss(0, 0.3))) for x in a]
        else:
            shift = rng.uniform(0.7, 1.5)
            a = [0.002 * rng.lognormvariate(0, 0.5) for _ in range(n)]
            yield a, [x * shift * rng.lognormvariate(0, 0.5) for x in a]


@pytest.mark.parametrize("kind", ["binary", "mean", "skewed"])
def test_the_interval_excludes_zero_exactly_when_p_is_below_five_percent(kind):
    rng = random.Random(hash(kind) % 1000)
    tested = significant = 0
    for a, b in _datasets(kind, rng):
        result = compare_paired(a, b, kind=kind)  # type: ignore[arg-type]
        assert result.ci_low is not None and result.ci_high is not None
        assert result.ci_high > result.ci_low  # never zero width
        assert result.ci_low <= result.diff <= result.ci_high
        if result.p_value is None:
            assert result.reason == TOO_FEW
            assert not could_reject(result.n, result.differing, result.kind)
            continue
        tested += 1
        excludes = result.ci_low > 0 or result.ci_high < 0
        assert excludes == (result.p_value < 0.05), (a, b, result)
        significant += excludes
    assert tested > 100 and 20 < significant < tested - 20  # both outcomes were exercised


def test_the_bootstrap_option_is_the_same_construction_and_needs_thirty_examples():
    rng = random.Random(5)
    for _ in range(40):
        a = [rng.random() for _ in range(40)]
        b = [x + rng.gauss(rng.uniform(-0.2, 0.2), 0.4) for x in a]
        result = compare_paired(a, b, method="bootstrap", seed=3)
        excludes = result.ci_low > 0 or result.ci_high < 0
        assert excludes == (result.p_value < 0.05)
    with pytest.raises(ValueError, match="30"):
        compare_paired(
            [0.1 * i for i in range(10)], [0.2 * i for i in range(10)], method="bootstrap"
        )


def test_the_paired_t_equals_a_hand_computation():
    a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    b = [2.0, 2.5, 5.0, 4.1, 6.0, 8.0, 7.5]
    diffs = [y - x for x, y in zip(a, b, strict=True)]  # 1, .5, 2, .1, 1, 2, .5
    mean = sum(diffs) / 7
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / 6)
    result = compare_paired(a, b)
    half = 2.446912 * sd / math.sqrt(7)  # t_{6, 0.975} from the table
    assert result.diff == pytest.approx(mean)
    assert (result.ci_low, result.ci_high) == pytest.approx((mean - half, mean + half), rel=1e-6)
    assert result.method == "paired t"
    # t = mean/(sd/√7) lies between the table's one-sided 1% (3.143) and 0.5% (3.707)
    # points with 6 df, so the two-sided p lies between 0.01 and 0.02
    assert 3.143 < mean / (sd / math.sqrt(7)) < 3.707
    assert 0.01 < result.p_value < 0.02


def test_identical_samples_are_too_few_to_test_and_have_no_zero_width_interval():
    binary = compare_paired([1.0, 0.0] * 5, [1.0, 0.0] * 5, kind="binary")
    assert binary.p_value is None and binary.reason == TOO_FEW and binary.differing == 0
    assert binary.ci_low < 0 < binary.ci_high
    four = compare_paired([0.0] * 4, [1.0] * 4, kind="binary")  # even all 4 one way: 0.0625
    assert four.p_value is None and four.reason == TOO_FEW and four.ci_high > four.ci_low
    scores = [1.0, 0.5, 0.0, 1.0, 0.75, 1.0, 0.25, 1.0] * 4
    same = compare_paired(scores, list(scores))
    assert same.diff == 0.0 and same.p_value is None and not same.significant
    assert same.ci_low is None  # no spread: no interval rather than [0, 0]


def test_a_constant_shift_is_read_as_signs_with_an_interval_of_some_width():
    """Every example 0.25 higher (float rounding leaves no spread worth a t): the mid-p of
    32 of 32 up is 2·½·2⁻³², and the interval is McNemar's on the scale of 0.25."""
    rng = random.Random(1)
    a = [rng.random() for _ in range(32)]
    result = compare_paired(a, [x + 0.25 for x in a])
    assert result.diff == pytest.approx(0.25)
    assert result.method == SAME_SHIFT
    assert result.p_value == pytest.approx(2**-32)
    assert result.significant and 0 < result.ci_low < result.ci_high <= 0.25 + 1e-9
    few = compare_paired([1.0, 2.0, 3.0], [2.0, 3.0, 4.0])
    # 3 of 3 up: mid-p 2·½·2⁻³ = 0.125, so the interval holds 0 (and no p is shown)
    assert few.p_value is None and few.reason == TOO_FEW and few.ci_low < 0 < few.ci_high


def test_the_detectable_difference_is_plannings():
    from agenteval_cli.metrics.planning import mcnemar_detectable, paired_detectable

    a = [0.0] * 22 + [0.0] * 7 + [1.0] * 3
    b = [0.0] * 22 + [1.0] * 7 + [0.0] * 3
    assert compare_paired(a, b, kind="binary").detectable == mcnemar_detectable(32, 10 / 32)
    rng = random.Random(2)
    x = [rng.random() for _ in range(20)]
    y = [v + rng.gauss(0, 0.2) for v in x]
    sd = stdev([q - p for p, q in zip(x, y, strict=True)])
    assert compare_paired(x, y).detectable == pytest.approx(paired_detectable(20, sd))


def test_costs_get_the_median_ratio_and_the_concentration_flag():
    a = [1.0, 2.0, 4.0, 1.0, 2.0, 1.0, 3.0, 2.0, 1.0, 2.0]
    b = [1.1, 2.4, 4.4, 1.0, 2.2, 1.2, 3.3, 2.0, 1.1, 40.0]
    result = compare_paired(a, b, kind="skewed")
    # ratios: 1.1 1.2 1.1 1 1.1 1.2 1.1 1 1.1 20 -> median 1.1
    assert result.ratio_median == pytest.approx(1.1)
    assert result.concentrated  # 38 of the 39.9 summed differences come from one example
    assert not concentrated([1.0] * 20)


def test_holm_and_benjamini_hochberg_by_hand():
    p = [0.01, 0.04, 0.03, 0.2]
    # Holm: sorted .01 .03 .04 .2 -> 4·.01, 3·.03, max(.09, 2·.04), max(.09, .2)
    assert holm(p) == pytest.approx([0.04, 0.09, 0.09, 0.2])
    # BH: .2·4/4, .04·4/3, .03·4/2, .01·4/1, each capped by the ones above it
    assert benjamini_hochberg(p) == pytest.approx([0.04, 0.0533333, 0.0533333, 0.2])


def test_side_intervals_are_wilson_for_outcomes_and_t_otherwise():
    assert side_interval([1.0] * 19 + [0.0], "binary") == pytest.approx(wilson(19, 20))
    values = [0.2, 0.4, 0.5, 0.9]
    mean, sd = sum(values) / 4, stdev(values)
    half = 3.182446 * sd / 2  # t_{3, 0.975}
    assert side_interval(values, "mean") == pytest.approx((mean - half, mean + half), abs=1e-6)


def test_a_metric_kind_comes_from_its_declaration_and_its_values():
    outcome = metric("routing_accuracy", fmt="percent")
    assert paired_kind(outcome, [0.0, 1.0], [1.0, 1.0]) == "binary"
    assert paired_kind(outcome, [0.0, 1.0], [1.0, 0.5]) == "mean"  # repetitions averaged
    assert paired_kind(metric("cost_usd", fmt="money", quantity=True), [1.0]) == "skewed"
    assert paired_kind(metric("chain", fmt="count", quantity=True), [0.0, 1.0]) == "mean"


def test_bootstrap_width_matches_the_normal_approximation():
    rng = random.Random(3)
    diffs = [rng.gauss(0.1, 1.0) for _ in range(400)]
    low, high = bootstrap_ci(diffs, resamples=4000)
    expected = 2 * 1.96 * stdev(diffs) / math.sqrt(len(diffs))
    assert high - low == pytest.approx(expected, rel=0.1)


def test_empty_and_mismatched_samples():
    empty = compare_paired([], [])
    assert empty.n == 0 and empty.diff is None and not empty.significant
    with pytest.raises(ValueError, match="differ in length"):
        compare_paired([1.0], [1.0, 2.0])
    assert stdev([1.0]) is None
    assert stdev([1.0, 3.0]) == pytest.approx(math.sqrt(2))


def test_examples_are_paired_by_id_so_the_test_does_not_depend_on_the_stored_order():
    rng = random.Random(3)
    ids = [f"ex{i:03d}" for i in range(40)]
    a = {e: rng.random() for e in ids}
    b = {e: a[e] + rng.uniform(-0.2, 0.4) for e in ids}
    shuffled = rng.sample(ids, len(ids))
    a2, b2 = ({e: side[e] for e in shuffled} for side in (a, b))
    one, two = compare_examples(a, b), compare_examples(a2, b2)
    assert one == two
    assert one == compare_paired([a[e] for e in ids], [b[e] for e in ids])
    b.pop("ex000")
    assert compare_examples(a, b).n == 39
    assert compare_examples(a, {}) is None


def test_a_difference_of_two_rates_is_never_wider_than_100_points():
    """Differences -0.5, -1, 0, -1: mean -0.625, sd 0.4787, t(3 df, 0.975) = 3.1824, so t
    gives [-1.387, +0.137]; a rate's difference lies in [-1, 1], so the interval stops at
    -1, and a quantity's is left as t gives it."""
    from agenteval_cli.report.comparison import compared_with_first

    a = {"e1": 1.0, "e2": 1.0, "e3": 1.0, "e4": 1.0}
    b = {"e1": 0.5, "e2": 0.0, "e3": 1.0, "e4": 0.0}
    half = 3.182446 * math.sqrt(0.6875 / 3) / 2
    [rate] = compared_with_first([a, b], metric("coverage", fmt="percent"), {})
    [count] = compared_with_first([a, b], metric("steps", quantity=True), {})
    assert rate is not None and count is not None
    assert (rate.ci_low, rate.ci_high) == pytest.approx((-1.0, -0.625 + half), abs=1e-4)
    assert (count.ci_low, count.ci_high) == pytest.approx((-0.625 - half, -0.625 + half), abs=1e-4)


@pytest.mark.parametrize(("worse", "tested"), [(4, False), (5, True)])
def test_a_comparison_is_tested_when_its_differing_examples_could_show_a_difference(worse, tested):
    """5 of 22 examples worse and none better (mid-p 2**-5 = 0.031, scipy's binomtest gives
    the exact 0.0625 and mid-p halves its last term) is tested, and significant; 4 cannot be:
    even all 4 one way give a mid-p of 0.0625."""
    before = [1.0] * 22
    after = [0.0] * worse + [1.0] * (22 - worse)
    found = compare_paired(before, after, kind="binary")
    assert (found.p_value is not None) == tested
    if tested:
        assert found.p_value == pytest.approx(2**-5)
        assert found.significant and found.ci_high < 0
    else:
        assert found.reason == TOO_FEW and found.ci_high > 0
