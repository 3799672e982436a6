"""Tables that store pydantic records: the columns follow the record's fields, with one conversion each way.

A field is stored in a column of its own name and of the type its annotation implies (see `stored_type`);
the table lists only the exceptions (a size, a key, another name) and the columns no record field has.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Generic, Literal, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, TypeAdapter
from sqlalchemy import JSON, Boolean, Column, DateTime, Float, Integer, MetaData, String, Table, Text
from sqlalchemy.engine import Dialect, RowMapping
from sqlalchemy.schema import SchemaItem
from sqlalchemy.types import TypeDecorator, TypeEngine

RecordT = TypeVar("RecordT", bound=BaseModel)

# A literal's values are short codes (a status, a mode); the column is sized for the longest allowed.
CODE_LENGTH = 16


class UTCDateTime(TypeDecorator[datetime]):
    """A timestamp stored in UTC and always read back timezone-aware (SQLite keeps no zone of its own)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None or value.tzinfo is None:
            return value
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is not None and value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value


# none_as_null: a Python None is stored as SQL NULL, so "no true observation" is not confused with JSON null.
JSON_VALUE = JSON(none_as_null=True)

_SCALARS: dict[Any, Callable[[], TypeEngine[Any]]] = {
    bool: Boolean, int: Integer, float: Float, str: Text, datetime: UTCDateTime,
}


def stored_type(annotation: Any) -> tuple[TypeEngine[Any], bool]:
    """The column type for a field's annotation, and whether the column admits NULL.

    bool, int, float, str and datetime get their SQL types, a literal of strings a short string, and
    everything else (mappings, lists, nested models, Any) a JSON column. `X | None` and Any admit NULL.
    """
    if annotation is Any:
        return JSON_VALUE, True
    if get_origin(annotation) in (Union, types.UnionType) and type(None) in get_args(annotation):
        rest = [arg for arg in get_args(annotation) if arg is not type(None)]
        return (_stored_type(rest[0]) if len(rest) == 1 else JSON_VALUE), True
    return _stored_type(annotation), False


def _plain_json(annotation: Any) -> bool:
    """Whether the annotation only admits values that are stored as they are (scalars, dicts, lists, Any)."""
    if annotation is Any or annotation in (bool, int, float, str, type(None)):
        return True
    if get_origin(annotation) is Literal:
        return True
    if get_origin(annotation) in (dict, list, Union, types.UnionType):
        return all(_plain_json(arg) for arg in get_args(annotation))
    return False


def _stored_type(annotation: Any) -> TypeEngine[Any]:
    if annotation in _SCALARS:
        return _SCALARS[annotation]()
    if get_origin(annotation) is Literal and all(isinstance(value, str) for value in get_args(annotation)):
        too_long = [value for value in get_args(annotation) if len(value) > CODE_LENGTH]
        if too_long:
            raise ValueError(f"literal values {too_long} are longer than {CODE_LENGTH} characters")
        return String(CODE_LENGTH)
    return JSON_VALUE


class RecordTable(Generic[RecordT]):
    """A table holding one pydantic record per row, and the conversions between the two.

    `columns` maps a field to the column that stores it when the rule does not fit (a length, a key, a
    NOT NULL the store guarantees, another name). `flatten` names nested-model fields whose own fields
    get a column each. `exclude` names fields stored elsewhere. `extra` holds the columns, indexes and
    constraints no field corresponds to.
    """

    def __init__(self, name: str, metadata: MetaData, model: type[RecordT], *extra: SchemaItem,
                 columns: Mapping[str, Column[Any]] | None = None, flatten: Iterable[str] = (),
                 exclude: Iterable[str] = ()) -> None:
        self.model = model
        given = dict(columns or {})
        flattened, excluded = set(flatten), set(exclude)
        # (nested field or None, field, column name, JSON serializer or None), in the record's field order.
        self._layout: list[tuple[str | None, str, str, TypeAdapter[Any] | None]] = []
        built: list[Column[Any]] = []
        for parent, field, annotation in _fields(model, flattened, excluded):
            column = given.pop(field, None)
            if column is None:
                kind, nullable = stored_type(annotation)
                column = Column(field, kind, nullable=nullable)
            # Plain JSON values (mappings, lists, Any) go in as they are; models and the like are dumped first.
            dumped = isinstance(column.type, JSON) and not _plain_json(annotation)
            serializer = TypeAdapter(annotation) if dumped else None
            self._layout.append((parent, field, column.name, serializer))
            built.append(column)
        if given:
            raise ValueError(f"{name}: columns given for {sorted(given)}, which are not fields of {model.__name__}")
        self.table = Table(name, metadata, *built, *extra)

    @property
    def record_columns(self) -> list[str]:
        """The names of the columns that hold the record's fields."""
        return [column for _, _, column, _ in self._layout]

    def to_row(self, record: RecordT) -> dict[str, Any]:
        """The record's column values (JSON columns as JSON-ready values)."""
        row: dict[str, Any] = {}
        for parent, field, column, serializer in self._layout:
            value = getattr(record if parent is None else getattr(record, parent), field)
            row[column] = value if serializer is None else serializer.dump_python(value, mode="json")
        return row

    def from_row(self, row: RowMapping) -> RecordT:
        """The record a row holds; validated, so a stored value the record no longer accepts is reported."""
        data: dict[str, Any] = {}
        for parent, field, column, _ in self._layout:
            if parent is None:
                data[field] = row[column]
            else:
                data.setdefault(parent, {})[field] = row[column]
        return self.model.model_validate(data)


def _fields(model: type[BaseModel], flattened: set[str],
            excluded: set[str]) -> Iterable[tuple[str | None, str, Any]]:
    unknown = (flattened | excluded) - set(model.model_fields)
    if unknown:
        raise ValueError(f"{sorted(unknown)} are not fields of {model.__name__}")
    for name, info in model.model_fields.items():
        if name in excluded:
            continue
        if name not in flattened:
            yield None, name, info.annotation
            continue
        nested = info.annotation
        if not (isinstance(nested, type) and issubclass(nested, BaseModel)):
            raise ValueError(f"{model.__name__}.{name} is not a model, so it cannot be flattened")
        for inner, inner_info in nested.model_fields.items():
            yield name, inner, inner_info.annotation
