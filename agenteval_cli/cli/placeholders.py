"""Help text that shows what to type: ``PATH``, ``TEXT``, nothing for a flag.

Typer writes a parameter's Python type in help (``<bool>``, ``<list[str]>``, ``<path>``) and a
required argument in braces (``{SPEC}``): a flag then reads as if it took a value
(``--cache true``) and the usage line as if braces were syntax. Each command's parameters
are given the placeholders of click's convention once, when the command is looked up."""

from __future__ import annotations

from pathlib import Path
from typing import Any, get_args, get_origin

from typer._click import Context
from typer.core import TyperArgument, TyperGroup, TyperOption

PLACEHOLDERS: dict[Any, str] = {Path: "PATH", str: "TEXT", int: "INTEGER", float: "NUMBER"}


class PlainArgument(TyperArgument):
    """``SPEC`` when required, ``[EXPERIMENT]`` when not; no type beside the name."""

    def _usage_display_name(self) -> str:
        name = self.display_name_raw
        name = name if self.required else f"[{name}]"
        return name + ("..." if self.nargs != 1 else "")

    def display_type_rich(self, ctx: Context) -> str | None:
        return None


class PlainOption(TyperOption):
    """A flag shows no value; any other option its metavar or the placeholder of its type."""

    def display_type_rich(self, ctx: Context) -> str | None:
        if self.is_flag:
            return None
        if self.metavar is not None:
            return self.metavar
        return placeholder(self.type_descriptor.annotation)


def placeholder(annotation: Any) -> str:
    """``PATH`` for a Path, ``TEXT`` for a str (also for a list of them: the option repeats)."""
    if get_origin(annotation) is list:
        (annotation,) = get_args(annotation)
    return PLACEHOLDERS.get(annotation, "VALUE")


def plain_placeholders(command: Any, ctx: Context) -> None:
    """Give ``command``'s parameters (and its subcommands', for a group) plain help; the
    help option too, made here with the names ``ctx`` gives (``-h``, ``--help``)."""
    for param in [*command.params, command.get_help_option(ctx)]:
        if type(param) is TyperArgument:
            param.__class__ = PlainArgument
            # upper case, as click writes it; the brackets are the usage line's
            param.metavar = (param.metavar or (param.name or "").upper()).strip("[]")
        elif type(param) is TyperOption:
            param.__class__ = PlainOption
    if isinstance(command, TyperGroup):
        for sub in command.commands.values():
            plain_placeholders(sub, ctx)
