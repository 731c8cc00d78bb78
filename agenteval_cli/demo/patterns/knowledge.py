"""What the patterns know: the domains, their notes and skills, and the shared prompt.

The language notes are the documentation the docs' third scenario gives each domain
(about 2,000 tokens each); every pattern reads the same text, through a subagent's or a
step's prompt or a loaded skill, so their token counts differ only by how they use it.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

MILK = "milk"
LANGUAGES = {"python": "Python", "javascript": "JavaScript", "rust": "Rust"}
DOMAINS = (MILK, *LANGUAGES)

MILK_NOTES = (
    "Milk errands: order with buy_milk (one litre of semi-skimmed milk, delivered to the "
    "office kitchen the same day). Order once per request and say that it is done."
)

DESCRIPTIONS = {
    MILK: "the office errand of buying milk",
    "python": "Python for web development: frameworks, performance, deployment, hiring",
    "javascript": "JavaScript and TypeScript for web development, front end and back end",
    "rust": "Rust for web development: Axum, Actix, performance, learning curve",
}


@cache
def _text(name: str) -> str:
    return (resources.files(__package__) / "docs" / f"{name}.md").read_text(encoding="utf-8")


def assistant_prompt() -> str:
    """The house rules every pattern's front model reads (about 1,000 tokens with its tools)."""
    return _text("assistant")


def notes(domain: str) -> str:
    """The domain's notes: a language's documentation, or the milk errand's rules."""
    return MILK_NOTES if domain == MILK else _text(domain)


def domains_in(text: str) -> list[str]:
    """The domains a request names, in the order it names them."""
    found = {d: m.start() for d in DOMAINS if (m := re.search(rf"\b{d}\b", text, re.I))}
    return sorted(found, key=found.__getitem__)


def summary(text: str) -> str:
    """The "In short" section of a language's notes, found in whatever text holds them."""
    _, _, rest = text.partition("## In short\n\n")
    return " ".join(rest.split("\n## ", 1)[0].split())


def verdict(language: str, text: str) -> str:
    """The sentence of ``text`` that says when to choose ``language`` ("" if none)."""
    name = LANGUAGES[language]
    match = re.search(rf"Choose {name} [^.]*\.", " ".join(text.split()))
    return match.group(0) if match else ""


def gist(language: str, text: str) -> str:
    """What a researcher notes about ``language`` from the notes in ``text``: the first
    sentence of their "In short" section and the sentence that says when to choose it."""
    title = f"# {LANGUAGES[language]} for web development"
    if title not in text:
        return ""
    short = summary(text.split(title, 1)[1])
    return f"{short.split('. ', 1)[0]}. {verdict(language, short)}"
