"""Judge prompts: where they come from and how their placeholders are filled.

A prompt is inline text, a file relative to the spec, a bundled prompt by name
(``routing_quality``), or an openevals prompt constant (``openevals:CORRECTNESS``).

Two template styles:
- openevals' ``str.format`` placeholders: ``{inputs}``, ``{inputs[question]}``,
  ``{outputs[final_response]}``, ``{reference_outputs[expected_agents]}``, ``{trace}``. openevals
  itself JSON-dumps each whole dict before formatting, which breaks ``{inputs[question]}``, so
  the formatting is done here: a string field is inserted as is, anything else as JSON.
- Jinja2 (files ending in .j2/.jinja/.jinja2, or ``template: jinja2``): ``{{ inputs.question }}``,
  sandboxed, and an unknown variable is an error rather than an empty string.
"""

from __future__ import annotations

import json
import string
from importlib import resources
from pathlib import Path
from typing import Any

ROOTS = ("inputs", "outputs", "reference_outputs", "trace")
JINJA_SUFFIXES = (".j2", ".jinja", ".jinja2")


def bundled_prompts() -> list[str]:
    folder = resources.files("agenteval_cli") / "prompts"
    return sorted(p.name.rsplit(".", 1)[0] for p in folder.iterdir() if p.name.endswith(".txt"))


def load_prompt(value: str, base_dir: Path | None) -> tuple[str, str]:
    """``(text, origin)``; origin is the file name (its suffix picks the template style)."""
    if "{" in value or "\n" in value:
        return value, "inline"
    if value.startswith("openevals:"):
        import openevals.prompts as constants

        text = getattr(constants, value.split(":", 1)[1], None)
        if not isinstance(text, str):
            raise ValueError(f"openevals has no prompt {value.split(':', 1)[1]!r}")
        return text, value
    path = Path(value).expanduser()
    if not path.is_absolute() and base_dir is not None:
        path = Path(base_dir) / path
    if path.is_file():
        return path.read_text(encoding="utf-8"), str(path)
    stem = value.removesuffix(".txt")
    resource = resources.files("agenteval_cli") / "prompts" / f"{stem}.txt"
    if resource.is_file():
        return resource.read_text(encoding="utf-8"), f"{stem}.txt"
    raise ValueError(
        f"prompt file {value!r} not found (relative to the spec); bundled prompts: "
        f"{', '.join(bundled_prompts())}"
    )


class PromptError(Exception):
    """A placeholder the example cannot fill (a missing field, an undefined variable)."""


class _Field:
    """A value whose ``[key]`` is a child field and whose text is the value (JSON if not str)."""

    def __init__(self, value: Any, path: str) -> None:
        self.value, self.path = value, path

    def __getitem__(self, key: str) -> _Field:
        value = self.value
        if isinstance(value, dict) and key in value:
            return _Field(value[key], f"{self.path}[{key}]")
        if isinstance(value, list) and key.isdigit() and int(key) < len(value):
            return _Field(value[int(key)], f"{self.path}[{key}]")
        raise KeyError(f"prompt placeholder {{{self.path}[{key}]}}: {self.path} has no {key!r}")

    def __format__(self, spec: str) -> str:
        if isinstance(self.value, str):
            return format(self.value, spec)
        return json.dumps(self.value, ensure_ascii=False, default=_jsonable)


def _jsonable(value: Any) -> Any:
    from agenteval_cli.store.results import json_default

    if hasattr(value, "model_dump") and hasattr(value, "type") and hasattr(value, "content"):
        from langchain_core.messages import convert_to_openai_messages

        return convert_to_openai_messages(value)
    return json_default(value)


class Template:
    """A judge prompt, checked when the spec loads and rendered per example."""

    def __init__(self, text: str, *, style: str) -> None:
        self.text, self.style = text, style
        if style == "jinja2":
            from jinja2 import StrictUndefined
            from jinja2.sandbox import SandboxedEnvironment

            env = SandboxedEnvironment(undefined=StrictUndefined, keep_trailing_newline=True)
            self._jinja = env.from_string(text)
        elif style == "fstring":
            for _, field, _, _ in string.Formatter().parse(text):
                if field is None:
                    continue
                root = field.split("[", 1)[0].split(".", 1)[0]
                if root not in ROOTS:
                    raise ValueError(
                        f"unknown prompt placeholder {{{field}}}; use {', '.join(ROOTS)} "
                        "(write {{ and }} for literal braces)"
                    )
        else:
            raise ValueError(f"template must be fstring or jinja2, got {style!r}")

    def fill(self, values: dict[str, Any]) -> str:
        """``render``, with a missing field reported as a PromptError naming it."""
        from jinja2 import TemplateError

        try:
            return self.render(values)
        except KeyError as exc:
            raise PromptError(exc.args[0] if exc.args else str(exc)) from None
        except (TemplateError, IndexError, AttributeError) as exc:
            raise PromptError(f"{type(exc).__name__}: {exc}") from None

    def render(self, values: dict[str, Any]) -> str:
        if self.style == "jinja2":
            return self._jinja.render(**values)
        return self.text.format(**{k: _Field(v, k) for k, v in values.items()})


def template_style(option: str, origin: str) -> str:
    if option != "auto":
        return option
    return "jinja2" if origin.endswith(JINJA_SUFFIXES) else "fstring"
