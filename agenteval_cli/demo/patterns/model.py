"""The scripted model of the pattern demos: one role of one pattern, decided by ``policy``.

Its token usage is :class:`~agenteval_cli.demo.model.ScriptedChatModel`'s, a quarter of
the characters it is given and writes: the docs' ~1K-token front prompts and ~2K-token
domain notes are what makes each call's count, not a number the model is told.
"""

from __future__ import annotations

import os
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage

from agenteval_cli.demo.model import LARGE_MODEL, MODEL_ENV_VAR, ScriptedChatModel, model_for
from agenteval_cli.demo.patterns import policy
from agenteval_cli.demo.patterns.knowledge import DOMAINS

ROLES = ("main", "handoffs", "skills", "classify", "synthesize", *DOMAINS)


class PatternModel(ScriptedChatModel):
    """Plays ``role``: a pattern's front agent, a router's step, or a domain's agent."""

    model_name: str = LARGE_MODEL

    def _decide(
        self, messages: list[BaseMessage], tool_names: tuple[str, ...]
    ) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
        if self.role == "main":
            return policy.main_agent(messages)
        if self.role == "handoffs":
            return policy.stepped_agent(messages, tool_names)
        if self.role == "skills":
            return policy.skilled_agent(messages)
        if self.role == "classify":
            return policy.classifier(messages, tool_names)
        if self.role == "synthesize":
            return policy.synthesiser(messages)
        if self.role in DOMAINS:
            return policy.domain_agent(self.role, messages)
        raise ValueError(f"unknown role {self.role!r}; expected one of {ROLES}")


def pattern_model(role: str) -> BaseChatModel:
    """The scripted model for ``role``, or ``$AGENTEVAL_DEMO_MODEL``'s when it is set."""
    choice = os.environ.get(MODEL_ENV_VAR)
    return model_for(role, choice) if choice else PatternModel(role=role)
