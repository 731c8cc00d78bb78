"""``python -m bench.calibration [--replicates N] [--write docs/statistics.md]``: how often
agenteval's own comparison and gate are wrong, on synthetic paired data with known truth.

Every replicate builds two experiments (:class:`ExperimentData`, repetitions and all) from a
setting's generator and runs them through the code compare and the gate use: per-example
means, the metric's kind (:func:`agenteval_cli.metrics.kinds.paired_kind`), its interval
and test (:func:`agenteval_cli.report.comparison.compared_with_first`), and the gate's
verdict (:func:`agenteval_cli.gating.verdict.evaluate`). Printed per setting: the share of
replicates whose p is below 0.05 (the type-I error where the truth is no difference, the
power otherwise), the share whose 95% interval holds the true difference, and for the gate
the share of unchanged runs it fails. ``--write`` puts the table into the docs page between
its ``calibration`` markers.
"""

from __future__ import annotations

import argparse
import math
import random
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agenteval_cli.results.sources import ExperimentData, Run

ROOT = Path(__file__).resolve().parent.parent
START, END = "<!-- calibration:start -->", "<!-- calibration:end -->"
SEED = 20261203

# one replicate's per-example values: (side A, side B), each a list of repetitions per example
Sides = tuple[list[list[float]], list[list[float]]]
Generator = Callable[[random.Random, int], Sides]


@dataclass(frozen=True)
class Setting:
    name: str
    key: str  # the metric the values are scored as (its declaration decides the kind)
    n: int
    k: int
    truth: float  # the true mean per-example difference B − A
    shown: str  # the truth as the table shows it
    draw: Generator


def _pair(rng: random.Random, discordance: float, difference: float) -> tuple[float, float]:
    """One example's 0/1 outcomes: they differ with probability ``discordance``, B up
    ``difference`` more often than down."""
    u = rng.random()
    up = (discordance + difference) / 2
    if u < up:
        return 0.0, 1.0
    if u < discordance:
        return 1.0, 0.0
    same = float(rng.random() < 0.7)
    return same, same


def pass_fail(discordance: float, difference: float) -> Generator:
    def draw(rng: random.Random, n: int) -> Sides:
        pairs = [_pair(rng, discordance, difference) for _ in range(n)]
        return [[a] for a, _ in pairs], [[b] for _, b in pairs]

    return draw


def _coverage_score(rng: random.Random, terms: int, found: float) -> float:
    return sum(rng.random() < found for _ in range(terms)) / terms


def bounded_scores(shift: float) -> Generator:
    """A coverage score: 2–4 terms, each found with the example's probability ~ Beta(3, 1);
    B finds each term with that probability plus ``shift`` (capped)."""

    def draw(rng: random.Random, n: int) -> Sides:
        a, b = [], []
        for _ in range(n):
            terms, found = rng.randint(2, 4), rng.betavariate(3, 1)
            a.append([_coverage_score(rng, terms, found)])
            b.append([_coverage_score(rng, terms, min(1.0, found + shift))])
        return a, b

    return draw


def _poisson(rng: random.Random, rate: float) -> int:
    limit, count, product = math.exp(-rate), 0, rng.random()
    while product > limit:
        count += 1
        product *= rng.random()
    return count


def counts(extra: float) -> Generator:
    """Handoff chain lengths: Poisson(λ) with the example's λ ~ Gamma(2, 1); B's λ + extra."""

    def draw(rng: random.Random, n: int) -> Sides:
        rates = [rng.gammavariate(2, 1) for _ in range(n)]
        return (
            [[float(_poisson(rng, r))] for r in rates],
            [[float(_poisson(rng, r + extra))] for r in rates],
        )

    return draw


def costs(ratio: float) -> Generator:
    """An example's base cost exp(N(0, 0.5)) × $0.002 (examples spread about 7×), times a
    mean-1 lognormal(σ = 0.5) per run; B's runs cost ``ratio`` times as much."""
    sigma = 0.5

    def draw(rng: random.Random, n: int) -> Sides:
        a, b = [], []
        for _ in range(n):
            base = math.exp(rng.gauss(0, 0.5)) * 0.002
            a.append([base * rng.lognormvariate(-(sigma**2) / 2, sigma)])
            b.append([ratio * base * rng.lognormvariate(-(sigma**2) / 2, sigma)])
        return a, b

    return draw


def repeated_same_agent(k: int) -> Generator:
    """The same agent twice, k repetitions each: per example p ~ Beta(0.5, 0.25), so an
    example mostly passes or mostly fails (repetitions correlated within it)."""

    def draw(rng: random.Random, n: int) -> Sides:
        a, b = [], []
        for _ in range(n):
            p = rng.betavariate(0.5, 0.25)
            a.append([float(rng.random() < p) for _ in range(k)])
            b.append([float(rng.random() < p) for _ in range(k)])
        return a, b

    return draw


