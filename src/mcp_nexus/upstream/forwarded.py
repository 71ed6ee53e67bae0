"""Attributes of a facade that live on one of its parts: `upstream.state` is `upstream.status.state`.

`Upstream` keeps its public attributes (callers read `upstream.tools`, tests set
`upstream.state`) while each value lives in the part that owns it (status.py,
offered_lists.py, connection.py). One line per attribute instead of a property pair each,
typed for mypy: `Forwarded` reads and writes, `ForwardedReadOnly` only reads.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any, Generic, NoReturn, Self, TypeVar, overload

ValueT = TypeVar("ValueT")


class ForwardedReadOnly(Generic[ValueT]):
    """`owner.<name>` reads `owner.<part>.<name>`."""

    def __init__(self, part: str) -> None:
        self.part = part
        self.name = ""
        self._read: attrgetter[Any] = attrgetter(part)

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name
        self._read = attrgetter(f"{self.part}.{name}")  # one C-level lookup of the dotted path

    @overload
    def __get__(self, instance: None, owner: type) -> Self: ...

    @overload
    def __get__(self, instance: object, owner: type) -> ValueT: ...

    def __get__(self, instance: object | None, owner: type) -> Self | ValueT:
        if instance is None:
            return self
        return self._read(instance)  # type: ignore[no-any-return]

    def __set__(self, instance: object, value: NoReturn) -> None:
        # Defined so that an assignment fails (as with a property that has no setter) instead of
        # hiding the part's value behind an instance attribute; `NoReturn` makes mypy refuse it.
        raise AttributeError(f"{type(instance).__name__}.{self.name} is read-only")


class Forwarded(ForwardedReadOnly[ValueT]):
    """`owner.<name>` reads and writes `owner.<part>.<name>`."""

    def __set__(self, instance: object, value: ValueT) -> None:
        setattr(getattr(instance, self.part), self.name, value)
