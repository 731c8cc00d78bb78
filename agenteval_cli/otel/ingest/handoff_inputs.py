"""What agenteval's own export wrote for ``handoff_context``, read back onto a trace.

Its model spans carry no messages, so the replay cannot see what each agent was given: the
root says it instead (``agenteval.request``, ``agenteval.handoffs.received``). A trace whose
spans hold the messages (another instrumentation's) has them from the replay already; the
attributes then change nothing.
"""

from __future__ import annotations

import json

from agenteval_cli.core.records import Trace
from agenteval_cli.otel import names
from agenteval_cli.otel.ingest.otlp import Span

__all__ = ["handoff_inputs"]


def handoff_inputs(trace: Trace, root: Span) -> None:
    """Give ``trace`` the human message and each handoff's received text the root records,
    where the replay found none; a list that does not name the trace's handoffs in order
    (source and target) is left unread."""
    request = root.attributes.get(names.REQUEST)
    if trace.request is None and isinstance(request, str):
        trace.request = request
    try:
        given = json.loads(str(root.attributes.get(names.HANDOFFS_RECEIVED) or "null"))
    except ValueError:
        return
    if not isinstance(given, list) or len(given) != len(trace.handoffs):
        return
    pairs = list(zip(trace.handoffs, given, strict=True))
    if not all(
        isinstance(g, dict) and (g.get("source"), g.get("target")) == (h.source, h.target)
        for h, g in pairs
    ):
        return
    for handoff, item in pairs:
        text = item.get("received")
        if not handoff.received and isinstance(text, str):  # the replay saw no messages
            handoff.received = text
