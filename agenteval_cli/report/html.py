"""The HTML report: one self-contained file (CSS, SVG charts and the filter script inline).

The template only lays out what this module computes, and Jinja2 autoescaping is on for
everything, so model text containing HTML or ``<script>`` shows as text. Every value the page
shows first goes through :func:`agenteval_cli.core.redact.redact` (the environment's
``finalize``), so no known secret or URL password is written out.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

from agenteval_cli.core.records import Turn
from agenteval_cli.core.redact import MIN_SECRET_LENGTH, redact, secret_values
from agenteval_cli.data.conversations import opening_line
from agenteval_cli.gating.examples import checks_for, example_checks
from agenteval_cli.metrics.catalog import Catalog
from agenteval_cli.metrics.info import NA, format_value
from agenteval_cli.metrics.kinds import is_rate, paired_kind
from agenteval_cli.metrics.stats import side_interval
from agenteval_cli.report import calibration
from agenteval_cli.report.agents import (
    TREE_MARK,
    AgentRow,
    AgentUsage,
    agent_notes,
    aggregate,
    merged_paths,
)
from agenteval_cli.report.blame import counts as blame_counts
from agenteval_cli.report.blame import line as blame_line
from agenteval_cli.report.blame import rows as blame_rows
from agenteval_cli.report.comparison import (
    Comparison,
    agent_usage,
    disagreements,
    fmt_mean,
    outcome_keys,
)
from agenteval_cli.report.paired_cells import (
    counts_cell,
    detectable_cell,
    method_note,
    p_cell,
    q_cell,
)
from agenteval_cli.report.repetitions import legends, side_rows
from agenteval_cli.results.sources import ExperimentData, Run

BAR_WIDTH = 300
BAR_HEIGHT = 18


def _chart(
    catalog: Catalog,
    key: str,
    sides: list[ExperimentData],
    names: list[str],
    means: list[float | None],
) -> dict[str, Any] | None:
    """Bars of each side's mean (the table's) with a 95% interval of its mean over examples:
    Wilson's for a 0/1 outcome, t otherwise (the kind decided once for every side); no
    interval drawn for a side with too few examples to have one."""
    bars: list[dict[str, Any]] = []
    present: list[tuple[float, float, float]] = []  # (mean, low, high) of the sides with values
    per_side = [list(side.per_example(key).values()) for side in sides]
    kind = paired_kind(catalog.info(key), *per_side)
    for name, values, side_mean in zip(names, per_side, means, strict=True):
        if not values or side_mean is None:
            bars.append({"name": name, "mean": None})
            continue
        mean = side_mean
        interval = side_interval(values, kind)
        low, high = interval if interval is not None else (mean, mean)
        if is_rate(catalog.info(key)):  # a rate's mean lies in [0, 1]
            low, high = max(low, 0.0), min(high, 1.0)
        present.append((mean, low, high))
        bars.append({"name": name, "mean": mean, "low": low, "high": high})
    if not present:
        return None
    top = max(max(high, mean) for mean, _, high in present)
    bottom = min(0.0, *(low for _, low, _ in present))
    if catalog.is_percent(key):
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
            text=catalog.fmt(key, bar["mean"]),
            interval=(
                f"95% CI {catalog.fmt(key, bar['low'])} – {catalog.fmt(key, bar['high'])}"
                if bar["low"] != bar["high"]
                else "no interval: too few examples or no spread"
            ),
        )
    return {
        "key": key,
        "label": catalog.label(key),
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


# What passed control, when it was not a named handoff tool.
VIA = {"command": "Command", "agent_tool": "agent as a tool", "edge": "edge"}


def _chain(run: Run) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The agent path as steps, each with its agent's path (``team › agent``) and the
    handoff that led to it (its tool, or what else passed control; parallel marked); and the
    handoffs no step of the path accounts for."""
    pending = list(run.handoffs)
    paths = _step_paths(run)
    steps = []
    for index, agent in enumerate(run.agent_path):
        step: dict[str, Any] = {"agent": agent, "teams": paths[index][:-1], "via": ""}
        step["parallel"] = False
        if index:
            previous = run.agent_path[index - 1]
            for position, handoff in enumerate(pending):
                if handoff.get("source") == previous and handoff.get("target") == agent:
                    step["via"] = _via(handoff)
                    step["parallel"] = bool(handoff.get("parallel"))
                    del pending[position]
                    break
        steps.append(step)
    others = [
        {
            "source": str(h.get("source", "")),
            "target": str(h.get("target", "")),
            "via": _via(h),
            "parallel": bool(h.get("parallel")),
        }
        for h in pending
    ]
    return steps, others


