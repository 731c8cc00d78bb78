"""``agenteval plan`` and its formulas: hand-worked values, a simulation of the power they
promise, pilots read from real stored runs, and the one-line errors."""

from __future__ import annotations

import math
import os
import random
import re
from pathlib import Path

import pytest
from projects import project, rows
from typer.testing import CliRunner

from agenteval_cli.cli import app
from agenteval_cli.metrics import planning

runner = CliRunner()
Z_A, Z_B = 1.959963984540054, 0.8416212335729143  # z_{0.975}, z_{0.8}
ROOT = Path(__file__).resolve().parent.parent
PILOT = r"from the pilot spec-a-[0-9a-f]{8} vs spec-b-[0-9a-f]{8}"
DOC = ROOT / "docs" / "planning.md"


def test_z_values_are_the_normal_quantiles():
    z_a, z_b = planning.z_values()
    assert (round(z_a, 9), round(z_b, 9)) == (round(Z_A, 9), round(Z_B, 9))


def test_mcnemar_examples_match_the_formula_by_hand():
    # d = 0.1, ψ = 0.2: (1.95996·√0.2 + 0.84162·√0.19)² / 0.01
    #   = (0.876524 + 0.366854)² / 0.01 = 1.545989 / 0.01 = 154.6 -> 155
    assert planning.mcnemar_examples(0.1, 0.2) == 155
    # d = 0.05, ψ = 0.1: (1.95996·0.316228 + 0.84162·0.312250)² / 0.0025
    #   = (0.619795 + 0.262796)² / 0.0025 = 0.778967 / 0.0025 = 311.6 -> 312
    assert planning.mcnemar_examples(0.05, 0.1) == 312
    assert planning.mcnemar_examples(-0.05, 0.1) == 312  # the sign does not matter


def test_mcnemar_detectable_inverts_the_examples():
    detectable = planning.mcnemar_detectable(155, 0.2)
    assert detectable is not None and 0.0995 < detectable <= 0.1
    # 10 examples with 20% discordance: even d = ψ = 0.2 needs (1.95996·√0.2 + 0.84162·√0.16)²
    # / 0.04 = (0.876524 + 0.336648)² / 0.04 = 36.8 examples, so nothing is detectable
    assert planning.mcnemar_detectable(10, 0.2) is None


def test_paired_examples_and_detectable_by_hand():
    # ((1.95996 + 0.84162)·1 / 0.5)² = (5.603170)² = 31.4 -> 32
    assert planning.paired_examples(0.5, 1.0) == 32
    assert planning.paired_examples(0.2, 1.0) == 197  # (14.007925)² = 196.2
    assert planning.paired_detectable(32, 1.0) == pytest.approx((Z_A + Z_B) / math.sqrt(32))


def test_repetitions_shrink_only_the_within_example_part():
    # σ_between = 1, σ_w = 2: σ_d² = 1 + 4·2/k -> 9, 5, 11/3, 2.6
    assert [round(planning.difference_sd(1, 2, k) ** 2, 6) for k in (1, 2, 3, 5)] == [
        9,
        5,
        round(11 / 3, 6),
        2.6,
    ]
    assert planning.difference_sd(1, 2, 10**6) == pytest.approx(1, abs=1e-5)


def test_pilot_spread_splits_between_and_within():
    # differences of the means 0, 2, 4: sd² = 4; repetitions (x, x+2) on both sides: σ_w² = 2
    side_a = {"e0": [1.0, 3.0], "e1": [1.0, 3.0], "e2": [1.0, 3.0]}
    side_b = {"e0": [1.0, 3.0], "e1": [3.0, 5.0], "e2": [5.0, 7.0]}
    spread = planning.pilot_spread(side_a, side_b)
    assert (spread.examples, spread.repetitions) == (3, 2.0)
    assert spread.sd == pytest.approx(2.0)
    assert spread.within_sd == pytest.approx(math.sqrt(2))
    assert spread.between_sd == pytest.approx(math.sqrt(4 - 2 * (1 / 2 + 1 / 2)))  # √2
    assert spread.sd_at(2) == pytest.approx(2.0)
    assert spread.sd_at(1) == pytest.approx(math.sqrt(2 + 4))


def test_mcnemar_plan_has_the_power_it_promises():
    """Simulated pairs at the planned n: the two-sided McNemar z test rejects about 80%."""
    rng = random.Random(20261202)
    discordance, difference = 0.3, 0.15
    n = planning.mcnemar_examples(difference, discordance)
    p01, p10 = (discordance + difference) / 2, (discordance - difference) / 2
    rejected = 0
    trials = 2000
    for _ in range(trials):
        n01 = n10 = 0
        for _ in range(n):
            u = rng.random()
            n01 += u < p01
            n10 += p01 <= u < p01 + p10
        if n01 + n10 and abs(n01 - n10) / math.sqrt(n01 + n10) > Z_A:
            rejected += 1
    assert abs(rejected / trials - 0.8) < 0.05, (n, rejected / trials)


