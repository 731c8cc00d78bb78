"""The building blocks of spec models: the base model that checks keys first, field types
whose errors read "expected an integer >= 1, got 'four'", and import-path syntax."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from agenteval_cli.core import imports
from agenteval_cli.core.errors import did_you_mean
from agenteval_cli.core.yamlsource import WHOLE_REFERENCE, describe
from agenteval_cli.spec.errors import SpecValueError

_ASCII_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", re.ASCII)


# A value written as one ``${VAR}`` or ``${VAR:-default}`` reference (expanded at load).
EnvReference = Annotated[str, Field(pattern=WHOLE_REFERENCE)]


def _number_check(
    kind: type,
    bound: float,
    *,
    strict: bool,
    maximum: float | None = None,
    hint: str | None = None,
) -> BeforeValidator:
    """Accept ints/floats, or numeric strings (which ``${VAR}`` expansion produces).

    Only finite numbers written with ASCII digits pass: NaN and infinity (``.nan``, ``.inf``,
    ``"1e999"``) and digits of other scripts (``"١٢"``, which ``int()`` would read as 12)
    are refused, as is anything above ``maximum``; ``hint`` says what the bounds mean."""
    noun = "an integer" if kind is int else "a number"
    if maximum is None:
        expected = f"expected {noun} {'>' if strict else '>='} {bound:g}"
    else:
        expected = f"expected {noun} from {bound:g} to {maximum:g}"
    after = f" ({hint})" if hint else ""

    def check(value: Any) -> Any:
        number = value
        if isinstance(value, str):
            text = value.strip()
            number = None
            if _ASCII_NUMBER.fullmatch(text):
                try:
                    number = kind(text)
                except ValueError:  # "1.5" for an integer
                    number = None
        if isinstance(number, float) and not math.isfinite(number):
            number = None
        if isinstance(number, float) and kind is int and number.is_integer():
            number = int(number)
        if (
            isinstance(number, bool)
            or not isinstance(number, (int, float) if kind is float else int)
            or (number <= bound if strict else number < bound)
            or (maximum is not None and number > maximum)
        ):
            raise SpecValueError(f"{expected}, got {describe(value)}{after}")
        try:
            return kind(number)
        except OverflowError:  # an integer too large for a float
            raise SpecValueError(f"{expected}, got {describe(value)}{after}") from None

    # What an editor checks (the JSON Schema): the number with its bounds, or a whole
    # ``${VAR}`` reference, whose value is checked here once expanded.
    bounds: dict[str, float] = {"gt" if strict else "ge": bound}
    if maximum is not None:
        bounds["le"] = maximum
    number = Annotated[kind, Field(**bounds)]  # type: ignore[valid-type, call-overload]
    return BeforeValidator(check, json_schema_input_type=number | EnvReference)


PositiveInt = Annotated[int, _number_check(int, 1, strict=False)]
NonNegativeInt = Annotated[int, _number_check(int, 0, strict=False)]
PositiveFloat = Annotated[float, _number_check(float, 0, strict=True)]
NonNegativeFloat = Annotated[float, _number_check(float, 0, strict=False)]
NonEmptyStr = Annotated[str, Field(min_length=1)]

# Upper bounds on the sizes of a run: a worker per concurrent call and a pass over the
# dataset per repetition are allocated up front, so absurd values are refused at load.
MAX_CONCURRENCY = 1024
MAX_REPETITIONS = 1000
Concurrency = Annotated[int, _number_check(int, 1, strict=False, maximum=MAX_CONCURRENCY)]
Repetitions = Annotated[int, _number_check(int, 1, strict=False, maximum=MAX_REPETITIONS)]
Fraction = Annotated[float, _number_check(float, 0, strict=False, maximum=1)]
# A price per 1M tokens no provider charges: the dearest rate genai-prices lists is $600
# (o1-pro's output), so a rate above this is a typo (per token, per 1K) or a test value,
# and its costs could overflow the floats scores are.
MAX_PRICE_PER_MTOK = 10_000
PricePerMTok = Annotated[
    float,
    _number_check(
        float,
        0,
        strict=False,
        maximum=MAX_PRICE_PER_MTOK,
        hint="USD per 1M tokens; no provider charges above 10000",
    ),
]


def split_import_path(text: str) -> tuple[str, str]:
    """:func:`agenteval_cli.core.imports.split_import_path`, failing as a spec value does."""
    try:
        return imports.split_import_path(text)
    except imports.ImportPathError as exc:
        raise SpecValueError(str(exc), hint=exc.hint) from None


@contextmanager
def without_pydantic_plugins() -> Iterator[None]:
    """Build our own models' validators without pydantic plugins (observability hooks for
    the user's models): finding them reads every installed package's metadata, at each
    start. Plugins stay on for every model built outside this block."""
    previous = os.environ.get("PYDANTIC_DISABLE_PLUGINS")
    os.environ["PYDANTIC_DISABLE_PLUGINS"] = "1"
    try:
        yield
    finally:
        if previous is None:
            del os.environ["PYDANTIC_DISABLE_PLUGINS"]
        else:
            os.environ["PYDANTIC_DISABLE_PLUGINS"] = previous


class SpecModel(BaseModel):
    """Base of every spec section: checks keys first, so errors can name the key and a fix.

    Validators are built on first use (:func:`without_pydantic_plugins` around it)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    internal_keys: ClassVar[frozenset[str]] = frozenset()  # filled in by the parent, not typed

    @classmethod
    def normalize(cls, data: Any) -> Any:
        """Turn a short form (e.g. a bare string) into the mapping form."""
        return data

    @model_validator(mode="before")
    @classmethod
    def _check_keys(cls, data: Any) -> Any:
        if isinstance(data, BaseModel):
            return data
        data = cls.normalize(data)
        if not isinstance(data, dict):
            raise SpecValueError(f"expected a mapping, got {describe(data)}")
        public = [name for name in cls.model_fields if name not in cls.internal_keys]
        for key in data:
            if key not in cls.model_fields:
                raise SpecValueError(
                    f"unknown key {key!r}",
                    hint=did_you_mean(str(key), public) or "valid keys: " + ", ".join(public),
                    at=(key,),
                    about_key=True,
                )
        for name, field in cls.model_fields.items():
            if field.is_required() and name not in data:
                raise SpecValueError(f"missing required key {name!r}", hint=field.description)
        return data