def _via(handoff: Mapping[str, Any]) -> str:
    how = str(handoff.get("via") or "tool")
    if how == "tool":
        return str(handoff.get("tool") or "")
    return VIA.get(how, how)


def _step_paths(run: Run) -> list[list[str]]:
    """Each step's agent path: the path of that agent's next model calls, in call order (an
    agent of the same name may sit in two teams); a step without one is a top-level name."""
    queues: dict[str, list[list[str]]] = {}
    for call in run.model_calls:
        queue = queues.setdefault(call.agent, [])
        if not queue or queue[-1] != call.path:
            queue.append(list(call.path))
    paths = []
    for agent in run.agent_path:
        queue = queues.get(agent) or [[agent]]
        paths.append(queue[0])
        if len(queue) > 1:
            queue.pop(0)
    return paths


def _agent_rows(usage: AgentUsage, paths: list[tuple[str, ...]]) -> list[dict[str, Any]]:
    """A per-agent table's rows, in the given tree order, then the total."""
    rows = []
    for path in paths:
        row = usage.get(" > ".join(path))
        if row is not None:
            rows.append(_agent_cells(row, TREE_MARK.join(path), row.depth))
    rows.append(_agent_cells(usage.total, "all agents", 0, total=True))
    return rows


def _agent_cells(row: AgentRow, title: str, depth: int, *, total: bool = False) -> dict[str, Any]:
    return {
        "name": row.path[-1] if row.path else title,
        "title": title,
        "depth": depth,
        "team": not row.leaf and not total,
        "total": total,
        "runs": f"{row.results:,}",
        "calls": f"{row.model_calls:,}",
        "input": NA if row.input_tokens is None else f"{row.input_tokens:,}",
        "output": NA if row.output_tokens is None else f"{row.output_tokens:,}",
        "cache_read": NA if row.cache_read_tokens is None else f"{row.cache_read_tokens:,}",
        "cache_write": NA if row.cache_write_tokens is None else f"{row.cache_write_tokens:,}",
        "reasoning": NA if row.reasoning_tokens is None else f"{row.reasoning_tokens:,}",
        "cost": NA if row.cost_usd is None else format_value("money", row.cost_usd),
        "price_source": " + ".join(row.price_sources),
        # whether the table shows cache and reasoning columns (read from its total row)
        "parts": any(
            n is not None
            for n in (row.cache_read_tokens, row.cache_write_tokens, row.reasoning_tokens)
        ),
        "time": format_value("duration", row.latency_s),
        "models": ", ".join(row.models),
    }


def _agents_section(comparison: Comparison) -> list[dict[str, Any]]:
    """Per target, its agents over the examples every side ran; empty when no side made a
    model call (the section is left out)."""
    usages = agent_usage(comparison.sides)
    if not any(u is not None and u.total.model_calls for u in usages):
        return []
    paths = merged_paths(usages)
    section = []
    for name, usage in zip(comparison.names, usages, strict=True):
        entry: dict[str, Any] = {"name": name, "rows": [], "notes": agent_notes([(name, usage)])}
        if usage is not None and usage.total.model_calls:
            entry["rows"] = _agent_rows(usage, paths)
        elif usage is not None:
            entry["notes"] = [f"{name}: no model calls recorded"]
        section.append(entry)
    return section


