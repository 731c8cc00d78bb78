"""Every view of an experiment shows the same figure for every metric.

A seeded generator writes projects whose targets (``consistency_targets``) raise, stop at
interrupt() or answer as the seed draws, per example and repetition, on single-turn rows
and conversations, with two or three targets, repetitions of 1 to 3, evaluators that
score pass/fail, rates with nulls, tokens and cost; some are run as shards and merged,
some rescored. Each experiment is then read through every view: the run table at 250
columns, ``--json``, compare's console (at 200 and 250 columns) and ``--json``, the
Markdown and HTML reports, JUnit, the gate's threshold lines, a saved baseline and a
``run --json`` file read back as a baseline, the API's report, the lines the pytest
plugin's check fails a test with (the spec run again through the API) and ``dataset
add-failures``. Each figure is checked against one computed here from the stored results
by the rule docs/output.md states, at the precision each view shows:

- a score's figure is the mean over the examples of each example's mean over its
  repetitions that scored it (a null score, or one an unanswered repetition cannot have,
  is left out); a conversation is one example;
- a total (``cost (total)``) is the sum over every result;
- the error and interrupt rates are the shares of results with that status.
"""

from __future__ import annotations

import html as htmllib
import json
import math
import os
import random
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from consistency_targets import PRICING

from agenteval_cli.metrics.catalog import Catalog
from agenteval_cli.metrics.info import format_value

RUN_KEYS = ("error_rate", "interrupt_rate")
TIMINGS = ("latency_p50_s", "latency_p95_s")
FAST_SEEDS = range(4)
# with the fast ones, over 200 experiments; AGENTEVAL_VIEW_SEEDS=START:STOP checks others
# (held-out seeds) instead
SLOW_SEEDS = range(*map(int, os.environ.get("AGENTEVAL_VIEW_SEEDS", "4:75").split(":")))


# --- the generator ------------------------------------------------------------------------


@dataclass
class Scenario:
    """One generated project and how it is run."""

    seed: int
    folder: Path
    spec: Path
    targets: list[str]
    repetitions: int
    kind: str  # "run", "shards" or "rescore"
    thresholds: dict[str, str] = field(default_factory=dict)


def generate(seed: int, folder: Path) -> Scenario:
    rng = random.Random(seed)
    count = rng.randint(2, 3)
    targets = [
        f"t_{rng.choice((0, 10, 20, 35))}_{rng.choice((0, 0, 10, 20))}_{rng.randint(30, 90)}_{i}"
        for i in range(count)
    ]
    repetitions = rng.choice((1, 2, 3, 3))
    rows = []
    for i in range(rng.randint(3, 6)):
        if rng.random() < 0.3:
            turns = [{"question": f"c{i}t{t}", "seed": seed} for t in range(rng.randint(2, 3))]
            rows.append({"id": f"c{i}", "inputs": {"turns": turns}})
        else:
            rows.append({"id": f"e{i}", "inputs": {"question": f"q{i}", "seed": seed}})
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    thresholds = {"said_yes": f">= {rng.choice((0.3, 0.5, 0.7))}"}
    if rng.random() < 0.5:
        thresholds["cost_usd_total"] = f"<= {rng.choice((0.005, 0.02, 1))}"
    if rng.random() < 0.5:
        thresholds["quality"] = f">= {rng.choice((0.2, 0.5))}"
    listed = ", ".join(f"{t}: consistency_targets:{t}" for t in targets)
    pricing = "".join(
        f"  {m}: {{input: {p['input']}, output: {p['output']}}}\n" for m, p in PRICING.items()
    )
    spec = folder / "spec.yaml"
    spec.write_text(
        f"experiment_prefix: s{seed}\n"
        "dataset: data.jsonl\n"
        f"targets: {{{listed}}}\n"
        "evaluators:\n"
        "  - {name: said_yes, type: custom, target: consistency_targets:said_yes, "
        "binary: true, format: percent}\n"
        "  - {name: quality, type: custom, target: consistency_targets:quality, "
        "format: percent}\n"
        "  - token_cost\n"
        f"repetitions: {repetitions}\n"
        "max_error_rate: 1\nmax_interrupt_rate: 1\nconcurrency: 1\ncache: false\n"
        f"pricing:\n{pricing}"
        "thresholds:\n" + "".join(f'  {k}: "{v}"\n' for k, v in thresholds.items())
    )
    kind = ("run", "shards", "rescore")[seed % 3]
    return Scenario(seed, folder, spec, targets, repetitions, kind, thresholds)


