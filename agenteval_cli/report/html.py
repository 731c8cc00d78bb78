"""The HTML report: one self-contained file (CSS, SVG charts and the filter script inline).

The template only lays out what this module computes, and Jinja2 autoescaping is on for
everything, so model text containing HTML or ``<script>`` shows as text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agenteval_cli.gate import example_checks, example_thresholds, thresholds_for
from agenteval_cli.report import metricinfo
from agenteval_cli.report.comparison import Comparison, disagreements, outcome_keys
from agenteval_cli.report.sources import ExperimentData, Run
from agenteval_cli.stats import bootstrap_ci

BAR_WIDTH = 300
BAR_HEIGHT = 18


def _chart(key: str, sides: list[ExperimentData], names: list[str]) -> dict[str, Any] | None:
    """Bars of each side's mean with a 95% bootstrap interval of that mean (over examples)."""
    bars = []
    for name, side in zip(names, sides, strict=True):
        values = list(side.per_example(key).values())
        if not values:
            bars.append({"name": name, "mean": None})
            continue
        low, high = bootstrap_ci(values)
        bars.append({"name": name, "mean": sum(values) / len(values), "low": low, "high": high})
    present = [b for b in bars if b["mean"] is not None]
    if not present:
        return None
    top = max(max(b["high"], b["mean"]) for b in present)
    bottom = min(0.0, *(b["low"] for b in present))
    if key in metricinfo.PERCENT:
        top, bottom = max(top, 1.0), min(bottom, 0.0)
    span = (top - bottom) or 1.0

    def x(value: float) -> float:
        return round((value - bottom) / span * BAR_WIDTH, 1)

    for index, bar in enumerate(bars):
        bar["y"] = 6 + index * (BAR_HEIGHT + 10)
        if bar["mean"] is None:
            continue
        bar.update(
            x0=x(min(0.0, bar["mean"])),
            width=max(abs(x(bar["mean"]) - x(0.0)), 1.0),
            lo=x(bar["low"]),
            hi=x(bar["high"]),
            text=metricinfo.fmt(key, bar["mean"]),
            interval=f"95% CI {metricinfo.fmt(key, bar['low'])} – "
            f"{metricinfo.fmt(key, bar['high'])}",
        )
    return {
        "key": key,
        "label": metricinfo.label(key),
        "bars": bars,
        "height": 12 + len(bars) * (BAR_HEIGHT + 10),
        "zero": x(0.0),
    }


def _histogram(counts: Mapping[int, int]) -> dict[str, Any]:
    lengths = list(range(0, max(counts, default=0) + 1))
    top = max(counts.values(), default=1) or 1
    bars = [
        {
            "length": n,
            "count": counts.get(n, 0),
            "x": 8 + i * 34,
            "h": round(counts.get(n, 0) / top * 80, 1),
        }
        for i, n in enumerate(lengths)
    ]
    return {"bars": bars, "width": 16 + len(lengths) * 34}


def _chain(run: Run) -> list[dict[str, str]]:
    """The agent path as steps, each transition labelled with the handoff tool that made it."""
    pending = list(run.handoffs)
    steps = []
    for index, agent in enumerate(run.agent_path):
        via = ""
        if index:
            previous = run.agent_path[index - 1]
            for position, handoff in enumerate(pending):
                if handoff.get("source") == previous and handoff.get("target") == agent:
                    via = str(handoff.get("tool", ""))
                    del pending[position]
                    break
        steps.append({"agent": agent, "via": via})
    return steps


def _run_view(run: Run, thresholds: Mapping[str, Any]) -> dict[str, Any]:
    checks = {c.key: c for c in example_checks([run], thresholds)}
    scores = []
    for key in metricinfo.ordered(run.scores):
        value = run.scores[key]
        check = checks.get(key)
        scores.append(
            {
                "key": key,
                "value": "–" if value is None else metricinfo.fmt(key, float(value)),
                "comment": run.comments.get(key, ""),
                "status": "" if check is None else ("pass" if check.passed else "fail"),
                "threshold": "" if check is None else str(check.threshold),
            }
        )
    return {
        "repetition": run.repetition,
        "response": run.final_response,
        "error": run.error,
        "chain": _chain(run),
        "tool_calls": [
            {
                "agent": t.get("agent", ""),
                "name": t.get("name", ""),
                "args": json.dumps(t.get("args") or {}, ensure_ascii=False),
            }
            for t in run.tool_calls
        ],
        "tokens": run.tokens,
        "cost": metricinfo.fmt("cost_usd", run.scores.get("cost_usd"))
        if run.scores.get("cost_usd") is not None
        else "–",
        "latency": metricinfo.fmt("latency_p50_s", run.latency_s),
        "scores": scores,
    }


