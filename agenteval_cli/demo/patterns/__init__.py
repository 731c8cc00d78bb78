"""LangChain 1.x's multi-agent patterns, built as LangChain's "Multi-agent" docs build them,
on the scenarios those docs compare them on.

``subagents``, ``handoffs``, ``skills`` and ``router`` each hold a ``graph``: a main agent
calling subagents as tools; one agent whose ``current_step`` (set by ``transfer_to_*``
tools, read by ``@wrap_model_call`` middleware) swaps its prompt and tools; one agent
loading skills with ``load_skill``; a classifier ``Send``-ing the request to agents in
parallel and a synthesiser. They share a ``milk`` errand (a ``buy_milk`` tool) and three
language domains (``python``, ``javascript``, ``rust``) whose notes (``docs/*.md``) are
about 2,000 tokens each, as in the docs' third scenario. A scripted chat model drives them
offline (``AGENTEVAL_DEMO_MODEL`` picks a real one); what each call reads, and so its
tokens, is what the graph gives it.
"""