# --- the figures by the documented rule ---------------------------------------------------


def reference(experiment: dict[str, Any]) -> dict[str, float | None]:
    """An exported experiment's figures computed from its results alone."""
    values: dict[str, dict[str, list[float]]] = {}
    nulls: set[str] = set()
    statuses = [r["status"] for r in experiment["results"]]
    for result in experiment["results"]:
        for key, score in result["scores"].items():
            per_example = values.setdefault(key, {})
            if score is None:
                nulls.add(key)
                continue
            per_example.setdefault(result["example_id"], []).append(float(score))
    figures: dict[str, float | None] = {}
    for key, per_example in values.items():
        means = [math.fsum(v) / len(v) for v in per_example.values()]
        figures[key] = math.fsum(means) / len(means) if means else None
    costs = [float(r["scores"]["cost_usd"]) for r in experiment["results"]]
    figures["cost_usd_total"] = None if "cost_usd" in nulls else math.fsum(costs)
    figures["error_rate"] = statuses.count("error") / len(statuses)
    figures["interrupt_rate"] = statuses.count("interrupted") / len(statuses)
    return figures


def outcomes(experiment: dict[str, Any], catalog: Catalog, key: str) -> dict[str, list[bool]]:
    """Per example, whether each repetition passed the pass/fail ``key`` (docs/output.md):
    it is at its best (1, or 0 where lower is better; a conversation's turns' mean at 1
    when every turn passed); one without an answer fails; a null score is no outcome."""
    best = 1.0 if catalog.higher_is_better(key) else 0.0
    found: dict[str, list[bool]] = {}
    for result in experiment["results"]:
        if key not in result["scores"]:
            continue
        score = result["scores"][key]
        if result["status"] == "ok" and score is None:
            continue
        passed = result["status"] == "ok" and float(score) == best
        found.setdefault(result["example_id"], []).append(passed)
    return found


def pass_k(per_example: dict[str, list[bool]], k: int) -> tuple[float, float] | None:
    """(pass^k, pass@k) by the unbiased estimates, over the examples with k outcomes."""
    counted = [(len(o), sum(o)) for o in per_example.values() if len(o) >= k]
    if not counted:
        return None
    hat = math.fsum(math.comb(c, k) / math.comb(n, k) for n, c in counted) / len(counted)
    at = math.fsum(1 - math.comb(n - c, k) / math.comb(n, k) for n, c in counted)
    return hat, at / len(counted)


def flaky(per_key: Iterable[dict[str, list[bool]]]) -> tuple[int, int]:
    """Examples whose repetitions disagree on some key, of those with two outcomes or more."""
    repeated: dict[str, bool] = {}
    for per_example in per_key:
        for example, seen in per_example.items():
            if len(seen) > 1:
                repeated[example] = repeated.get(example, False) or len(set(seen)) > 1
    return sum(repeated.values()), len(repeated)


def percent(value: float | None) -> str:
    return "–" if value is None else format_value("percent", value)


def paired(exported: list[dict[str, Any]], key: str) -> list[float | None]:
    """compare's columns of a score (docs/output.md): each side's mean, over the examples
    every side scored, of each example's mean over its repetitions; over its own examples
    when they share none."""
    per_side = []
    for experiment in exported:
        values: dict[str, list[float]] = {}
        for result in experiment["results"]:
            score = result["scores"].get(key)
            if score is not None:
                values.setdefault(result["example_id"], []).append(float(score))
        per_side.append({e: math.fsum(v) / len(v) for e, v in values.items()})
    scoring = [set(side) for side in per_side if side]
    shared = set.intersection(*scoring) if scoring else set()
    means: list[float | None] = []
    for side in per_side:
        over = shared or set(side)
        means.append(math.fsum(side[e] for e in over) / len(over) if side and over else None)
    return means