def _examples(comparison: Comparison, thresholds: Mapping[str, Any]) -> list[dict[str, Any]]:
    sides = comparison.sides
    applied = [example_thresholds(thresholds_for(thresholds, s.target)) for s in sides]
    disagreeing = {d.example_id for d in disagreements(sides, outcome_keys(sides), top=10**9)}
    grouped = [s.by_example() for s in sides]
    order = list(dict.fromkeys(e for s in sides for e in s.example_ids()))
    examples = []
    for example_id in order:
        targets = []
        failed_any = False
        first_run = None
        for name, runs_by_example, checks in zip(comparison.names, grouped, applied, strict=True):
            runs = runs_by_example.get(example_id, [])
            if not runs:
                targets.append({"name": name, "missing": True})
                continue
            first_run = first_run or runs[0]
            failed = any(r.error for r in runs) or any(
                not c.passed for c in example_checks(runs, checks)
            )
            failed_any = failed_any or failed
            headline = {
                k: metricinfo.fmt(k, v)
                for k in ("routing_accuracy", "resolution_coverage")
                if (v := _mean(runs, k)) is not None
            }
            targets.append(
                {
                    "name": name,
                    "missing": False,
                    "failed": failed,
                    "headline": headline,
                    "runs": [_run_view(r, checks) for r in runs],
                }
            )
        if first_run is None:
            continue
        question = first_run.inputs.get("question")
        examples.append(
            {
                "id": example_id,
                "question": str(question) if question is not None else json.dumps(first_run.inputs),
                "inputs": json.dumps(first_run.inputs, indent=2, ensure_ascii=False),
                "reference": json.dumps(first_run.reference, indent=2, ensure_ascii=False),
                "failed": failed_any,
                "disagree": example_id in disagreeing,
                "targets": targets,
            }
        )
    return examples


def _mean(runs: list[Run], key: str) -> float | None:
    values = [float(v) for r in runs if r.error is None and (v := r.scores.get(key)) is not None]
    return sum(values) / len(values) if values else None


def _table(comparison: Comparison) -> list[dict[str, Any]]:
    rows = []
    for row in comparison.rows:
        means = []
        for mean, spread in zip(row.means, row.spreads, strict=True):
            text = metricinfo.fmt(row.key, mean)
            if spread is not None:
                text += f" ± {metricinfo.fmt(row.key, spread)}"
            means.append(text)
        diffs = []
        for index, paired in enumerate(row.vs_first, start=1):
            if paired is None:
                diffs.append({"diff": "–", "ci": "", "p": "", "verdict": ""})
                continue
            p = paired.p_value
            diffs.append(
                {
                    "diff": metricinfo.fmt_diff(row.key, paired.diff),
                    "ci": f"[{metricinfo.fmt_diff(row.key, paired.ci_low)}, "
                    f"{metricinfo.fmt_diff(row.key, paired.ci_high)}]",
                    "p": "–" if p is None else ("<0.001" if p < 0.001 else f"{p:.3f}"),
                    "verdict": row.verdict(index) or "",
                }
            )
        rows.append({"label": row.label, "key": row.key, "means": means, "diffs": diffs})
    return rows


def render_html(
    comparison: Comparison, *, thresholds: Mapping[str, Any] | None = None, title: str = ""
) -> str:
    """The report as one HTML string."""
    from jinja2 import Environment, PackageLoader, StrictUndefined

    env = Environment(
        loader=PackageLoader("agenteval_cli.report", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    names = comparison.names
    charts = [c for r in comparison.rows if (c := _chart(r.key, comparison.sides, names))]
    examples = _examples(comparison, thresholds or {})
    return env.get_template("report.html.j2").render(
        title=title or "agenteval report",
        generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        names=names,
        sides=comparison.sides,
        common=comparison.common_examples,
        table=_table(comparison),
        consistency=[metricinfo.fmt("ping_pong", c) for c in comparison.consistency],
        has_consistency=any(c is not None for c in comparison.consistency),
        charts=charts,
        confusion=[
            (name, c) for name, c in zip(names, comparison.confusion, strict=True) if c is not None
        ],
        histograms=[
            (name, _histogram(h))
            for name, h in zip(names, comparison.handoff_histograms, strict=True)
            if h
        ],
        examples=examples,
        failed_count=sum(e["failed"] for e in examples),
        disagree_count=sum(e["disagree"] for e in examples),
        bar_width=BAR_WIDTH,
        bar_height=BAR_HEIGHT,
    )


def write_html(
    path: Path,
    comparison: Comparison,
    *,
    thresholds: Mapping[str, Any] | None = None,
    title: str = "",
) -> None:
    """Write atomically, so a half-written report never replaces a good one."""
    text = render_html(comparison, thresholds=thresholds, title=title)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