def _run_view(
    run: Run, thresholds: Mapping[str, Any], pricing: Mapping[str, Any], catalog: Catalog
) -> dict[str, Any]:
    checks = {c.key: c for c in example_checks([run], thresholds)}
    scores = []
    for key in catalog.ordered(run.scores):
        value = run.scores[key]
        check = checks.get(key)
        scores.append(
            {
                "key": key,
                "value": "–" if value is None else catalog.fmt(key, float(value)),
                "comment": run.comments.get(key, ""),
                "status": "" if check is None else ("pass" if check.passed else "fail"),
                "threshold": "" if check is None else str(check.threshold),
            }
        )
    chain, other_handoffs = _chain(run)
    usage = aggregate([run.model_calls], pricing) if run.model_calls else None
    return {
        "repetition": run.repetition,
        "blame": None if run.blame is None else {**run.blame, "line": blame_line(run.blame)},
        "response": run.final_response,
        "error": run.error,
        "interrupt": run.interrupt,  # stopped at interrupt(): what the graph waits for
        "untraced": run.untraced,
        "chain": chain,
        "other_handoffs": other_handoffs,
        "agents": [] if usage is None else _agent_rows(usage, [r.path for r in usage.rows]),
        "tool_calls": [
            {
                "agent": TREE_MARK.join(t.get("path") or [t.get("agent", "")]),
                "name": t.get("name", ""),
                "kind": t.get("kind") or "tool",
                "status": t.get("status") or "ok",
                "target": t.get("target") or "",
                "args": json.dumps(t.get("args") or {}, ensure_ascii=False),
            }
            for t in run.tool_calls
        ],
        "tokens": [
            {
                "model": model,
                "input": NA if u.get("input") is None else f"{u['input']:,}",
                "output": NA if u.get("output") is None else f"{u['output']:,}",
            }
            for model, u in run.tokens.items()
        ],
        "cost": NA
        if usage is None or usage.total.cost_usd is None
        else format_value("money", usage.total.cost_usd),
        "price_source": "" if usage is None else " + ".join(usage.total.price_sources),
        "latency": format_value("duration", run.latency_s),
        "scores": scores,
        "turns": [
            _turn_view(number, turn, pricing, catalog)
            for number, turn in enumerate(run.turns or [], 1)
        ],
    }


def _turn_view(
    number: int, turn: Turn, pricing: Mapping[str, Any], catalog: Catalog
) -> dict[str, Any]:
    """One turn of a conversation as its row shows it: what the user said, the agents that
    answered and the handoffs between them, its model calls, cost and scores."""
    trace = turn.trace
    steps = Run(
        example_id="",
        agent_path=list(trace.agent_path),
        handoffs=[h.as_dict() for h in trace.handoffs],
        model_calls=list(trace.model_calls),
        untraced=trace.untraced,
    )
    chain, others = _chain(steps)
    usage = aggregate([trace.model_calls], pricing) if trace.model_calls else None
    return {
        "number": number,
        "said": _said(turn.inputs),
        "status": turn.status,
        "error": turn.error,
        "interrupt": turn.interrupt,
        "response": str((turn.outputs or {}).get("final_response") or ""),
        "chain": chain,
        "other_handoffs": others,
        "untraced": trace.untraced,
        "model_calls": sum(1 for call in trace.model_calls if not call.failed),
        "cost": NA
        if usage is None or usage.total.cost_usd is None
        else format_value("money", usage.total.cost_usd),
        "scores": [
            {
                "key": s.key,
                "value": "–" if s.score is None else catalog.fmt(s.key, float(s.score)),
                "comment": s.comment or "",
            }
            for s in turn.scores
        ],
    }


def _said(inputs: Mapping[str, Any]) -> str:
    """A turn's input as one line: the answer to an interrupt, or its fields' text."""
    if set(inputs) == {"resume"}:
        return f"resume: {_content(inputs['resume'])}"
    if len(inputs) == 1:
        return _content(next(iter(inputs.values())))
    return ", ".join(f"{key}: {_content(value)}" for key, value in inputs.items())


