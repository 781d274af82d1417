"""Records without dataclasses: what a dataclass gives a record (equality, hash, `repr`,
`replace`), for the classes a run replayed from the cache builds. Importing dataclasses
(and inspect with it) costs such a run about 10 ms of its 60, and each dataclass compiles
its methods at import, about 1 ms each."""

from __future__ import annotations

TYPE_CHECKING = False  # typing's, without importing typing: a replayed run never does
if TYPE_CHECKING:
    from typing import Any, Self


class Record:
    """A record whose `FIELDS` are its attributes, in order, as a dataclass's fields:
    `__init__` (written out by each class, typed) takes them in that order, `repr` and
    `replace` read them all, equality and hashing those in `COMPARED` (all, unless a class
    leaves some out). A mutable record sets `__hash__ = None`, as a dataclass does."""

    __slots__ = ()
    FIELDS: tuple[str, ...] = ()
    COMPARED: tuple[str, ...] = ()  # () : FIELDS

    def values(self) -> tuple[Any, ...]:
        """The fields' values, in order."""
        return tuple(getattr(self, name) for name in self.FIELDS)

    def _compared(self) -> tuple[Any, ...]:
        if not self.COMPARED:
            return self.values()
        return tuple(getattr(self, name) for name in self.COMPARED)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._compared() == other._compared()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._compared())

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.FIELDS)
        return f"{self.__class__.__qualname__}({fields})"

    def replace(self, **changes: Any) -> Self:
        """A copy with `changes` (as dataclasses.replace: an unknown field is a TypeError)."""
        values = {name: getattr(self, name) for name in self.FIELDS}
        unknown = changes.keys() - values.keys()
        if unknown:
            raise TypeError(f"{self.__class__.__name__} has no field {sorted(unknown)[0]!r}")
        values.update(changes)
        return self.__class__(**values)
