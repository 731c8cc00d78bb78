"""Keyword rules: which specialist domains a customer request touches, and how clearly.

Both demo graphs read requests through these rules, so the supervisor and the swarm
see the same words and differ only in how their agents act on them. Plain ``re``, no
LangChain imports, so the rules can be tested and reused on their own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

AGENTS = ("billing", "tech_support", "account")

# Words that settle the domain on their own.
_STRONG: dict[str, tuple[str, ...]] = {
    "billing": (
        r"payments?",
        r"credit cards?",
        r"cards?",
        r"invoices?",
        r"refunds?",
        r"charged?",
        r"charges",
        r"billing",
        r"receipts?",
        r"paypal",
        r"declined",
    ),
    "tech_support": (
        r"sso",
        r"saml",
        r"single sign-on",
        r"okta",
        r"mfa",
        r"2fa",
        r"errors?",
        r"broken",
        r"bugs?",
        r"crash(?:es|ed)?",
        r"log ?in",
        r"outage",
        r"fails",
        r"api",
    ),
    "account": (
        r"account manager",
        r"account owner",
        r"upgrade",
        r"downgrade",
        r"enterprise",
        r"profile",
        r"email address",
        r"phone number",
        r"close my account",
        r"cancel",
    ),
}

# Words billing and account both claim. The value is the domain a careful reader
# (the supervisor) settles on when nothing stronger is in the request.
_AMBIGUOUS: dict[str, str] = {
    r"subscriptions?": "billing",
    r"renew(?:al|als|s|ed)?": "billing",
    r"plans?": "account",
    r"seats?": "account",
    r"tiers?": "account",
}

_NEGATION = re.compile(
    r"\b(?:no|nothing|not (?:the|about|related)|(?:don't|do not) (?:need|have|want))\b"
)
_ADDITIVE = re.compile(r"\b(?:also|as well|plus|additionally|another thing)\b")
_CLAUSE_BREAK = re.compile(r"[.;!?](?=\s|$)|,|\band\b|\bbut\b")


@dataclass(frozen=True)
class Mention:
    """One keyword hit: where it is and how its clause qualifies it."""

    domain: str
    keyword: str
    start: int
    ambiguous: bool  # a billing/account word; ``domain`` is the careful reader's guess
    negated: bool  # its clause says the user does *not* need this
    flagged: bool  # its clause marks it as an extra request ("also", "plus", ...)


def clauses(text: str) -> list[tuple[int, str]]:
    """Split a request into (offset, clause) pieces; fragments of <= 2 words join the next."""
    pieces: list[tuple[int, str]] = []
    start = 0
    for match in _CLAUSE_BREAK.finditer(text):
        pieces.append((start, text[start : match.start()]))
        start = match.end()
    pieces.append((start, text[start:]))
    merged: list[tuple[int, str]] = []
    carry: tuple[int, str] | None = None
    for offset, piece in pieces:
        if carry is not None:
            offset, piece = carry[0], text[carry[0] : offset + len(piece)]
            carry = None
        if not piece.strip():
            continue
        if len(piece.split()) <= 2:
            carry = (offset, piece)
            continue
        merged.append((offset, piece))
    if carry is not None:
        merged.append(carry)
    return merged


def read(text: str) -> list[Mention]:
    """Every domain keyword in ``text``, in order of appearance."""
    found: list[Mention] = []
    for offset, clause in clauses(text):
        low = clause.lower()
        negated = bool(_NEGATION.search(low))
        flagged = bool(_ADDITIVE.search(low))
        for domain, patterns in _STRONG.items():
            for pattern in patterns:
                for hit in re.finditer(rf"\b{pattern}\b", low):
                    found.append(
                        Mention(domain, hit.group(), offset + hit.start(), False, negated, flagged)
                    )
        for pattern, guess in _AMBIGUOUS.items():
            for hit in re.finditer(rf"\b{pattern}\b", low):
                found.append(
                    Mention(guess, hit.group(), offset + hit.start(), True, negated, flagged)
                )
    found.sort(key=lambda m: (m.start, m.ambiguous))
    return _drop_overlaps(found)


def _drop_overlaps(mentions: list[Mention]) -> list[Mention]:
    """Keep the first (longest) keyword at each position, so "credit card" is not also "card"."""
    kept: list[Mention] = []
    end = -1
    for mention in sorted(mentions, key=lambda m: (m.start, -len(m.keyword))):
        if mention.start >= end:
            kept.append(mention)
            end = mention.start + len(mention.keyword)
    return kept


def _unique(domains: list[str]) -> list[str]:
    return list(dict.fromkeys(domains))


def named_domains(text: str) -> list[str]:
    """Domains named by strong keywords, in order, negations not understood (a quick read)."""
    return _unique([m.domain for m in read(text) if not m.ambiguous])


def flagged_domains(text: str) -> list[str]:
    """Domains the user explicitly adds to the request with "also", "plus", "as well"..."""
    return _unique([m.domain for m in read(text) if not m.ambiguous and m.flagged])


def is_ambiguous_only(text: str) -> bool:
    """True when only billing/account words such as "plan" or "subscription" appear."""
    mentions = read(text)
    return bool(mentions) and all(m.ambiguous for m in mentions)


def careful_domains(text: str) -> list[str]:
    """The supervisor's read: negated clauses skipped, ambiguous words guessed, breakages first.

    Strong keywords decide; ambiguous words count only when nothing strong is left, and
    then the first one's guess wins. Technical problems go first because they block the
    user; the rest keep the order the user gave.
    """
    live = [m for m in read(text) if not m.negated]
    strong = [m for m in live if not m.ambiguous]
    ordered = _unique([m.domain for m in strong]) if strong else [m.domain for m in live[:1]]
    return sorted(ordered, key=lambda d: d != "tech_support")


def domain_text(domain: str, text: str) -> str:
    """The clauses of ``text`` that mention ``domain`` (or all of it), to pull arguments from.

    Ambiguous words count for both billing and account: whoever ends up with them needs
    their clause.
    """
    shared = domain in ("billing", "account")
    starts = {m.start for m in read(text) if m.domain == domain or (m.ambiguous and shared)}
    parts = [c for o, c in clauses(text) if any(o <= s < o + len(c) for s in starts)]
    return " ".join(parts) if parts else text