def test_paired_plan_with_repetitions_has_the_power_it_promises():
    """Examples with a true difference spread σ_between and repetitions with noise σ_w on
    each side, averaged per example: at the planned n for k = 2 the z test on the
    per-example mean differences rejects about 80%."""
    rng = random.Random(7)
    between, within, k, difference = 1.0, 2.0, 2, 0.5
    n = planning.paired_examples(difference, planning.difference_sd(between, within, k))
    assert n == 157  # 7.848879·5 / 0.25 = 156.98 -> 157
    rejected, trials = 0, 1000
    for _ in range(trials):
        diffs = []
        for _ in range(n):
            true = difference + rng.gauss(0, between)
            mean_a = sum(rng.gauss(0, within) for _ in range(k)) / k
            mean_b = sum(true + rng.gauss(0, within) for _ in range(k)) / k
            diffs.append(mean_b - mean_a)
        mean = sum(diffs) / n
        sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1))
        rejected += abs(mean) / (sd / math.sqrt(n)) > Z_A
    assert abs(rejected / trials - 0.8) < 0.05, rejected / trials


def _plan(*args: str, cwd: Path | None = None) -> tuple[int, str, str]:
    old = Path.cwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        result = runner.invoke(app, ["plan", *args], terminal_width=200)
    finally:
        os.chdir(old)
    return result.exit_code, result.stdout, result.stderr


def test_plan_without_a_pilot_for_a_0_1_metric():
    code, out, _ = _plan(
        "--metric", "routing_accuracy", "--difference", "0.1", "--discordance", "0.2"
    )
    assert code == 0
    assert out.splitlines() == [
        "routing_accuracy: to detect a difference of 10.0 pp (two-sided 0.05, power 0.8, "
        "McNemar's test, normal approximation)",
        "  discordance 20.0% (given)",
        "  examples needed (k repetitions per side): k=1: 155",
    ]


def test_plan_without_a_pilot_for_a_score():
    code, out, _ = _plan("--metric", "total_tokens", "--difference", "50", "--sd", "100", "-k", "3")
    assert code == 0
    assert out.splitlines()[1:] == [
        "  sd of per-example differences 100 (given)",
        "  examples needed (k repetitions per side): k=3: 32",
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--difference", "0", "--discordance", "0.2"], "--difference must be a finite number"),
        (["--difference", "0.1", "--discordance", "0"], "--discordance must lie in (0, 1]"),
        (["--difference", "0.1", "--discordance", "1.5"], "--discordance must lie in (0, 1]"),
        (["--difference", "0.3", "--discordance", "0.2"], "a difference of 0.3 is larger than"),
        (["--difference", "0.1"], "nothing to plan from"),
        (["--difference", "0.1", "--discordance", "0.2", "--sd", "1"], "not both"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, message):
    code, _, err = _plan("--metric", "routing_accuracy", *args)
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and message in err, err


# Every value a float option can be given that a formula may not survive.
HOSTILE = ("nan", "inf", "-inf", "0", "-1", "1e-300", "1e300", "5e-324", "1.7e308")
# Each argument in turn hostile, the others sensible: discordance and sd plans both.
SENSIBLE = {"--difference": "0.1", "--alpha": "0.05", "--power": "0.8"}


def _cases() -> list[list[str]]:
    cases = []
    for spread in ({"--discordance": "0.2"}, {"--sd": "1"}):
        sensible = {**SENSIBLE, **spread}
        for option in sensible:
            for value in HOSTILE:
                args = {**sensible, option: value}
                cases.append([part for pair in args.items() for part in pair])
        for repetitions in ("0", "-3", "1001", "10000000000000000000000"):
            if "--sd" in spread:
                cases.append(["--difference", "0.1", "--sd", "1", "-k", repetitions])
    cases.append(["--difference", "1e300", "--sd", "1e-300"])
    cases.append(["--difference", "1e-300", "--sd", "1e300"])
    return cases


@pytest.mark.parametrize("args", _cases(), ids=" ".join)
def test_every_argument_is_range_checked_and_the_answer_is_a_count(args):
    """Whatever each argument is given: a plan whose every count is a whole number of 1 or
    more, or one line naming what is out of range, exit 2; never a traceback nor 0."""
    code, out, err = _plan("--metric", "routing_accuracy", *args)
    assert code in (0, 2), (code, out, err)
    if code == 2:
        assert len(err.strip().splitlines()) == 1 and err.startswith("error: "), err
        assert "Traceback" not in out + err
        return
    (needed,) = [line for line in out.splitlines() if "examples needed" in line]
    counts = [int(n) for n in re.findall(r"k=\d+: (\S+)", needed)]
    assert counts and all(1 <= n <= planning.MAX_EXAMPLES for n in counts), needed


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--difference", "nan", "--discordance", "0.2"], "--difference must be a finite number"),
        (["--difference", "1e-300", "--sd", "1"], "needs more than 9,007,199,254,740,992"),
        (["--difference", "1e-300", "--discordance", "0.2"], "needs more than 9,007,199,254,740,"),
        (["--difference", "0.1", "--sd", "inf"], "--sd must be a finite number above 0, not inf"),
        (["--difference", "0.1", "--sd", "1", "--alpha", "1e-300"], "--alpha must lie in [1e-15"),
        (["--difference", "0.1", "--sd", "1", "--power", "0.01"], "--power must lie between"),
        (["--difference", "0.1", "--sd", "1", "-k", "1001"], "--repetitions must lie in [1, 1000]"),
    ],
)
def test_an_argument_out_of_range_is_named(args, message):
    code, _, err = _plan("--metric", "routing_accuracy", *args)
    assert code == 2 and message in err, err