def repeated_two_agents(k: int) -> Generator:
    """Two different agents equal on average, k repetitions each: a shared difficulty per
    example plus a side-specific effect (an example × side interaction)."""

    def draw(rng: random.Random, n: int) -> Sides:
        a, b = [], []
        for _ in range(n):
            difficulty = rng.gauss(1.0, 1.5)
            p_a = 1 / (1 + math.exp(-(difficulty + rng.gauss(0, 1))))
            p_b = 1 / (1 + math.exp(-(difficulty + rng.gauss(0, 1))))
            a.append([float(rng.random() < p_a) for _ in range(k)])
            b.append([float(rng.random() < p_b) for _ in range(k)])
        return a, b

    return draw


def settings() -> list[Setting]:
    found = []
    for n in (10, 20, 50, 200):
        found.append(
            Setting("pass/fail, 20% differ", "routing_accuracy", n, 1, 0, "0", pass_fail(0.2, 0))
        )
    for n in (20, 50, 200):
        found.append(
            Setting("pass/fail, 5% differ", "routing_accuracy", n, 1, 0, "0", pass_fail(0.05, 0))
        )
    for n in (10, 20, 50, 200):
        found.append(
            Setting(
                "pass/fail, 30% differ",
                "routing_accuracy",
                n,
                1,
                0.1,
                "+10 pp",
                pass_fail(0.3, 0.1),
            )
        )
    for n in (10, 20, 50):
        found.append(
            Setting(
                "pass/fail, 10% differ",
                "routing_accuracy",
                n,
                1,
                0.05,
                "+5 pp",
                pass_fail(0.1, 0.05),
            )
        )
    for n in (10, 20, 50):
        found.append(
            Setting("coverage score", "resolution_coverage", n, 1, 0, "0", bounded_scores(0))
        )
    for n in (10, 20, 50, 200):
        found.append(Setting("chain length", "handoff_chain_length", n, 1, 0, "0", counts(0)))
    for n in (10, 20, 50):
        found.append(
            Setting("chain length", "handoff_chain_length", n, 1, 0.5, "+0.5", counts(0.5))
        )
    for n in (20, 50, 200):
        found.append(Setting("cost", "cost_usd", n, 1, 0, "0", costs(1.0)))
    for n in (20, 50, 200):
        found.append(Setting("cost ×1.25", "cost_usd", n, 1, math.nan, "×1.25", costs(1.25)))
    for n in (10, 20, 50):
        found.append(
            Setting(
                "pass/fail ×3, same agent", "routing_accuracy", n, 3, 0, "0", repeated_same_agent(3)
            )
        )
        found.append(
            Setting(
                "pass/fail ×3, two agents", "routing_accuracy", n, 3, 0, "0", repeated_two_agents(3)
            )
        )
    return found


def _experiment(target: str, values: list[list[float]], key: str) -> ExperimentData:
    runs = [
        Run(example_id=f"ex-{i:04d}", repetition=r, scores={key: value})
        for i, reps in enumerate(values)
        for r, value in enumerate(reps)
    ]
    return ExperimentData(target, target, runs, repetitions=len(values[0]))


def _true_difference(setting: Setting) -> float:
    if setting.key == "cost_usd" and setting.shown.startswith("×"):
        ratio = float(setting.shown[1:])
        return (ratio - 1) * 0.002 * math.exp(0.5**2 / 2)  # E[base] of exp(N(0, 0.5))·$0.002
    return setting.truth


@dataclass(frozen=True)
class Outcome:
    setting: Setting
    replicates: int
    rejected: float
    covered: float


def run_setting(setting: Setting, replicates: int, seed: int = SEED) -> Outcome:
    from agenteval_cli.metrics.catalog import BUILT_IN
    from agenteval_cli.report.comparison import compared_with_first

    rng = random.Random(f"{seed}:{setting.name}:{setting.n}:{setting.k}:{setting.shown}")
    truth = _true_difference(setting)
    info = BUILT_IN.info(setting.key)
    rejected = covered = 0
    for _ in range(replicates):
        a, b = setting.draw(rng, setting.n)
        sides = [_experiment("a", a, setting.key), _experiment("b", b, setting.key)]
        (paired,) = compared_with_first([s.per_example(setting.key) for s in sides], info, {})
        assert paired is not None
        rejected += paired.significant
        if paired.ci_low is not None and paired.ci_high is not None:
            covered += paired.ci_low <= truth <= paired.ci_high
    return Outcome(setting, replicates, rejected / replicates, covered / replicates)


# -- the gate on unchanged runs ---------------------------------------------------------

GATE_KEYS = (
    "routing_accuracy",
    "resolution_coverage",
    "handoff_chain_length",
    "ping_pong",
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "cost_usd",
)


def _agent_run(rng: random.Random, examples: list[tuple[float, ...]]) -> list[dict[str, float]]:
    """One run of a stochastic agent over fixed examples (each its own difficulty)."""
    rows = []
    for pass_rate, found, chain, pong, tokens in examples:
        routed = float(rng.random() < pass_rate)
        inputs = round(tokens * rng.lognormvariate(0, 0.2))
        outputs = round(tokens * 0.1 * rng.lognormvariate(0, 0.3))
        rows.append(
            {
                "routing_accuracy": routed,
                "resolution_coverage": _coverage_score(rng, 3, found),
                "handoff_chain_length": float(_poisson(rng, chain)),
                "ping_pong": float(rng.random() < pong),
                "input_tokens": float(inputs),
                "output_tokens": float(outputs),
                "total_tokens": float(inputs + outputs),
                "cost_usd": inputs * 2.5e-6 + outputs * 1e-5,
            }
        )
    return rows


