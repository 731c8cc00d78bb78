"""How the scripted model plays each role of the patterns: by the request and what has
happened since it, as an agent reading its context would.

A role acts only on what its messages hold: a subagent answers from the notes in its
prompt, the skills agent from the skills it loaded, a synthesiser from the results it was
given. Each function returns the reply's text and its tool calls.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from agenteval_cli.demo.patterns.knowledge import (
    LANGUAGES,
    MILK,
    domains_in,
    gist,
    summary,
    verdict,
)

Calls = list[tuple[str, dict[str, Any]]]
Reply = tuple[str, Calls]

BOUGHT = "I bought milk for you."
GREETING = "How can I help?"


def text_of(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(b if isinstance(b, str) else str(b.get("text", "")) for b in content)


def request(messages: Sequence[BaseMessage]) -> str:
    """The latest user message: what this turn asks."""
    return next((text_of(m) for m in reversed(messages) if isinstance(m, HumanMessage)), "")


def since_request(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    last = max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=-1)
    return list(messages[last + 1 :])


def system(messages: Sequence[BaseMessage]) -> str:
    return "\n".join(text_of(m) for m in messages if isinstance(m, SystemMessage))


def calls(messages: Sequence[BaseMessage], name: str) -> list[dict[str, Any]]:
    """The arguments of every call of tool ``name`` among ``messages``."""
    return [
        c["args"]
        for m in messages
        if isinstance(m, AIMessage)
        for c in m.tool_calls
        if c["name"] == name
    ]


def results(messages: Sequence[BaseMessage]) -> str:
    return "\n\n".join(text_of(m) for m in messages if isinstance(m, ToolMessage))


def task(domain: str) -> str:
    """What a front model asks of a domain's agent."""
    if domain == MILK:
        return "Buy milk for the office."
    return f"How does {LANGUAGES[domain]} do for web development, and when should we choose it?"


def answer(domains: list[str], findings: str) -> str:
    """The reply to the user: the errand done, or each language's verdict from ``findings``."""
    if MILK in domains:
        return BOUGHT
    verdicts = [verdict(lang, findings) for lang in domains if lang in LANGUAGES]
    return " ".join(["For web development:", *verdicts]) if verdicts else GREETING


def main_agent(messages: Sequence[BaseMessage]) -> Reply:
    """Subagents' main agent: a subagent per part of the request, in parallel; then sum up."""
    domains = domains_in(request(messages))
    recent = since_request(messages)
    if domains and not any(isinstance(m, ToolMessage) for m in recent):
        return "", [(f"{d}_subagent", {"query": task(d)}) for d in domains]
    return answer(domains, results(recent)), []


def domain_agent(domain: str, messages: Sequence[BaseMessage]) -> Reply:
    """A domain's own agent (a subagent, a router's agent): the errand, or its notes' gist."""
    if domain == MILK:
        if not calls(since_request(messages), "buy_milk"):
            return "", [("buy_milk", {})]
        return f"Bought milk: {results(since_request(messages))}", []
    return summary(system(messages)), []


def step_of(messages: Sequence[BaseMessage]) -> str:
    """The handoffs agent's current step, read off the prompt the middleware gave it."""
    first = system(messages).split(".", 1)[0]
    return first.removeprefix("You are the ").removesuffix(" agent")


def stepped_agent(messages: Sequence[BaseMessage], tools: tuple[str, ...]) -> Reply:
    """Handoffs: the step does its part, then hands the next part on, or answers."""
    step = step_of(messages)
    domains = domains_in(request(messages))
    recent = since_request(messages)
    done = {args.get("language") for args in calls(recent, "record_findings")}
    if step == MILK and MILK in domains:
        if not calls(recent, "buy_milk"):
            return "", [("buy_milk", {})]
        return BOUGHT, []
    if step in LANGUAGES and step in domains and step not in done:
        findings = gist(step, system(messages))
        return "", [("record_findings", {"language": step, "findings": findings})]
    rest = [d for d in domains if d != step and d not in done]
    if rest and f"transfer_to_{rest[0]}" in tools:
        return "", [(f"transfer_to_{rest[0]}", {})]
    findings = " ".join(args.get("findings", "") for args in calls(recent, "record_findings"))
    return answer(domains, findings), []


def skilled_agent(messages: Sequence[BaseMessage]) -> Reply:
    """Skills: load the skills the request needs (once per conversation), do the work the
    loaded skills describe, then answer."""
    domains = domains_in(request(messages))
    loaded = {args.get("skill_name") for args in calls(messages, "load_skill")}
    missing = [d for d in domains if d not in loaded]
    if missing:
        return "", [("load_skill", {"skill_name": d}) for d in missing]
    recent = since_request(messages)
    if MILK in domains and not calls(recent, "buy_milk"):
        return "", [("buy_milk", {})]
    done = {args.get("language") for args in calls(recent, "record_findings")}
    skills = "\n\n".join(text_of(m) for m in messages if isinstance(m, ToolMessage))
    todo = [d for d in domains if d in LANGUAGES and d not in done]
    if todo:
        return "", [("record_findings", {"language": d, "findings": gist(d, skills)}) for d in todo]
    findings = " ".join(args.get("findings", "") for args in calls(recent, "record_findings"))
    return answer(domains, findings), []


def classifier(messages: Sequence[BaseMessage], tools: tuple[str, ...]) -> Reply:
    """Router: which agents the request needs, with the query each gets."""
    chosen = [{"source": d, "query": task(d)} for d in domains_in(request(messages))]
    return "", [(tools[0], {"classifications": chosen})]


def synthesiser(messages: Sequence[BaseMessage]) -> Reply:
    """Router: the agents' results (in the request) summed up."""
    text = request(messages)
    return answer(domains_in(text.split("\n", 1)[0]), text), []
