"""Where a conversation's turns come from: the row's script, or a simulated user.

A :class:`TurnSource` gives the driver one turn at a time (``await source.next_turn(
transcript)``) until it returns None, and says why it stopped (``source.ended_because``).
:class:`ScriptedTurns` reads a row's ``inputs.turns``; :class:`SimulatedTurns` asks a user
(an LLM, :class:`LLMUser`, or a function of the user's own, :class:`FunctionUser`) for each
turn, its model calls traced apart from the target's (``source.user_calls``).
"""

from agenteval_cli.targets.users.function import FunctionUser
from agenteval_cli.targets.users.llm import LLMUser, default_system, system_prompt
from agenteval_cli.targets.users.source import (
    USER_AGENT,
    Message,
    ScriptedTurns,
    SimulatedTurns,
    SimulatedUser,
    SimulatedUserError,
    StopRule,
    TurnSource,
    User,
    ended_by_judge,
    transcript_message,
    turn_source,
)

__all__ = [
    "USER_AGENT",
    "FunctionUser",
    "LLMUser",
    "Message",
    "ScriptedTurns",
    "SimulatedTurns",
    "SimulatedUser",
    "SimulatedUserError",
    "StopRule",
    "TurnSource",
    "User",
    "default_system",
    "ended_by_judge",
    "system_prompt",
    "transcript_message",
    "turn_source",
]
