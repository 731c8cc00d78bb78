"""A prices file, for ``agenteval rescore --prices FILE``: the shape of the spec's
``pricing:`` section (a model's name, then its USD per 1M tokens by part), checked as that
section is, an error at its file and line."""

from __future__ import annotations

from pathlib import Path

from pydantic import TypeAdapter, ValidationError

from agenteval_cli.core.errors import UserError
from agenteval_cli.core.yamlsource import load_yaml
from agenteval_cli.spec.errors import user_error
from agenteval_cli.spec.model import Price

SHAPE = "model: {input: 3, output: 15} (USD per 1M tokens), as the spec's pricing: is"


def read_prices(path: Path) -> dict[str, Price]:
    """The file's prices by model."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise UserError(f"cannot read the prices file: {why}", file=path, hint=SHAPE) from None
    document = load_yaml(text, file=path)
    if not isinstance(document.data, dict) or not document.data:
        raise UserError("a prices file maps model names to their prices", file=path, hint=SHAPE)
    try:
        return TypeAdapter(dict[str, Price]).validate_python(document.data)
    except ValidationError as exc:
        raise user_error(exc, document, path) from None
