"""Skills: one agent that loads a domain's notes when a request needs them, with a
``load_skill`` tool, as LangChain's docs build it.

A loaded skill stays in the conversation (the checkpointer's thread), so a follow-up in the
same domain does not load it again, and every later call reads every skill loaded so far.
"""

from __future__ import annotations

from langchain.agents import create_agent
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.state import CompiledStateGraph

from agenteval_cli.demo.patterns.knowledge import DESCRIPTIONS, DOMAINS, assistant_prompt
from agenteval_cli.demo.patterns.knowledge import notes as notes_of
from agenteval_cli.demo.patterns.model import pattern_model
from agenteval_cli.demo.patterns.tools import buy_milk, record_findings

SKILL_LIST = "\n".join(f"- {domain}: {DESCRIPTIONS[domain]}" for domain in DOMAINS)


@tool(description=f"Load a skill's notes.\n\nAvailable skills:\n{SKILL_LIST}")
def load_skill(skill_name: str) -> str:
    if skill_name not in DOMAINS:
        raise ValueError(f"no skill {skill_name!r}; the skills are {', '.join(DOMAINS)}")
    return notes_of(skill_name)


SKILLS_PROMPT = (
    assistant_prompt()
    + f"\nYou have {len(DOMAINS)} skills: {', '.join(DOMAINS)}. Load the ones a request "
    "needs with load_skill (all at once), then follow them."
)


def build_graph() -> CompiledStateGraph:
    return create_agent(
        pattern_model("skills"),
        [load_skill, buy_milk, record_findings],
        system_prompt=SKILLS_PROMPT,
        checkpointer=InMemorySaver(),
        name="assistant",
    )


graph = build_graph()