def test_a_difference_far_above_its_spread_needs_one_example():
    code, out, _ = _plan("--metric", "total_tokens", "--difference", "1e300", "--sd", "1e-300")
    assert code == 0
    assert out.splitlines()[-1] == "  examples needed (k repetitions per side): k=1: 1"


EVALS = (
    "def ok(outputs):\n    return outputs['final_response'] == 'yes'\n\n"
    "def length(outputs):\n    return float(len(outputs['final_response']))\n"
)
# a says yes except on q9; b says no on q0, q1, q2: 4 of 10 examples differ, b 20 pp worse
BINARY = (
    "def answer_a(inputs):\n"
    "    return {'final_response': 'no' if inputs['question'] == 'q9' else 'yes'}\n\n"
    "def answer_b(inputs):\n"
    "    return {'final_response': 'no' if inputs['question'] in ('q0', 'q1', 'q2') else 'yes'}\n"
)
# repetition r of example i: a answers 5 + r characters, b 5 + EXTRA[i] + r (r = 0, 1, 2)
SCORES = (
    "EXTRA = [0, 2, 4, 1, 3]\nSEEN = {}\n\n"
    "def _next(side, question):\n"
    "    SEEN[side, question] = SEEN.get((side, question), -1) + 1\n"
    "    return SEEN[side, question]\n\n"
    "def answer_a(inputs):\n"
    "    return {'final_response': 'x' * (5 + _next('a', inputs['question']))}\n\n"
    "def answer_b(inputs):\n"
    "    extra = EXTRA[int(inputs['question'][1:])]\n"
    "    return {'final_response': 'x' * (5 + extra + _next('b', inputs['question']))}\n"
)


def _run_pilot(folder: Path, code: str, count: int, extra: str = "") -> None:
    spec = project(
        folder,
        code,
        targets={"a": "answer_a", "b": "answer_b"},
        data=rows(count),
        evaluators="\n  - {name: ok, type: custom, target: evals.py:ok, format: percent}\n"
        "  - {name: length, type: custom, target: evals.py:length, format: count}\n",
        concurrency=1,
        extra=extra,
        files={"evals.py": EVALS},
    )
    old = Path.cwd()
    os.chdir(folder)
    try:
        result = runner.invoke(app, ["run", str(spec), "--no-cache"], terminal_width=200)
    finally:
        os.chdir(old)
    assert result.exit_code == 0, result.output


