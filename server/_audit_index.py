"""The tracked state seen as records: every object with an id, where it sits, and which records a listed
object copies, so the audit can tell which observation values come from the state."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import jsonpointer

from ._audit_values import instant

if TYPE_CHECKING:
    from ._audit_identity import Entities

# Record ids as scenarios write them: P-2041, INC-2024-0042, PO-4500018842, A1, R2.
ID_PATTERN = re.compile(r"^[A-Z][A-Z0-9]*(?:[-_][A-Za-z0-9]+)*-?[0-9][A-Za-z0-9]*$")


def is_id_key(key: str) -> bool:
    return key == "id" or key.endswith("_id")


def is_name_key(key: str) -> bool:
    return key == "name" or key.endswith("_name")


def is_scalar(value: Any) -> bool:
    return not isinstance(value, dict | list)


def pointer(parent: str, key: str | int) -> str:
    return parent + "/" + jsonpointer.escape(str(key))


def own_id(record: dict[str, Any], *, numbers: bool = False) -> tuple[str, str] | None:
    """(key, id) naming the record itself: its `id`, else its first `*_id` (with `numbers`, or `*_number`)
    string."""
    if isinstance(record.get("id"), str):
        return "id", record["id"]
    for key, value in record.items():
        if isinstance(key, str) and isinstance(value, str) and (is_id_key(key) or numbers and key.endswith("_number")):
            return key, value
    return None


@dataclass
class Record:
    path: str
    container: str
    value: dict[str, Any]
    id_key: str | None  # None: the record is keyed by its id in a mapping


@dataclass
class StateIndex:
    """Every object of a state, by path and by its scalar fields; the collection records among them
    through `entities`."""

    records: list[Record] = field(default_factory=list)
    by_path: dict[str, Record] = field(default_factory=dict)
    entities: Entities | None = None
    _by_field: dict[tuple[str, Any], list[int]] | None = None

    @classmethod
    def of(cls, state: Any, entities: Entities | None = None) -> StateIndex:
        index = cls(entities=entities)
        if isinstance(state, dict | list):
            index._walk(state, "", None)
        return index

    def _walk(self, node: Any, path: str, mapping_key: str | None) -> None:
        # Only containers are visited: scalars are read where their record is added.
        if isinstance(node, dict):
            if path:
                self._add(node, path, mapping_key)
            for key, value in node.items():
                if isinstance(value, dict | list):
                    mapping_key = key if isinstance(key, str) and ID_PATTERN.match(key) else None
                    self._walk(value, pointer(path, key), mapping_key)
        else:
            for position, value in enumerate(node):
                if isinstance(value, dict | list):
                    self._walk(value, f"{path}/{position}", None)

    def _add(self, node: dict[str, Any], path: str, mapping_key: str | None) -> None:
        record = Record(path, path.rsplit("/", 1)[0], node, None)
        self.records.append(record)
        self.by_path[path] = record
        if mapping_key is None:
            named = own_id(node)
            record.id_key = named[0] if named is not None else None

    def resolved(self, item: dict[str, Any]) -> list[Record]:
        """The collection records an observed object is a view of (see Entities.resolve): one, or several
        it is equally a view of, or none."""
        found = self.entities.resolve(item) if self.entities is not None else []
        return [self.by_path[r.path] for r in found if r.path in self.by_path]

    def sources(self, item: dict[str, Any]) -> list[Record]:
        """The records an observed object reports: the collection record it names, or else those it copies
        two or more scalar fields of with no field differing."""
        named = self.resolved(item)
        if named:
            return named
        by_field = self._fields()
        pairs = [(k, _token(v)) for k, v in item.items() if is_scalar(v)]
        hits: dict[int, int] = {}
        for pair in pairs:
            for number in by_field.get(pair, ()):
                hits[number] = hits.get(number, 0) + 1
        found = []
        for number, count in hits.items():
            if count < 2:
                continue
            fields = self.records[number].value
            shared = sum(1 for k, _ in pairs if k in fields and is_scalar(fields[k]))
            if count == shared and 2 * count >= len(pairs):
                found.append(self.records[number])
        return found

    def copies(self, item: dict[str, Any]) -> list[Record]:
        """The state objects an observed object copies whole: every scalar field of it (two or more) held,
        equal, by the object. A row of a list the state holds, whatever collection its fields also name."""
        pairs = [(k, _token(v)) for k, v in item.items() if is_scalar(v)]
        if len(pairs) < 2:
            return []
        hits: dict[int, int] = {}
        for pair in pairs:
            for number in self._fields().get(pair, ()):
                hits[number] = hits.get(number, 0) + 1
        return [self.records[number] for number, count in hits.items() if count == len(pairs)]

    def _fields(self) -> dict[tuple[str, Any], list[int]]:
        """(field, value) -> the records holding it; built on first use, as only lists need it."""
        if self._by_field is None:
            self._by_field = {}
            for number, record in enumerate(self.records):
                for key, value in record.value.items():
                    if is_scalar(value):
                        self._by_field.setdefault((key, _token(value)), []).append(number)
        return self._by_field

    def members(self, container: str) -> list[Record]:
        return [r for r in self.records if r.container == container]


def _token(value: Any) -> tuple[str, Any]:
    """A hashable stand-in that keeps True apart from 1 but 2 equal to 2.0, as JSON does; numbers to nine
    significant digits, text up to whitespace and date-times as instants, as the audit compares values."""
    if isinstance(value, bool) or value is None:
        return ("const", value)
    if isinstance(value, int | float):
        return ("number", float(f"{value:.9g}"))
    if isinstance(value, str):
        moment = instant(value) if _DATE_TIME.match(value) else None
        return ("instant", moment) if moment is not None else ("text", " ".join(value.split()))
    return ("text", value)


_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}")


def walk_objects(node: Any, path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every object of a JSON document with its pointer, parents first."""
    if isinstance(node, dict):
        yield path, node
        for key, value in node.items():
            yield from walk_objects(value, pointer(path, key))
    elif isinstance(node, list):
        for position, value in enumerate(node):
            yield from walk_objects(value, pointer(path, position))


def walk_lists(node: Any, path: str = "") -> Iterator[tuple[str, list[Any]]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield from walk_lists(value, pointer(path, key))
    elif isinstance(node, list):
        yield path, node
        for position, value in enumerate(node):
            yield from walk_lists(value, pointer(path, position))


def walk_strings(node: Any, path: str = "", key: str | None = None) -> Iterator[tuple[str, str | None, str]]:
    """(pointer, the key it sits under, value) for every string of a document; list items keep the key."""
    if isinstance(node, dict):
        for child, value in node.items():
            yield from walk_strings(value, pointer(path, child), child if isinstance(child, str) else None)
    elif isinstance(node, list):
        for position, value in enumerate(node):
            yield from walk_strings(value, pointer(path, position), key)
    elif isinstance(node, str):
        yield path, key, node


def all_strings(node: Any, into: set[str]) -> set[str]:
    """Every string of a document, object keys included, in normalized form (see `normalized`)."""
    if isinstance(node, dict):
        for key, value in node.items():
            into.add(normalized(str(key)))
            all_strings(value, into)
    elif isinstance(node, list):
        for value in node:
            all_strings(value, into)
    elif isinstance(node, str):
        into.add(normalized(node))
    return into


_NOT_ALNUM = re.compile(r"[^0-9a-z]+")


def normalized(text: str) -> str:
    """Case, spacing and punctuation removed, so RP-22817 and rp22817 are the same reference."""
    return _NOT_ALNUM.sub("", text.lower())