def _examples(rng: random.Random, n: int) -> list[tuple[float, ...]]:
    return [
        (
            rng.betavariate(4, 1),
            rng.betavariate(3, 1),
            rng.gammavariate(2, 1),
            rng.betavariate(1, 9),
            1500 * math.exp(rng.gauss(0, 0.4)),
        )
        for _ in range(n)
    ]


def _side(target: str, rows: list[dict[str, float]]) -> ExperimentData:
    runs = [Run(example_id=f"ex-{i:04d}", scores=dict(row)) for i, row in enumerate(rows)]
    return ExperimentData(f"{target}-run", target, runs)


@dataclass(frozen=True)
class GateOutcome:
    name: str
    n: int
    checks: int
    replicates: int
    failed: float


def run_gate(
    name: str, targets: int, named: bool, n: int, replicates: int, seed: int = SEED
) -> GateOutcome:
    """The share of unchanged runs the gate fails: per replicate, fresh examples, a baseline
    run and a run of the same agent, for each of ``targets`` targets; ``named``: every score
    named in ``max_regression`` (8 per target), else the gate's default checks."""
    from agenteval_cli.gating.verdict import evaluate

    rng = random.Random(f"{seed}:gate:{name}:{n}")
    failed = 0
    max_regression = {k: 0.0 for k in GATE_KEYS} if named else {}
    checks = targets * ((len(GATE_KEYS) if named else 2) + 1)
    for _ in range(replicates):
        sides, baselines = [], {}
        for index in range(targets):
            target = f"agent{index}"
            examples = _examples(rng, n)
            baselines[target] = _side(target, _agent_run(rng, examples))
            sides.append(_side(target, _agent_run(rng, examples)))
        failures = evaluate(  # the test's own false alarms: an untested check is listed
            sides,
            thresholds={},
            baselines=baselines,
            max_regression=max_regression,
            allow_untested=True,
        )
        failed += bool(failures)
    return GateOutcome(name, n, checks, replicates, failed / replicates)


def gate_settings() -> list[tuple[str, int, bool, int]]:
    return [
        ("1 target, default checks", 1, False, 32),
        ("2 targets, default checks", 2, False, 32),
        ("2 targets, 8 scores named", 2, True, 32),
        ("2 targets, 8 scores named", 2, True, 100),
    ]


def _percent(value: float) -> str:
    return f"{value:.3f}"


def table(outcomes: list[Outcome], gates: list[GateOutcome]) -> str:
    lines = [
        "| setting | n | k | true Δ | replicates | type-I error | power | 95% CI coverage |",
        "|---|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for o in outcomes:
        s = o.setting
        null = s.truth == 0
        lines.append(
            f"| {s.name} | {s.n} | {s.k} | {s.shown} | {o.replicates:,} | "
            f"{_percent(o.rejected) if null else '–'} | {'–' if null else _percent(o.rejected)} | "
            f"{_percent(o.covered)} |"
        )
    lines += [
        "",
        "| the gate on runs that changed nothing | examples | checks | replicates | runs failed |",
        "|---|--:|--:|--:|--:|",
    ]
    for g in gates:
        lines.append(f"| {g.name} | {g.n} | {g.checks} | {g.replicates:,} | {_percent(g.failed)} |")
    return "\n".join(lines)


def write_docs(path: Path, text: str) -> None:
    page = path.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(START) + r"\n.*?" + re.escape(END), re.S)
    if not pattern.search(page):
        raise SystemExit(f"{path}: no {START} … {END} block to write the table into")
    page = pattern.sub(lambda _: f"{START}\n{text}\n{END}", page)
    path.write_text(page, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    import agenteval_cli.evaluators.registry  # noqa: F401  (declares the built-in metrics)

    parser = argparse.ArgumentParser(prog="python -m bench.calibration", description=__doc__)
    parser.add_argument("--replicates", type=int, default=2000, help="per comparison setting")
    parser.add_argument("--gate-replicates", type=int, default=1000, help="per gate setting")
    parser.add_argument("--write", type=Path, help="the docs page to write the table into")
    args = parser.parse_args(argv)
    started = time.monotonic()
    outcomes = []
    for setting in settings():
        outcomes.append(run_setting(setting, args.replicates))
        print(f"{setting.name} n={setting.n}: done", file=sys.stderr)
    gates = [run_gate(*g, replicates=args.gate_replicates) for g in gate_settings()]
    text = table(outcomes, gates)
    print(text)
    print(f"({time.monotonic() - started:.0f} s)", file=sys.stderr)
    if args.write is not None:
        write_docs(args.write, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