def spread(experiment: dict[str, Any], key: str) -> float | None:
    """The sd of the per-repetition means of ``key`` (None with one repetition)."""
    by_repetition: dict[int, list[float]] = {}
    for result in experiment["results"]:
        score = result["scores"].get(key)
        if score is not None:
            by_repetition.setdefault(result["repetition"], []).append(float(score))
    means = [math.fsum(v) / len(v) for v in by_repetition.values()]
    if len(means) < 2:
        return None
    centre = math.fsum(means) / len(means)
    return math.sqrt(math.fsum((m - centre) ** 2 for m in means) / (len(means) - 1))


# --- reading the views --------------------------------------------------------------------


def clean(cell: str) -> str:
    """A cell's figure: no best mark, no sample size, no sd."""
    cell = cell.replace("★", "").strip()
    cell = re.sub(r"\s*\(n=[\d,]+\)$", "", cell)
    return cell.split(" ± ")[0].strip()


def boxed_rows(text: str) -> list[list[str]]:
    """The rows of a Rich box table (the run table): cells between the vertical bars."""
    rows = []
    for line in text.splitlines():
        if line.startswith(("│", "┃")):
            rows.append([c.strip() for c in line.strip("│┃").split("│" if "│" in line else "┃")])
    return rows


def spaced_rows(text: str, labels: Iterable[str]) -> dict[str, list[str]]:
    """compare's console table: each line whose label is one of ``labels`` (or the one it
    was cut short from, ``turns to resol…``), its cells (columns are two spaces apart or
    more)."""
    found: dict[str, list[str]] = {}
    for line in text.splitlines():
        first, *cells = re.split(r"\s{2,}", line.strip())
        label = whole_label(first, labels)
        if label is not None and cells:
            found.setdefault(label, cells)
    return found


def whole_label(shown: str, labels: Iterable[str]) -> str | None:
    """The label ``shown`` is, or the only one it was cut short from with an ellipsis."""
    known = set(labels)
    if shown in known:
        return shown
    if shown.endswith("…"):
        matching = [label for label in known if label.startswith(shown[:-1])]
        return matching[0] if len(matching) == 1 else None
    return None


def markdown_rows(text: str) -> dict[str, list[str]]:
    rows: dict[str, list[str]] = {}
    for line in text.splitlines():
        if line.startswith("| ") and not line.startswith("| metric"):
            cells = [
                htmllib.unescape(c.strip().replace("\\", "")) for c in line.strip("|").split(" | ")
            ]
            rows.setdefault(cells[0], cells[1:])
    return rows


