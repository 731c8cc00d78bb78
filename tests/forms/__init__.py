"""A corpus of LangGraph multi-agent graph forms, each driven by a logging scripted model.

Every form is built the way its library's documentation builds it (langgraph-supervisor,
langgraph-swarm, ``create_agent``, ``create_react_agent``, plain ``StateGraph`` nodes,
``Command`` and ``Send``). Its chat models are :class:`forms.model.FormModel` instances: each
knows the agent it serves, replies from the conversation it receives and writes every call to
:data:`forms.model.LOG`. The metrics agenteval must report are computed from that log
(:mod:`forms.truth`), never from agenteval itself.
"""