def _content(value: Any) -> str:
    """A message's content as text: a string as it is, a list of parts as their text (other
    parts as JSON)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for part in value:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            else:
                parts.append(part if isinstance(part, str) else json.dumps(part, default=str))
        return "\n".join(parts)
    return json.dumps(value, ensure_ascii=False, default=str)


def _arguments(raw: Any) -> str:
    """A tool call's arguments (OpenAI form: a JSON string) as compact JSON."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return raw
    return json.dumps(raw, ensure_ascii=False, default=str)


def _conversation(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each message of a recorded conversation: its role, the agent that wrote it (the
    trace names each assistant message after its agent; a tool result takes the agent of
    the call it answers), its text, and the tool calls it made with their arguments and
    results."""
    results: dict[str, str] = {}
    for message in messages:
        if message.get("role") == "tool" and message.get("tool_call_id"):
            results[str(message["tool_call_id"])] = _content(message.get("content"))
    caller: dict[str, str] = {}
    shown = []
    for message in messages:
        role = str(message.get("role") or "")
        agent = str(message.get("name") or "") if role == "assistant" else ""
        calls = []
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            call_id = str(call.get("id") or "")
            caller[call_id] = agent
            calls.append(
                {
                    "name": str(function.get("name") or call.get("name") or ""),
                    "args": _arguments(function.get("arguments", call.get("args"))),
                    "result": results.get(call_id),
                }
            )
        entry = {
            "role": role,
            "agent": agent,
            "tool": "",
            "content": _content(message.get("content")),
            "calls": calls,
        }
        if role == "tool":
            entry["tool"] = str(message.get("name") or "")
            entry["agent"] = caller.get(str(message.get("tool_call_id") or ""), "")
        shown.append(entry)
    return shown


# The most examples written out in full; a bigger experiment shows its failing and
# disagreeing examples first, then its first passing ones, and counts the rest.
EXAMPLE_LIMIT = 1000


@dataclass
class Examples:
    shown: list[dict[str, Any]]  # in dataset order
    total: int  # examples of every side
    failed: int  # of them, failing on some side
    left_out_results: int  # results of the examples not shown


def _examples(
    comparison: Comparison, thresholds: Mapping[str, Any], limit: int = EXAMPLE_LIMIT
) -> Examples:
    sides = comparison.sides
    catalog = comparison.catalog
    applied = [checks_for(s, thresholds) for s in sides]
    outcomes = outcome_keys(sides, catalog)
    disagreeing = {d.example_id for d in disagreements(sides, outcomes, top=10**9)}
    grouped = [s.by_example() for s in sides]
    order = list(dict.fromkeys(e for s in sides for e in s.example_ids()))
    headlines = [r.key for r in comparison.rows if r.info.headline]
    failing: dict[str, list[bool | None]] = {}  # per side: failed, or None without a run
    for example_id in order:
        flags: list[bool | None] = []
        for runs_by_example, checks in zip(grouped, applied, strict=True):
            runs = runs_by_example.get(example_id, [])
            flags.append(
                None
                if not runs
                else any(r.status != "ok" for r in runs)
                or any(not c.passed for c in example_checks(runs, checks))
            )
        failing[example_id] = flags
    flagged = [e for e in order if any(failing[e]) or e in disagreeing]
    chosen = set(flagged[:limit])
    chosen.update([e for e in order if e not in chosen][: limit - len(chosen)])
    examples = []
    for example_id in order:
        if example_id not in chosen:
            continue
        targets = []
        first_run = None
        for side, runs_by_example, checks, failed in zip(
            sides, grouped, applied, failing[example_id], strict=True
        ):
            name = side.target
            runs = runs_by_example.get(example_id, [])
            if not runs:
                targets.append({"name": name, "missing": True})
                continue
            first_run = first_run or runs[0]
            views = [_run_view(r, checks, side.pricing, side.catalog) for r in runs]
            for run, view in zip(runs, views, strict=True):
                view["url"] = _link(side.run_urls.get((example_id, run.repetition)))
            messages = side.conversations.get(example_id)
            headline = {
                catalog.info(k).tiny: catalog.fmt(k, v)
                for k in headlines
                if (v := side.per_example(k).get(example_id)) is not None
            }
            targets.append(
                {
                    "name": name,
                    "missing": False,
                    "failed": failed,
                    "headline": headline,
                    "runs": views,
                    "conversation": _conversation(messages) if messages else [],
                    "conversation_of": min(r.repetition for r in runs),
                }
            )
        if first_run is None:
            continue
        question = opening_line(first_run.inputs) or first_run.inputs.get("question")
        examples.append(
            {
                "id": example_id,
                "question": str(question) if question is not None else json.dumps(first_run.inputs),
                "inputs": json.dumps(first_run.inputs, indent=2, ensure_ascii=False),
                "reference": json.dumps(first_run.reference, indent=2, ensure_ascii=False),
                "failed": any(failing[example_id]),
                "disagree": example_id in disagreeing,
                "targets": targets,
            }
        )
    left_out = [e for e in order if e not in chosen]
    return Examples(
        shown=examples,
        total=len(order),
        failed=sum(any(flags) for flags in failing.values()),
        left_out_results=sum(len(g.get(e, [])) for e in left_out for g in grouped),
    )


def _table(comparison: Comparison) -> list[dict[str, Any]]:
    catalog = comparison.catalog
    rows = []
    for row in comparison.rows:
        means = []
        for mean, spread in zip(row.means, row.spreads, strict=True):
            text = fmt_mean(catalog, row.key, mean)
            if spread is not None:
                text += f" ± {catalog.fmt(row.key, spread)}"
            means.append(text)
        diffs = []
        for index, paired in enumerate(row.vs_first, start=1):
            if paired is None:
                diffs.append(
                    {
                        "diff": "–",
                        "ci": "",
                        "p": "",
                        "q": "",
                        "counts": "",
                        "mde": "",
                        "verdict": "",
                    }
                )
                continue
            interval = (
                "–"
                if paired.ci_low is None
                else f"[{catalog.fmt_diff(row.key, paired.ci_low)}, "
                f"{catalog.fmt_diff(row.key, paired.ci_high)}]"
            )
            diffs.append(
                {
                    "diff": catalog.fmt_diff(row.key, paired.diff),
                    "ci": interval,
                    "p": p_cell(paired),
                    "q": q_cell(row.q_values[index - 1] if row.q_values else None),
                    "counts": counts_cell(paired, row.info.higher_is_better),
                    "mde": detectable_cell(catalog, row.key, paired),
                    "verdict": row.verdict(index) or "",
                }
            )
        rows.append({"label": row.label, "key": row.key, "means": means, "diffs": diffs})
    return rows


def _failure_starts(comparison: Comparison) -> list[tuple[str, list[str], list[list[Any]]]]:
    """Per side with a failed request: its name, and where its failures start (agent ×
    kind) as a header and rows."""
    found = []
    for name, side in zip(comparison.names, comparison.sides, strict=True):
        counted = blame_counts(run.blame for run in side.runs)
        if counted:
            found.append((name, *blame_rows(counted)))
    return found


def _calibration_section(comparison: Comparison) -> list[dict[str, Any]]:
    """Per target and labelled key: its figures and its confusion, row by row."""
    return [
        {
            "target": item.target,
            "key": item.key,
            "figures": calibration.figures(item),
            "levels": [calibration.value(c) for c in item.agreement.categories],
            "rows": [
                {"value": calibration.value(c), "index": i, "counts": counts}
                for i, (c, counts) in enumerate(
                    zip(item.agreement.categories, item.agreement.confusion, strict=True)
                )
            ],
        }
        for item in comparison.calibration
    ]


def _link(url: str | None) -> str | None:
    """A URL the page may link to: http(s) only."""
    return url if url and url.startswith(("https://", "http://")) else None


def _errors_section(comparison: Comparison) -> list[dict[str, Any]]:
    """Per side with errored calls: how many, and every kind with its count and first
    message (the grouping ``agenteval run`` lists); empty when no call errored."""
    return [
        {
            "name": name,
            "errored": f"{found.errored:,}",
            "calls": f"{found.calls:,}",
            "reasons": [
                {"count": f"{r.count:,}", "kind": r.kind, "text": r.text} for r in found.reasons
            ],
        }
        for name, found in zip(comparison.names, comparison.errors, strict=True)
        if found.errored
    ]


def _redactor(secrets: list[str]) -> Any:
    """The template's ``finalize``: every value it writes out, as text without the known
    secrets and URL passwords (numbers, None and markup the page made stay as they are)."""
    from markupsafe import Markup

    def finalize(value: Any) -> Any:
        if value is None or isinstance(value, int | float | Markup):
            return value
        text = value if isinstance(value, str) else str(value)
        # Shorter text holds neither a secret (redact skips shorter ones) nor a URL password.
        return text if len(text) < MIN_SECRET_LENGTH else redact(text, secrets)

    return finalize


@lru_cache(maxsize=4)
def _environment(secrets: tuple[str, ...]) -> Any:
    """The template's environment, redacting ``secrets``. Kept for the next report with the
    same secrets: compiling the template costs more than rendering it (about 0.15 s), and a
    process that writes several reports (the API's callers) compiles it once."""
    from jinja2 import Environment, PackageLoader, StrictUndefined

    return Environment(
        loader=PackageLoader("agenteval_cli.report", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=_redactor(list(secrets)),
    )


def render_html(
    comparison: Comparison, *, thresholds: Mapping[str, Any] | None = None, title: str = ""
) -> str:
    """The report as one HTML string."""
    env = _environment(tuple(secret_values()))  # looked up once, for every value on the page
    names, catalog = comparison.names, comparison.catalog
    charts = [
        c
        for r in comparison.rows
        if r.info.scope != "run"  # a run figure is no mean over examples
        and (c := _chart(catalog, r.key, comparison.sides, names, r.means))
    ]
    examples = _examples(comparison, thresholds or {}, EXAMPLE_LIMIT)
    left_out = examples.total - len(examples.shown)
    return env.get_template("report.html.j2").render(
        title=title or "agenteval report",
        generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        names=names,
        sides=comparison.sides,
        common=comparison.common_examples,
        warnings=comparison.warnings,
        note=comparison.note,
        table=_table(comparison),
        method=method_note(
            comparison.tested,
            comparison.discoveries,
            bootstrap=comparison.method == "bootstrap",
        ),
        repetition_rows=side_rows(catalog, comparison.repeated, comparison.flaky),
        repetition_notes=legends(
            any(s is not None for r in comparison.rows for s in r.spreads), comparison.repeated
        ),
        charts=charts,
        confusion=[
            (name, c) for name, c in zip(names, comparison.confusion, strict=True) if c is not None
        ],
        failure_starts=_failure_starts(comparison),
        calibration=_calibration_section(comparison),
        calibration_errors=comparison.calibration_errors,
        calibration_title=calibration.TITLE,
        calibration_headings=calibration.HEADINGS,
        corner=calibration.CORNER,
        histograms=[
            (
                catalog.label(key),
                [(name, _histogram(h)) for name, h in zip(names, per_side, strict=True) if h],
            )
            for key, per_side in comparison.histograms
        ],
        agents=_agents_section(comparison),
        errors=_errors_section(comparison),
        links=[_link(side.url) for side in comparison.sides],
        examples=examples.shown,
        failed_count=sum(e["failed"] for e in examples.shown),
        disagree_count=sum(e["disagree"] for e in examples.shown),
        shown_examples=f"{len(examples.shown):,}",
        all_examples=f"{examples.total:,}",
        left_out=f"{left_out:,}" if left_out else "",
        left_out_failed=f"{examples.failed - sum(e['failed'] for e in examples.shown):,}",
        left_out_results=f"{examples.left_out_results:,}",
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