def html_rows(text: str) -> dict[str, list[str]]:
    rows = {}
    for key, body in re.findall(r'<tr data-metric="([^"]+)">(.*?)</tr>', text):
        cells = [htmllib.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", body)]
        rows.setdefault(key, cells[1:])
    return rows


# --- the check ----------------------------------------------------------------------------


class Disagreements(list[str]):
    """Every figure a view shows otherwise than the rule, all said at the end."""

    def agree(self, holds: bool, what: str) -> None:
        if not holds:
            self.append(what)

    def said(self) -> str:
        return f"{len(self)} disagreement(s):\n" + "\n".join(self[:60])


@dataclass
class Views:
    """What one scenario's commands printed and wrote."""

    exported: list[dict[str, Any]]  # the --json experiments (run, merge or rescore)
    table: str  # the run table the command printed at 250 columns
    gate: str  # its gate lines
    store: str = "store.db"  # the store they are in, in the scenario's folder
    files: bool = True  # the run's --json and baseline files are of these experiments


def same(got: float | None, expected: float | None) -> bool:
    """Equal figures (to the last bits a different order of summing may change)."""
    if got is None or expected is None:
        return got is expected
    return math.isclose(got, expected, rel_tol=1e-9, abs_tol=1e-12)


def shown(catalog: Catalog, key: str, value: float | None) -> str:
    return "n/a" if value is None else format_value(catalog.info(key).format, value)


def run_scenario(scenario: Scenario, invoke: Any) -> list[Views]:
    folder, spec = scenario.folder, scenario.spec
    env = {"COLUMNS": "250"}
    store = folder / "store.db"
    if scenario.kind == "shards":
        for i in (1, 2):
            ran = invoke(
                "run", spec, "--shard", f"{i}/2", "--store", folder / f"shard{i}.db", "-q", env=env
            )
            assert ran.exit_code in (0, 1), ran.output
        merged = invoke(
            "merge",
            folder / "shard1.db",
            folder / "shard2.db",
            "--store",
            store,
            "--json",
            folder / "out.json",
            env=env,
        )
        assert merged.exit_code in (0, 1), merged.output
        exported = json.loads((folder / "out.json").read_text())["experiments"]
        return [Views(exported, merged.output, "")]
    ran = invoke(
        "run",
        spec,
        "--store",
        store,
        "--json",
        folder / "out.json",
        "--save-baseline",
        folder / "baseline.json",
        env=env,
    )
    assert ran.exit_code in (0, 1), ran.output
    exported = json.loads((folder / "out.json").read_text())["experiments"]
    views = [Views(exported, ran.output, ran.output)]
    if scenario.kind == "rescore":
        names = [e["name"] for e in exported]
        again = invoke(
            "rescore", spec, *names, "--store", store, "--json", folder / "rescored.json", env=env
        )
        assert again.exit_code == 0, again.output
        rescored = json.loads((folder / "rescored.json").read_text())["experiments"]
        views.append(Views(rescored, again.output, ""))
    if scenario.kind == "run" and scenario.seed % 2:
        views.append(through_the_api(scenario))
    return views


def through_the_api(scenario: Scenario) -> Views:
    """The spec run by the API (as the pytest plugin's fixture runs it): its experiments
    as --json exports them, and the lines the plugin's check fails a test with."""
    from agenteval_cli import api
    from agenteval_cli.pytest_plugin.evals import report_problems
    from agenteval_cli.report.json_report import experiment_json
    from agenteval_cli.store.db import Store

    store = scenario.folder / "api.db"
    report = api.run(scenario.spec, store=store)
    with Store(store, readonly=True) as opened:
        exported = [experiment_json(opened, i) for i in report.ids]
    for experiment, reported in zip(exported, report.experiments, strict=True):
        assert experiment["metrics"] == reported.metrics  # the API's report is --json's
    lines = "".join(f"    {problem}\n" for problem in report_problems(report))
    return Views(exported, "", lines, store="api.db", files=False)


def check_views(scenario: Scenario, views: Views, invoke: Any, seen: Disagreements) -> int:
    """Every view of ``views``'s experiments against the rule; the experiments checked."""
    folder = scenario.folder
    exported = views.exported
    catalogs = [Catalog.from_json(e["catalog"]) for e in exported]
    figures = [reference(e) for e in exported]
    keys = [k for k in exported[0]["metrics"] if k not in TIMINGS and k != "cache_share"]
    where = f"seed {scenario.seed} ({scenario.kind}, {scenario.repetitions} repetition(s))"

    # --json: its metrics are the rule's figures; its catalog says how each reads
    for experiment, expected in zip(exported, figures, strict=True):
        for key in keys:
            got = experiment["metrics"].get(key)
            seen.agree(
                same(got, expected.get(key)), f"{where}: --json {experiment['target']} {key}"
            )
        described = set(experiment["catalog"]["keys"]) | {
            m["key"] for m in experiment["catalog"]["metrics"]
        }
        for key, value in experiment["metrics"].items():
            if value is not None and catalogs[0].info(key).scope != "run":
                seen.agree(key in described, f"{where}: --json catalog leaves out {key}")

    def expect(i: int, key: str) -> str:
        return shown(catalogs[i], key, figures[i].get(key))

    scores = [k for k in keys if catalogs[0].info(k).scope != "run"]
    sides = {k: paired(exported, k) for k in scores}

    def compared(i: int, key: str) -> float | None:
        """A side's figure in compare and the reports: the paired mean of a score."""
        return sides[key][i] if key in sides else figures[i].get(key)

    # the run table at 250 columns
    if views.table:
        rows = boxed_rows(views.table)
        header = rows[0]
        columns = [header.index(e["target"]) for e in exported]
        by_label: dict[str, list[str]] = {}
        for row in rows[1:]:
            by_label.setdefault(row[0], row)
        for key in keys:
            label = catalogs[0].label(key)
            if label not in by_label:
                continue  # a figure the table leaves out (a quiet rate at 0, a part)
            for i, col in enumerate(columns):
                seen.agree(clean(by_label[label][col]) == expect(i, key), f"{where}: table {label}")

    check_repetitions(views, catalogs, where, seen)

    # the API's report of each experiment
    from agenteval_cli.api.running import ExperimentReport

    store = folder / views.store
    for i, experiment in enumerate(exported):
        report = ExperimentReport(
            experiment["name"], experiment["target"], experiment["id"], "finished", 0, store
        )
        for key in keys:
            seen.agree(same(report.metrics.get(key), figures[i].get(key)), f"{where}: API {key}")

    # compare: --json and the console at 200 and 250 columns
    names = [e["name"] for e in exported]
    out = invoke("compare", *names, "--store", store, "--json")
    assert out.exit_code == 0, out.output
    rows_json = {row["metric"]: row for row in json.loads(out.stdout)["rows"]}
    for key in keys:
        if key in rows_json:
            for i, mean in enumerate(rows_json[key]["means"]):
                seen.agree(same(mean, compared(i, key)), f"{where}: compare --json {key} side {i}")
    narrow = {catalogs[0].info(k).narrow: k for k in keys}
    every = {catalogs[0].info(k).narrow for e in exported for k in e["metrics"]}
    for width in ("200", "250"):
        console = invoke("compare", *names, "--store", store, env={"COLUMNS": width})
        assert console.exit_code == 0, console.output
        found = spaced_rows(console.output, narrow)
        for label, cells in found.items():
            key = narrow[label]
            for i in range(len(exported)):
                want = shown(catalogs[i], key, compared(i, key))
                seen.agree(clean(cells[i]) == want, f"{where}: compare@{width} {label}")
        apart = [  # a column that is not the run table's figure is said to be so
            narrow_label
            for narrow_label, key in narrow.items()
            if any(
                shown(catalogs[i], key, compared(i, key)) != expect(i, key)
                for i in range(len(exported))
            )
        ]
        for label in apart:
            said = re.search(
                rf"{re.escape(label)}[^;]*: each column is over the examples", console.text
            )
            seen.agree(
                said is not None, f"{where}: compare@{width} says not that {label} is paired"
            )
        lines = console.output.splitlines()
        rule = next(n for n, line in enumerate(lines) if line.strip().startswith("───"))
        for line in lines[rule + 1 :]:
            if not line.strip():
                break
            cells = re.split(r"\s{2,}", line.strip())
            # a label (whole, or cut short) with its row's figures: a folded label's rest
            # would stand alone, or read as another row's label
            known = re.sub(r"…$", "", cells[0]) in {
                label[: len(cells[0]) - 1] if cells[0].endswith("…") else label
                for label in [*every, "flaky examples"]
            }
            known = known or bool(re.fullmatch(r"(.+ )?pass[\^@]\d+", cells[0]))
            seen.agree(
                known and len(cells) > 1, f"{where}: compare@{width} wraps a label: {line!r}"
            )
        for key in keys:
            sd = [spread(e, key) for e in exported]
            label = catalogs[0].info(key).narrow
            if label in found and all(s is not None for s in sd):
                for i in range(len(exported)):
                    if " ± " in found[label][i]:
                        got = found[label][i].split(" ± ")[1]
                        seen.agree(got == shown(catalogs[i], key, sd[i]), f"{where}: sd {label}")

    # compare's repetition rows: each pass/fail metric's pass^N and pass@N, the flaky examples
    wanted = repetition_rows(exported, catalogs)
    console = invoke("compare", *names, "--store", store, env={"COLUMNS": "250"})
    metric, left = "", dict(wanted)  # the console's pass^N lines are under their metric's
    for line in console.output.splitlines():
        cells = re.split(r"\s{2,}", line.strip())
        metric = whole_label(cells[0], narrow) or metric
        label = f"{metric} {cells[0]}" if cells[0].startswith("pass") else cells[0]
        if label in left:
            for i, want in enumerate(left.pop(label)):
                seen.agree(cells[1 + i].startswith(want), f"{where}: compare {label} {i}")
    seen.agree(not left, f"{where}: compare shows no {', '.join(left)}")

    # the Markdown and HTML reports, JUnit
    page, md, junit = folder / "r.html", folder / "r.md", folder / "r.xml"
    reported = invoke(
        "report", *names, "--store", store, "-o", page, "--markdown", md, "--junit", junit
    )
    assert reported.exit_code == 0, reported.output
    md_rows = markdown_rows(md.read_text())
    cells = html_rows(page.read_text())
    extra = dict(
        re.findall(r'<tr class="repetitions"><td>([^<]+)</td>(.*?)</tr>', page.read_text())
    )
    for label, wants in wanted.items():
        got_html = [
            htmllib.unescape(c) for c in re.findall(r"<td>(.*?)</td>", extra.get(label, ""))
        ]
        for i, want in enumerate(wants):
            if label in md_rows:
                seen.agree(md_rows[label][i].startswith(want), f"{where}: Markdown {label} {i}")
            seen.agree(
                len(got_html) > i and got_html[i].startswith(want), f"{where}: HTML {label} {i}"
            )
    for key in keys:
        label = catalogs[0].label(key).replace("\\", "")
        for i in range(len(exported)):
            want = shown(catalogs[i], key, compared(i, key))
            if label in md_rows:
                seen.agree(clean(md_rows[label][i]) == want, f"{where}: Markdown {label}")
            if key in cells:
                seen.agree(clean(cells[key][i]) == want, f"{where}: HTML {key}")
    check_junit(scenario, exported, catalogs, junit.read_text(), where, seen)

    # the gate's threshold lines
    for line in views.gate.splitlines():
        found_line = re.match(r"\s+(t_\w+): (.+?) = (.+?), threshold", line)
        if found_line:
            target, label, value = found_line.groups()
            i = [e["target"] for e in exported].index(target)
            key = next(k for k in keys if catalogs[i].label(k) == label)
            seen.agree(value == expect(i, key), f"{where}: gate {label}")

    # a saved baseline and the --json file, read back as compare's sides
    for file in ("baseline.json", "out.json"):
        path = folder / file
        if not path.exists() or not (views.gate and views.files):  # the run's own files
            continue
        back = invoke("compare", path, "--json")
        assert back.exit_code == 0, back.output
        for row in json.loads(back.stdout)["rows"]:
            key = row["metric"]
            if key in keys and (file == "out.json" or key not in TIMINGS):
                for i, mean in enumerate(row["means"]):
                    # a baseline keeps each example's mean to 9 places: equal as shown
                    want = shown(catalogs[i], key, compared(i, key))
                    seen.agree(
                        shown(catalogs[i], key, mean) == want,
                        f"{where}: {file} read back: {key} side {i}",
                    )

    # dataset add-failures: the examples that failed a check or had no answer
    for experiment in exported:
        to = folder / f"failures-{experiment['id']}.jsonl"
        added = invoke("dataset", "add-failures", experiment["name"], "--store", store, "--to", to)
        assert added.exit_code == 0, added.output
        got = (
            [json.loads(line)["id"] for line in to.read_text().splitlines()] if to.exists() else []
        )
        want = sorted(failed(experiment, scenario.thresholds))
        seen.agree(
            sorted(got) == want,
            f"{where}: add-failures {experiment['target']}: {sorted(got)}, not {want}",
        )
    return len(exported)


def repetition_rows(
    exported: list[dict[str, Any]], catalogs: list[Catalog]
) -> dict[str, list[str]]:
    """compare's and the reports' rows of repetitions: ``<metric> pass^N`` and ``pass@N``
    (N: the most outcomes an example had) and ``flaky examples``, each side's cell (the
    flaky row's beginning)."""
    binary = [k for k in exported[0]["metrics"] if catalogs[0].is_binary(k)]
    per_side = [
        {k: outcomes(e, c, k) for k in binary} for e, c in zip(exported, catalogs, strict=True)
    ]
    most = max((len(o) for side in per_side for p in side.values() for o in p.values()), default=0)
    if most < 2:
        return {}
    rows: dict[str, list[str]] = {}
    for key in binary:
        figures = [pass_k(side[key], most) if side[key] else None for side in per_side]
        if all(f is None for f in figures) and not any(side[key] for side in per_side):
            continue
        label = catalogs[0].info(key).narrow
        rows[f"{label} pass^{most}"] = ["–" if f is None else percent(f[0]) for f in figures]
        rows[f"{label} pass@{most}"] = ["–" if f is None else percent(f[1]) for f in figures]
    flakes = [flaky(side.values()) for side in per_side]
    rows["flaky examples"] = [f"{n}/{of} · {percent(n / of)}" if of else "–" for n, of in flakes]
    return rows


def check_repetitions(
    views: Views, catalogs: list[Catalog], where: str, seen: Disagreements
) -> None:
    """pass^k, pass@k and the flaky examples: --json's, the run table's lines under each
    pass/fail metric and its flaky row, against the estimates from each repetition."""
    exported = views.exported
    binary = [k for k in exported[0]["metrics"] if catalogs[0].is_binary(k)]
    per_side = [
        {k: outcomes(e, c, k) for k in binary} for e, c in zip(exported, catalogs, strict=True)
    ]
    most = max((len(o) for side in per_side for p in side.values() for o in p.values()), default=0)
    if most < 2:
        for experiment in exported:
            seen.agree(experiment["pass_k"] is None, f"{where}: --json pass_k without repeats")
        return
    for experiment, side in zip(exported, per_side, strict=True):
        said = experiment["pass_k"]
        for key, per_example in side.items():
            figures = (said["outcomes"].get(key) or {}).get("k") or []
            for k in range(1, most + 1):
                want = pass_k(per_example, k)
                got = next(
                    ((f["pass_hat_k"], f["pass_at_k"]) for f in figures if f["k"] == k), None
                )
                agree = (
                    got is None
                    if want is None
                    else got is not None
                    and all(
                        math.isclose(a, b, abs_tol=1e-12) for a, b in zip(got, want, strict=True)
                    )
                )
                seen.agree(agree, f"{where}: --json pass_k {experiment['target']} {key} k={k}")
        flaky_examples, of = flaky(side.values())
        said_flaky = (said["flaky"]["examples"], said["flaky"]["of"])
        seen.agree(said_flaky == (flaky_examples, of), f"{where}: --json flaky examples")
    if not views.table:
        return
    rows = boxed_rows(views.table)
    columns = [rows[0].index(e["target"]) for e in exported]
    ks = sorted({k for k in (1, 2, most) if 1 <= k <= most})
    under = None
    for row in rows[1:]:
        label = row[0]
        if not label.startswith(("pass^k", "pass@k", "pass^", "pass@")):
            under = next((k for k in binary if catalogs[0].label(k) == label), None)
            if label == "flaky examples":
                for i, col in enumerate(columns):
                    flaky_examples, of = flaky(per_side[i].values())
                    share = percent(flaky_examples / of) if of else "–"
                    seen.agree(
                        row[col].startswith(f"{flaky_examples}/{of} · {share}"),
                        f"{where}: table flaky examples {row[col]!r}",
                    )
            continue
        if under is None:
            continue
        hat = label.startswith("pass^")
        shown_ks = ks if hat else [k for k in ks if k > 1]
        for i, col in enumerate(columns):
            want = []
            for k in shown_ks:
                found = pass_k(per_side[i][under], k)
                want.append("–" if found is None else percent(found[0 if hat else 1]))
            seen.agree(
                row[col] == " / ".join(want),
                f"{where}: table {under} {label}: {row[col]!r}, not {' / '.join(want)!r}",
            )


def example_values(experiment: dict[str, Any], key: str) -> dict[str, tuple[list[float], int]]:
    """Per example: the answered repetitions' values of ``key`` and how many had no answer."""
    found: dict[str, tuple[list[float], int]] = {}
    for result in experiment["results"]:
        values, unanswered = found.get(result["example_id"], ([], 0))
        if result["status"] != "ok":
            unanswered += 1
        elif result["scores"].get(key) is not None:
            values = [*values, float(result["scores"][key])]
        found[result["example_id"]] = (values, unanswered)
    return found


def passes(condition: str, value: float) -> bool:
    op, bound = condition.split()
    return value >= float(bound) if op == ">=" else value <= float(bound)


def failed(experiment: dict[str, Any], thresholds: dict[str, str]) -> list[str]:
    """Examples with a repetition without an answer, or one failing an example's check."""
    per_example = {k: example_values(experiment, k) for k in thresholds if k != "cost_usd_total"}
    examples = {r["example_id"] for r in experiment["results"]}
    out = []
    for example in examples:
        if any(r["status"] != "ok" for r in experiment["results"] if r["example_id"] == example):
            out.append(example)
            continue
        for key, found in per_example.items():
            values, _ = found.get(example, ([], 0))
            if any(not passes(thresholds[key], v) for v in values):
                out.append(example)
                break
    return out


def check_junit(
    scenario: Scenario,
    exported: list[dict[str, Any]],
    catalogs: list[Catalog],
    text: str,
    where: str,
    seen: Disagreements,
) -> None:
    """Each failed case's figure: the passing repetitions of those scored, and the mean of
    the answered ones (shown whenever one answered)."""
    by_target = {e["target"]: i for i, e in enumerate(exported)}
    for classname, key, message in re.findall(
        r'<testcase classname="([^"]+)" name="([^"]+)"[^>]*>\s*<failure message="([^"]+)"', text
    ):
        target, example = classname.split(".", 1)
        i = by_target[target]
        values, unanswered = example_values(exported[i], key)[example]
        message = htmllib.unescape(message)
        if len(values) + unanswered == 1:
            value = shown(catalogs[i], key, values[0]) if values else "–"  # no answer
            seen.agree(
                message.startswith(f"{key} = {value},"),
                f"{where}: JUnit {classname} {key}: {message}",
            )
            continue
        good = sum(passes(scenario.thresholds[key], v) for v in values)
        mean = (
            f" (mean {shown(catalogs[i], key, math.fsum(values) / len(values))})" if values else ""
        )
        total = len(values) + unanswered
        seen.agree(
            message.startswith(f"{key} = {good}/{total} repetitions pass{mean},"),
            f"{where}: JUnit {classname} {key}: {message}",
        )


def check_seed(seed: int, tmp_path: Path, invoke: Any, seen: Disagreements) -> int:
    scenario = generate(seed, tmp_path / f"s{seed}")
    checked = 0
    for views in run_scenario(scenario, invoke):
        checked += check_views(scenario, views, invoke, seen)
    if scenario.kind == "run" and seed % 2 == 0:
        # a run's --json file is a baseline the gate accepts, true/false scores and all
        gated = invoke(
            "run",
            scenario.spec,
            "--store",
            scenario.folder / "store.db",
            "-q",
            "--baseline",
            scenario.folder / "out.json",
        )
        seen.agree(gated.exit_code in (0, 1), f"seed {seed}: --baseline out.json: {gated.text}")
    return checked


@pytest.mark.parametrize("seed", FAST_SEEDS)
def test_every_view_shows_the_same_figures(seed, tmp_path, invoke):
    seen = Disagreements()
    assert check_seed(seed, tmp_path, invoke, seen) >= 2
    assert not seen, seen.said()


def experiments_read(scenario: Scenario) -> int:
    """The experiments :func:`check_seed` reads of ``scenario``: each target's, again when
    rescored, again when also run through the API."""
    again = scenario.kind == "rescore" or (scenario.kind == "run" and scenario.seed % 2 == 1)
    return len(scenario.targets) * (2 if again else 1)


# the slow seeds in chunks, so that test workers share them
CHUNKS = [SLOW_SEEDS[i : i + 6] for i in range(0, len(SLOW_SEEDS), 6)]


def test_the_seeds_generate_over_two_hundred_experiments(tmp_path):
    seeds = [*FAST_SEEDS, *SLOW_SEEDS]
    total = sum(experiments_read(generate(seed, tmp_path / f"s{seed}")) for seed in seeds)
    assert total >= 200 or "AGENTEVAL_VIEW_SEEDS" in os.environ


@pytest.mark.slow
@pytest.mark.parametrize("seeds", CHUNKS, ids=[f"{c.start}-{c.stop - 1}" for c in CHUNKS])
def test_every_view_agrees_over_two_hundred_experiments(seeds, tmp_path, invoke):
    seen = Disagreements()
    for seed in seeds:
        checked = check_seed(seed, tmp_path, invoke, seen)
        assert checked == experiments_read(generate(seed, tmp_path / f"count{seed}")), seed
    assert not seen, seen.said()
