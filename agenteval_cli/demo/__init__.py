"""Offline demo targets: a supervisor graph and a swarm over the same three specialists.

``agenteval_cli.demo.supervisor:graph`` and ``agenteval_cli.demo.swarm:graph`` answer
customer-support requests with ``billing``, ``tech_support`` and ``account`` agents
driven by a deterministic scripted chat model, so ``datasets/routing.jsonl`` can be run
without an API key. Their ``conversational_graph`` twins keep each conversation on a
checkpointer thread and ask the customer to confirm a cancellation (``interrupt()``), for
``datasets/conversations.jsonl``. Set ``AGENTEVAL_DEMO_MODEL`` (e.g.
``openai:gpt-4o-mini``) to run the same graphs on a real provider. ``patterns`` holds
LangChain's four multi-agent patterns on its docs' performance scenarios. Importing this
package loads nothing heavy.
"""
