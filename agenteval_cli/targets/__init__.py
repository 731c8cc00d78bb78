"""Targets: an import path becomes ``async (inputs: dict) -> dict``.

A compiled LangGraph graph gets ``{"messages": [HumanMessage(inputs[input_key])],
**initial_state}``; a LangChain Runnable gets the inputs dict; a plain function (sync or
async) is called with the inputs dict, as a LangSmith ``evaluate()`` target is.

A target's ``input`` (a mapping of ``{field}`` templates, or a function) replaces those
defaults, ``output`` names where the final answer is in what comes back, and ``config``,
its placeholders filled from the row (:mod:`~agenteval_cli.targets.configs`), is merged into
the RunnableConfig of graphs and Runnables. Every graph or Runnable call runs on a thread of
its own (a fresh ``thread_id``, unless ``config`` fills one from the row), so a checkpointer
never carries one example's conversation into the next. A graph whose checkpointer has only
sync methods runs as ``graph.invoke`` on a worker thread
(:mod:`~agenteval_cli.targets.checkpointers`).

A conversation's turns are sent one at a time with :meth:`Target.turn` on a
:class:`~agenteval_cli.targets.session.Session`: one thread for all its turns, and the
history agenteval carries for a target that keeps none itself (see that module).
"""

from agenteval_cli.targets.adapt import Target, TargetFn, adapt
from agenteval_cli.targets.errors import MissingInputField, MissingOutput, TargetOptionError

__all__ = ["MissingInputField", "MissingOutput", "Target", "TargetFn", "TargetOptionError", "adapt"]
