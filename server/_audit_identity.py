"""Observed objects resolved to the state's records through the scenario's collections (its declarations, or
those the initial state shows for certain): by collection and identity, whatever the key is named and in
whatever order the object lists its fields, so a copy of an id in a log or a sub-record never hides a record."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from occusim.environments import Collection, CollectionRecord, Scenario, collection_records, infer_collections


def scenario_collections(scenario: Scenario) -> list[Collection]:
    """The scenario's declared collections; when it declares none, the ones its initial state shows."""
    if scenario.collections:
        return scenario.collections
    cached = _INFERRED.get(id(scenario))
    if cached is not None and cached[0] is scenario:
        return cached[1]
    inferred = infer_collections(scenario.initial_state)
    _INFERRED[id(scenario)] = (scenario, inferred)
    return inferred


# Keyed by id() with the scenario kept alive beside it, so an id is never reused while cached.
_INFERRED: dict[int, tuple[Scenario, list[Collection]]] = {}


@dataclass
class Entities:
    """The records of a state's collections, by identity and by path."""

    collections: list[Collection]
    by_identity: dict[str, list[CollectionRecord]] = field(default_factory=dict)
    by_path: dict[str, CollectionRecord] = field(default_factory=dict)

    @classmethod
    def of(cls, collections: list[Collection], state: Any) -> Entities:
        entities = cls(collections)
        for collection in collections:
            for record in collection_records(collection, state):
                entities.by_identity.setdefault(record.identity, []).append(record)
                entities.by_path[record.path] = record
        return entities

    @property
    def identity_fields(self) -> frozenset[str]:
        """The field names that hold identities: every declared key and reference."""
        names = {c.key for c in self.collections if c.key is not None}
        for collection in self.collections:
            names.update(collection.references)
        return frozenset(names)

    def named(self, value: Any) -> list[CollectionRecord]:
        """The records whose identity is `value` (one per collection that holds it)."""
        if isinstance(value, bool) or not isinstance(value, str | int):
            return []
        return self.by_identity.get(str(value), [])

    def resolve(self, item: dict[str, Any]) -> list[CollectionRecord]:
        """The record an observed object is a view of: one its fields name whose other fields it mostly
        shares; among several, the ones sharing most, then those named under their own key field. Ties are
        all returned, in state order, whatever the order of the object's fields."""
        owned: list[CollectionRecord] = []
        best = 0
        others: list[CollectionRecord] = []
        scalar_keys = [k for k, v in item.items() if not isinstance(v, dict | list)]
        for key, value in item.items():
            for record in self.named(value):
                own_key = record.collection.key
                if own_key is not None and own_key != key and own_key in item and str(item[own_key]) != record.identity:
                    continue  # the object names itself otherwise: this field refers to the record
                shared = sum(1 for k in scalar_keys if k != key and k in record.value)
                if shared == 0 and len(scalar_keys) > 1 or 2 * shared < len(scalar_keys) - 1:
                    continue
                if owns(key, record):
                    owned.append(record)
                elif shared > best:
                    best, others = shared, [record]
                elif shared == best and shared >= 2:
                    others.append(record)
        chosen = owned or others
        return sorted({r.path: r for r in chosen}.values(), key=lambda r: r.path)

    def containing(self, path: str) -> CollectionRecord | None:
        """The record at or above a state pointer (the innermost one, when collections nest)."""
        while path:
            record = self.by_path.get(path)
            if record is not None:
                return record
            path = path.rsplit("/", 1)[0]
        return None

    def mentioned(self, values: Iterable[Any]) -> list[CollectionRecord]:
        """The records some of the values name."""
        return [record for value in values for record in self.named(value)]


def owns(key: str, record: CollectionRecord) -> bool:
    """Whether a field of this name holds the record's own identity (its declared key, `id`, or for a
    mapping keyed by identity a name like `bed_id` for /beds) rather than a reference to it."""
    own_key = record.collection.key
    return key == own_key or key == "id" or own_key is None and _names_collection(key, record.collection.path)


def _names_collection(key: str, path: str) -> bool:
    """Whether a field name reads as the id of a collection's records: `bed_id` of /beds, `patient` of
    /patients, `id`."""
    stem = key.lower()
    for ending in ("_id", "_number", "_no", "_code", "id"):
        if stem.endswith(ending) and len(stem) > len(ending):
            stem = stem.removesuffix(ending).rstrip("_")
            break
    name = path.rsplit("/", 1)[-1].lower()
    return stem == "id" or name.startswith(stem) or stem.startswith(name.rstrip("s"))
