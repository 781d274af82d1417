"""One walker for the JSON documents smoke writes and reads back: the smoke report (`--json`,
read by `cudalint report`) and the metadata of a saved reference (read before the target is
imported). A shape is declared once, as data; `check(shape, value)` walks the value to its leaves
(types, finite numbers, known words) and raises SchemaError, one line naming where
(`tolerance.per_output.logits.rtol`) and what was found.

Standard library only: the report reads smoke files without torch.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


class SchemaError(ValueError):
    """Where a document leaves its shape, and how; str() is one line."""


class Shape:
    """What a value must be. `describe` names it in an error message."""

    describe = "a value"

    def check(self, value: object, where: str) -> None:
        raise NotImplementedError


@dataclass(frozen=True)
class Leaf(Shape):
    """A JSON string, whole number, number or boolean (numbers finite, whole numbers no
    boolean); `nullable`: null too; `test`: a further condition, with what it asks."""

    kind: str  # "string", "integer", "number", "boolean"
    nullable: bool = False
    test: Callable[[Any], bool] | None = None
    asks: str = ""

    @property
    def describe(self) -> str:  # type: ignore[override]
        base = {"string": "a string", "integer": "a whole number", "number": "a finite number",
                "boolean": "true or false"}[self.kind]
        base = f"{base} {self.asks}".rstrip()
        return f"{base} or null" if self.nullable else base

    def check(self, value: object, where: str) -> None:
        if value is None and self.nullable:
            return
        if not _is(self.kind, value) or (self.test is not None and not self.test(value)):
            raise SchemaError(f"{where} is {_shown(value)}, not {self.describe}")


@dataclass(frozen=True)
class OneOf(Shape):
    """One of the given words."""

    words: tuple[str, ...]

    @property
    def describe(self) -> str:  # type: ignore[override]
        return "one of " + ", ".join(repr(word) for word in self.words)

    def check(self, value: object, where: str) -> None:
        if not isinstance(value, str) or value not in self.words:
            raise SchemaError(f"{where} is {_shown(value)}, not {self.describe}")


@dataclass(frozen=True)
class ListOf(Shape):
    item: Shape
    limit: int | None = None
    nullable: bool = False
    describe = "a list"

    def check(self, value: object, where: str) -> None:
        if value is None and self.nullable:
            return
        if not isinstance(value, list):
            raise SchemaError(f"{where} is {_shown(value)}, not a list")
        _within(len(value), self.limit, where)
        for index, item in enumerate(value):
            self.item.check(item, f"{where}[{index}]")


@dataclass(frozen=True)
class MapOf(Shape):
    """An object whose keys are free (names, paths) and whose values share one shape."""

    value: Shape
    limit: int | None = None
    non_empty: bool = False
    key: Callable[[str], bool] | None = None
    key_asks: str = ""
    describe = "an object"

    def check(self, value: object, where: str) -> None:
        if not isinstance(value, dict):
            raise SchemaError(f"{where} is {_shown(value)}, not an object")
        if self.non_empty and not value:
            raise SchemaError(f"{where} is empty")
        _within(len(value), self.limit, where)
        for key, item in value.items():
            if self.key is not None and not self.key(key):
                raise SchemaError(f"{where} has the key {key!r}, not {self.key_asks}")
            self.value.check(item, _join(where, key) if _plain(key) else f"{where}[{key!r}]")


@dataclass(frozen=True)
class Record(Shape):
    """An object with named fields: `required` must be there, `optional` may be; any other
    key is kept unchecked (a section only people read, a field a later version adds)."""

    required: Mapping[str, Shape] = field(default_factory=dict)
    optional: Mapping[str, Shape] = field(default_factory=dict)
    nullable: bool = False
    describe = "an object"

    def check(self, value: object, where: str) -> None:
        if value is None and self.nullable:
            return
        if not isinstance(value, dict):
            raise SchemaError(f"{where} is {_shown(value)}, not an object")
        if not value and self.required:
            raise SchemaError(f"{where} is empty")
        for key, shape in self.required.items():
            if key not in value:
                raise SchemaError(f"{_join(where, key)} is missing")
            shape.check(value[key], _join(where, key))
        for key, shape in self.optional.items():
            if key in value:
                shape.check(value[key], _join(where, key))


@dataclass(frozen=True)
class Tagged(Shape):
    """An object whose `tag` field (one of `shapes`' keys) says which Record it must be."""

    tag: str
    shapes: Mapping[str, Record]
    describe = "an object"

    def check(self, value: object, where: str) -> None:
        Record({self.tag: OneOf(tuple(self.shapes))}).check(value, where)
        assert isinstance(value, dict)
        self.shapes[value[self.tag]].check(value, where)


@dataclass(frozen=True)
class AnyOf(Shape):
    """Any one of `shapes` (leaves: a JSON value of one of several types)."""

    shapes: tuple[Shape, ...]
    describe: str = "a value"  # type: ignore[assignment]

    def check(self, value: object, where: str) -> None:
        for shape in self.shapes:
            try:
                shape.check(value, where)
            except SchemaError:
                continue
            return
        raise SchemaError(f"{where} is {_shown(value)}, not {self.describe}")


class Null(Shape):
    """JSON's null, only."""

    describe = "null"

    def check(self, value: object, where: str) -> None:
        if value is not None:
            raise SchemaError(f"{where} is {_shown(value)}, not null")


class Anything(Shape):
    """Any JSON value, unchecked (a section only people read)."""

    def check(self, value: object, where: str) -> None:
        return


ANY = Anything()
NULL = Null()
STRING = Leaf("string")
OPTIONAL_STRING = Leaf("string", nullable=True)
BOOLEAN = Leaf("boolean")
OPTIONAL_BOOLEAN = Leaf("boolean", nullable=True)
COUNT = Leaf("integer", test=lambda value: value >= 0, asks="from 0 up")
NUMBER = Leaf("number")
# A tolerance: a finite number from 0 up, or null for the per-dtype default.
TOLERANCE_VALUE = Leaf("number", nullable=True, test=lambda value: value >= 0, asks="from 0 up")


def check(shape: Shape, value: object, where: str = "") -> None:
    """SchemaError (one line) where `value` leaves `shape`."""
    shape.check(value, where)


def _is(kind: str, value: object) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    if kind == "integer":
        return isinstance(value, int)
    return isinstance(value, (int, float)) and math.isfinite(value)


def _within(size: int, limit: int | None, where: str) -> None:
    if limit is not None and size > limit:
        raise SchemaError(f"{where} holds {size:,} entries, more than the {limit:,} a smoke run "
                          "writes")


def _join(where: str, key: str) -> str:
    name = key if _plain(key) else repr(key)
    return f"{where}.{name}" if where else name


def _plain(key: object) -> bool:
    return isinstance(key, str) and key.replace("_", "a").replace("-", "a").isalnum() \
        and key.isascii()


def _shown(value: object) -> str:
    """The value found, in a few words: its JSON type, and a short value where that helps."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            return repr(value).replace("inf", "Infinity").replace("nan", "NaN")
        if isinstance(value, int) and value.bit_length() > 64:
            return "a whole number of over 19 digits"
        return repr(value)
    if isinstance(value, str):
        return f"the string {value[:40]!r}" + ("..." if len(value) > 40 else "")
    if isinstance(value, list):
        return f"a list of {len(value):,}"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
