"""The conversation of one request, pieced together from every message sequence seen.

No single callback sees the whole conversation: a supervisor's final state keeps only
each specialist's last message, while the inner turns appear only in the specialists'
own model inputs and outputs, tool results and state updates. :class:`Conversation`
merges all of those sequences into one ordered list without repeats, which becomes
``Trace.messages``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)

from agenteval_cli.trace.openai_form import openai_messages

__all__ = ["Conversation", "state_messages", "update_messages"]


class _Entry:
    """A message in the conversation; ``placed`` once it has its position in the list.
    ``seen_id`` is the message's id when its keys were last taken (ids come late: LangGraph
    gives one to a message as it enters the state)."""

    __slots__ = ("message", "placed", "seen_id")

    def __init__(self, message: BaseMessage, seen_id: str | None) -> None:
        self.message = message
        self.placed = False
        self.seen_id = seen_id


class Conversation:
    """The ordered, de-duplicated union of every message sequence the callbacks saw.

    A message is known by its object, its id, its tool-call ids, or (when it has none of
    these) its content. A new message goes just before the next known message of its
    sequence, or at the end when none follows.
    """

    def __init__(self) -> None:
        self._items: list[_Entry] = []
        self._by_key: dict[tuple[Any, ...], _Entry] = {}
        # id() of every message object seen: safe, as each object is kept alive (an entry's
        # own message, or in ``_copies``: other objects found to be a known message)
        self._by_object: dict[int, _Entry] = {}
        self._copies: list[BaseMessage] = []
        # id() of the objects whose entry is placed and has its id: seen again, one only
        # marks a position (most of a state's messages, at every step of a graph)
        self._settled: dict[int, _Entry] = {}

    def merge(
        self, messages: Sequence[BaseMessage], *, fresh: Sequence[BaseMessage] = ()
    ) -> list[BaseMessage]:
        """Merge one sequence; return the messages that were new.

        ``fresh`` messages were just produced (a model's reply, a tool's result), so only
        their object or id can make them known: tool-call ids may repeat within a request.
        """
        added: list[BaseMessage] = []
        pending: list[_Entry] = []
        previous: _Entry | None = None
        settled, kinds = self._settled, _KINDS
        if len(messages) > 2:  # a state (or a model's input): its settled head is skipped
            known = [*map(settled.__contains__, map(id, messages))]  # without a Python loop
            first = messages[0]
            # a model's input starts with its prompt, which the loop would skip
            head = int(not known[0] and kinds.get(type(first)) is _SYSTEM and not first.id)
            try:
                start = known.index(False, head)
            except ValueError:  # every one settled: nothing to learn
                return added
            if start > head:
                previous = settled[id(messages[start - 1])]
            if start:
                messages = messages[start:]
        elif len(messages) == 1 and id(messages[0]) in settled:  # a node's last message
            return added
        by_key, by_object = self._by_key, self._by_object
        fresh_ids = set(map(id, fresh)) if fresh else ()
        for message in messages:
            entry = by_object.get(id(message))
            if entry is not None:  # this very object was seen before
                # Given an id since (LangGraph ids messages as they enter the state; an id is
                # never changed): known by it too. Read only then: a message's attributes
                # go through pydantic's __getattr__ hook.
                if entry.seen_id is None and message.id is not None:
                    entry.seen_id = message.id
                    for key in _message_keys(message, _kind(message)):
                        by_key.setdefault(key, entry)
                if entry.placed and entry.seen_id is not None:
                    settled[id(message)] = entry
            elif (kind := kinds.get(type(message)) or _kind(message)) is _SKIP or (
                kind is _SYSTEM and not message.id
            ):
                continue  # per-call prompts are instructions, not turns (state ones have ids)
            else:
                keys = _message_keys(message, kind)
                entry = None
                new = id(message) in fresh_ids
                for key in keys:
                    if (not new or key[0] == "id") and key in by_key:
                        entry = by_key[key]
                        break
                if entry is None:
                    entry = by_object[id(message)] = _Entry(message, message.id)
                    pending.append(entry)
                    added.append(message)
                    for key in keys:  # the latest owns shared keys
                        by_key[key] = entry
                else:  # a copy of a known message
                    for key in keys:
                        by_key.setdefault(key, entry)
                    by_object[id(message)] = entry
                    self._copies.append(message)
                    if entry.placed and entry.seen_id is not None:
                        settled[id(message)] = entry
            if entry.placed:
                if pending:
                    self._place(pending, previous, entry)
                    pending = []
                previous = entry
        if pending:
            self._place(pending, previous, None)
        return added

    def _place(self, pending: list[_Entry], previous: _Entry | None, before: _Entry | None) -> None:
        items = self._items
        if before is None and (previous is None or items[-1] is previous):
            items += pending  # at the end: the usual case
        else:
            position = len(items) if before is None else items.index(before)
            if previous is not None:
                position = max(position, items.index(previous) + 1)
            items[position:position] = pending
        settled = self._settled
        for entry in pending:
            entry.placed = True
            if entry.seen_id is not None:
                settled[id(entry.message)] = entry

    def tool_messages(self) -> dict[str, ToolMessage]:
        """Tool-call id -> the ToolMessage answering it (the latest, where ids repeat)."""
        return {
            e.message.tool_call_id: e.message
            for e in self._items
            if isinstance(e.message, ToolMessage)
        }

    def openai_messages(self) -> list[dict[str, Any]]:
        """The conversation in OpenAI chat format, as stored in ``Trace.messages``."""
        return openai_messages([e.message for e in self._items])


def _message_keys(message: BaseMessage, kind: str) -> list[tuple[Any, ...]]:
    """Everything that can identify ``message`` when it turns up again as another object."""
    keys: list[tuple[Any, ...]] = [("id", message.id)] if message.id else []
    # ``kind`` is _kind(message): _TOOL for a ToolMessage, _AI for an AIMessage
    if kind is _TOOL:
        tool_call_id = message.tool_call_id  # type: ignore[attr-defined]
        if tool_call_id:
            keys.append(("tool", tool_call_id))
    elif kind is _AI:
        for call in message.tool_calls:  # type: ignore[attr-defined]
            call_id = call.get("id")
            if call_id:
                keys.append(("call", call_id))
    # Content identifies only what nothing else does (say, an id-less question to a bare model).
    return keys or [("text", message.type, message.name, repr(message.content))]


def state_messages(value: Any) -> Sequence[BaseMessage]:
    """Messages in a state update: ``{"messages": [...]}``, a ``Command``, or a list of them.

    Bare message lists (a prompt's output, say) are not state and are left out. A list of
    messages only is returned as it is, not copied. Lists of updates are walked on a list:
    a node may return them nested as deep as it likes.
    """
    if type(value) is dict:  # a node's update or a graph's state: the usual case, first
        return update_messages(value)
    while type(value).__name__ == "Command":  # langgraph.types.Command, a tool's update
        value = getattr(value, "update", None)
    if isinstance(value, dict):
        return update_messages(value)
    if type(value) is list and _only_messages(value):
        return []  # a bare message list (a prompt's output): no state
    found: list[BaseMessage] = []
    stack = [value]
    while stack:
        current = stack.pop()
        if isinstance(current, dict):
            found.extend(update_messages(current))
        elif isinstance(current, list | tuple):
            stack.extend(reversed([item for item in current if not _kind(item)]))
        elif type(current).__name__ == "Command":
            stack.append(getattr(current, "update", None))
    return found


def update_messages(update: dict[str, Any]) -> Sequence[BaseMessage]:
    """The messages of one state update, ``{"messages": [...]}``."""
    found = update.get("messages")
    if found is None:
        return []
    if type(found) is list or isinstance(found, list | tuple):
        return found if _only_messages(found) else [m for m in found if _kind(m)]
    return [found] if _kind(found) else []


# What a value is, by its type: a message of one of these kinds, or not a message ("").
# isinstance() against a message class goes through its pydantic metaclass's
# __instancecheck__ every time; looking the type up here does not, which counts for states
# of dozens of messages seen at every step of a graph.
_AI, _TOOL, _SYSTEM, _SKIP, _OTHER = "ai", "tool", "system", "skip", "message"
_BASES = (
    (RemoveMessage, _SKIP),  # a deletion, not a turn
    (ToolMessage, _TOOL),
    (AIMessage, _AI),
    (SystemMessage, _SYSTEM),
    (BaseMessage, _OTHER),
)
_KINDS: dict[type, str] = {}  # every type met so far
_MESSAGE_TYPES: set[type] = set()  # those of them that are messages


def _kind(value: Any) -> str:
    kind = _KINDS.get(type(value))
    return _kind_of(type(value)) if kind is None else kind


def _kind_of(cls: type) -> str:
    kind = next((k for base, k in _BASES if issubclass(cls, base)), "")
    _KINDS[cls] = kind
    if kind:
        _MESSAGE_TYPES.add(cls)
    return kind


def _only_messages(values: Sequence[Any]) -> bool:
    types = set(map(type, values))
    if types <= _MESSAGE_TYPES:
        return True
    for cls in types:
        kind = _KINDS.get(cls)
        if not (_kind_of(cls) if kind is None else kind):
            return False
    return True