def test_plan_from_a_0_1_pilot(tmp_path):
    _run_pilot(tmp_path, BINARY, 10)
    code, out, err = _plan(
        "--metric", "ok", "--difference", "0.1", "--pilot", "a", "b", cwd=tmp_path
    )
    assert code == 0, err
    lines = out.splitlines()
    # ψ = 0.4: (1.95996·√0.4 + 0.84162·√0.39)² / 0.01 = (1.239590 + 0.525590)² / 0.01 = 311.6
    assert lines[2] == "  examples needed (k repetitions per side): k=1: 312"
    assert re.fullmatch(
        rf"  discordance 40\.0% \({PILOT}: 10 examples, 4 of 10 differ\)",
        lines[1],
    ), lines[1]
    # 10 examples at ψ = 0.4: even d = 0.4 needs (1.239590 + 0.84162·√0.24)² / 0.16 = 16.8
    assert lines[3] == "  at the pilot's 10 examples: no difference is detectable"
    code, _, err = _plan("--metric", "ok", "--difference", "0.5", "--pilot", "a", "b", cwd=tmp_path)
    assert code == 2 and "a difference of 0.5 is larger than the discordance 0.4" in err
    code, _, err = _plan(
        "--metric", "nope", "--difference", "0.1", "--pilot", "a", "b", cwd=tmp_path
    )
    assert code == 2 and "unknown metric 'nope'" in err and "length, ok" in err, err
    code, _, err = _plan(
        "--metric", "ok", "--difference", "0.1", "--sd", "1", "--pilot", "a", "b", cwd=tmp_path
    )
    assert code == 2 and "give --discordance, not --sd" in err, err
    # a given discordance replaces the pilot's; the pilot's 10 examples still set the detectable
    code, out, err = _plan(
        "--metric",
        "ok",
        "--difference",
        "0.2",
        "--discordance",
        "1",
        "--pilot",
        "a",
        "b",
        cwd=tmp_path,
    )
    assert code == 0, err
    # ψ = 1, d = 0.2: (1.95996 + 0.84162·√0.96)² / 0.04 = (1.959964 + 0.824610)² / 0.04 = 193.9
    assert out.splitlines()[1:3] == [
        "  discordance 100.0% (given)",
        "  examples needed (k repetitions per side): k=1: 194",
    ]
    # 10 examples at ψ = 1: d with 10·d² = (1.959964 + 0.841621·√(1 − d²))²; d = 0.78475:
    # 10·0.615835 = 6.158 and (1.959964 + 0.841621·0.619810)² = 2.481607² = 6.158
    assert out.splitlines()[3] == "  at the pilot's 10 examples: detectable difference 78.5 pp"


def test_plan_from_a_pilot_with_repetitions(tmp_path):
    _run_pilot(tmp_path, SCORES, 5, extra="repetitions: 3\n")
    code, out, err = _plan(
        "--metric", "length", "--difference", "1", "--pilot", "a", "b", cwd=tmp_path
    )
    assert code == 0, err
    lines = out.splitlines()
    # differences of the means 0, 2, 4, 1, 3: sd² = 10/4 = 2.5; repetitions 0, 1, 2 apart:
    # σ_w² = 1; σ_between² = 2.5 − 1·(1/3 + 1/3) = 1.833; σ_d² = 1.833 + 2/k
    assert re.fullmatch(
        rf"  sd of per-example differences 1\.581 \({PILOT}: 5 examples, "
        r"3 repetition\(s\); between examples 1\.354, within an example 1 per repetition\)",
        lines[1],
    ), lines[1]
    # n = 7.848879·σ_d²: 30.09, 22.24, 19.62, 17.53
    assert (
        lines[2] == "  examples needed (k repetitions per side): k=1: 31, k=2: 23, k=3: 20, k=5: 18"
    )
    # 2.801585·1.581139 / √5 = 1.981
    assert lines[3] == "  at the pilot's 5 examples: detectable difference 1.981"
    code, out, err = _plan(
        "--metric",
        "length",
        "--difference",
        "1",
        "--discordance",
        "0.2",
        "--pilot",
        "a",
        "b",
        cwd=tmp_path,
    )
    assert code == 2 and "give --sd, not --discordance" in err, err


def sample_size_table() -> str:
    """The docs' table: examples for McNemar at 80% power, two-sided 5%."""
    discordances = (0.1, 0.2, 0.3, 0.5)
    header = "| difference | " + " | ".join(f"discordance {q:.0%}" for q in discordances) + " |"
    lines = [header, "|---|" + "---|" * len(discordances)]
    for d in (0.05, 0.1, 0.2):
        cells = [str(planning.mcnemar_examples(d, q)) if d <= q else "–" for q in discordances]
        lines.append(f"| {d * 100:.0f} pp | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


TABLE = re.compile(r"(<!-- table: sample sizes -->\n)(.*?)(<!-- end table -->)", re.S)


def test_the_docs_sample_size_table_is_the_module_s():
    text = DOC.read_text(encoding="utf-8")
    found = TABLE.search(text)
    assert found is not None, "docs/planning.md has no generated table"
    if os.environ.get("AGENTEVAL_WRITE_DOCS") == "1":
        DOC.write_text(TABLE.sub(lambda m: m[1] + sample_size_table() + m[3], text), "utf-8")
        return
    assert found[2] == sample_size_table()
