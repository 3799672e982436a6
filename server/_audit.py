"""The per-step audit: cheap checks, without any model call, of a simulated answer against the state, the
call, the earlier observations and the tool's declarations (docs/metrics.md defines each flag)."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import jsonpointer

from occusim.environments import (
    FlagKind,
    Scenario,
    SimulationMode,
    StepFlag,
    Tool,
    evaluate_formula,
    reports_error,
)

from ._audit_identity import Entities, owns, scenario_collections
from ._audit_index import (
    ID_PATTERN,
    Record,
    StateIndex,
    all_strings,
    is_id_key,
    is_name_key,
    is_scalar,
    normalized,
    own_id,
    walk_lists,
    walk_objects,
    walk_strings,
)
from ._audit_schema import declared_names, undeclared_fields
from ._audit_values import instant, same_value
from ._audit_writes import added_record_flags, added_values, error_flags, write_flags
from ._audit_writes import argument_values as call_scalars

_CREATING_OPS = ("add", "copy", "move")


def audit_step(scenario: Scenario, tool: Tool, arguments: dict[str, Any], *, state_before: dict[str, Any],
               observation: Any, patch: Sequence[dict[str, Any]], state_after: dict[str, Any],
               earlier_observations: Sequence[Any] = (), mode: SimulationMode = "tracked") -> list[StepFlag]:
    """Every flag one simulated step earns; an empty list for a faithful one.

    In `history` (and `occubench`) mode no state is tracked: only the checks that need none run (fields
    the output schema does not declare, and ids or names a read-only tool reports that appear neither in
    the initial state, the call, the rules nor an earlier observation).
    """
    tracked = mode == "tracked"
    flags: list[StepFlag] = []
    if tracked:
        flags.extend(patch_flags(tool, patch))
    if not isinstance(observation, dict):
        return flags
    collections = scenario_collections(scenario)
    before = Entities.of(collections, state_before) if tracked else None
    if reports_error(observation):
        if tracked and patch:
            flags.append(StepFlag(kind=FlagKind.patch_contradiction, path=str(patch[0].get("path")),
                                  detail="the observation reports an error, yet the patch changes the state"))
        if before is not None:
            flags.extend(error_flags(observation, arguments, before))
        return flags
    if before is not None:
        flags.extend(write_flags(tool, arguments, observation, patch, before))
    entities = Entities.of(collections, state_after) if tracked else None
    if tracked or tool.read_only:
        identities = (entities or Entities.of(collections, scenario.initial_state)).identity_fields
        flags.extend(_grounding(scenario, arguments, state_before, observation, patch,
                                state_after if tracked else None, earlier_observations, identities))
    after = StateIndex.of(state_after, entities) if tracked else None
    flags.extend(_invented_fields(tool, observation, after))
    if after is not None:
        flags.extend(_state_agreement(observation, after, patch))
        flags.extend(_patched_record_flags(observation, after, patch))
        flags.extend(added_record_flags(observation, patch))
        flags.extend(_omissions(observation, after, arguments, tool))
    return _distinct(flags)


def _distinct(flags: list[StepFlag]) -> list[StepFlag]:
    """One flag per kind and place: two checks may see the same wrong value."""
    seen: set[tuple[str, str | None]] = set()
    kept = []
    for flag in flags:
        if (flag.kind, flag.path) not in seen:
            seen.add((flag.kind, flag.path))
            kept.append(flag)
    return kept


def patch_flags(tool: Tool, patch: Sequence[dict[str, Any]]) -> list[StepFlag]:
    """What a tool's declarations forbid in its patch: any change by a read-only tool, and changes outside
    the paths it may write. The world model's validation enforces these."""
    if not patch:
        return []
    if tool.read_only:
        paths = ", ".join(sorted({str(op.get("path")) for op in patch}))
        return [StepFlag(kind=FlagKind.read_only_change, path=str(patch[0].get("path")),
                         detail=f"{tool.name} is read-only, yet its patch changes {paths}")]
    if tool.writes is None:
        return []
    flags = []
    for op in patch:
        for key in ("path", "from") if op.get("op") == "move" else ("path",):
            target = op.get(key)
            if isinstance(target, str) and not tool.may_write(target):
                flags.append(StepFlag(
                    kind=FlagKind.out_of_bounds_write, path=target,
                    detail=f"{tool.name} may change only {', '.join(tool.writes)}, yet its patch changes {target}"))
    return flags


def _within(path: str, allowed: str) -> bool:
    allowed = allowed.rstrip("/")
    return allowed == "" or path == allowed or path.startswith(allowed + "/")


def _touches(patch: Sequence[dict[str, Any]], path: str) -> bool:
    return any(isinstance(op.get("path"), str) and (_within(path, op["path"]) or _within(op["path"], path))
               for op in patch)


def _grounding(scenario: Scenario, arguments: dict[str, Any], state_before: dict[str, Any], observation: Any,
               patch: Sequence[dict[str, Any]], state_after: dict[str, Any] | None,
               earlier: Sequence[Any], identities: frozenset[str]) -> list[StepFlag]:
    """Ids and names the observation reports that nothing the simulator was given contains: values under
    name fields, identity or reference fields (whatever they are called), and values shaped like ids."""
    given = _Texts([state_before, arguments, *earlier])
    created = _Texts([state_after])
    flags = []
    for path, key, value in walk_strings(observation):
        named = key is not None and is_name_key(key)
        identifying = ID_PATTERN.match(value) is not None or key is not None and (
            is_id_key(key.removesuffix("s")) or key in identities)
        if not (named or identifying) or not value.strip():
            continue
        if given.holds(value) or value in scenario.rules:
            continue
        if state_after is not None:
            if created.holds(value):
                continue
            if identifying and _creates_identified_records(patch):
                flags.append(StepFlag(kind=FlagKind.created_id_mismatch, path=path,
                                      detail=f"{value!r} is reported as created, but the patch creates no such "
                                      "record"))
                continue
        what = "name" if named and not identifying else "id"
        flags.append(StepFlag(kind=FlagKind.fabricated_entity, path=path,
                              detail=f"the {what} {value!r} appears nowhere in the state, the call or earlier "
                              "observations"))
    return flags


def _creates_identified_records(patch: Sequence[dict[str, Any]]) -> bool:
    """Whether the patch adds a record with an id of its own (an id field, or filed under an id), the kind of
    record whose id a created-record observation reports. An unnumbered log entry has none to match."""
    for op in patch:
        if op.get("op") not in _CREATING_OPS:
            continue
        last = str(op.get("path", "")).rsplit("/", 1)[-1]
        value = op.get("value")
        if ID_PATTERN.match(last) or (isinstance(value, dict) and own_id(value) is not None):
            return True
    return False


class _Texts:
    """The strings (values and keys) of some documents: exact matches through their JSON text, then
    matches up to case and punctuation (RP-22817 for rp22817), built only when an exact one fails."""

    def __init__(self, documents: Sequence[Any]) -> None:
        self.documents = documents
        self._text: str | None = None
        self._normalized: set[str] | None = None

    def holds(self, value: str) -> bool:
        if self._text is None:
            self._text = "\n".join(json.dumps(d, ensure_ascii=False) for d in self.documents if d is not None)
        if json.dumps(value, ensure_ascii=False) in self._text:
            return True
        if self._normalized is None:
            self._normalized = set()
            for document in self.documents:
                all_strings(document, self._normalized)
        return normalized(value) in self._normalized


def _invented_fields(tool: Tool, observation: dict[str, Any], after: StateIndex | None) -> list[StepFlag]:
    flags = []
    for path, key in undeclared_fields(tool.output_schema, observation):
        if after is not None and _state_has_field(after, observation, path, key):
            continue
        flags.append(StepFlag(kind=FlagKind.invented_field, path=f"{path}/{key}",
                              detail=f"{key!r} is neither declared by {tool.name}'s output schema nor a field "
                              "of the record in the state"))
    if after is None:
        return flags
    flagged = {flag.path for flag in flags}
    vocabulary = declared_names(tool.output_schema)
    for path, item in walk_objects(observation):
        if not path:
            continue
        records = [record for record in after.sources(item) if _copies(item, record)]
        if not records:
            continue
        for key in item:
            where = f"{path}/{key}"
            if key in vocabulary or where in flagged or any(key in record.value for record in records) or \
                    any(item[key] == _mapping_key(record) for record in records):
                continue
            flags.append(StepFlag(kind=FlagKind.invented_field, path=where,
                                  detail=f"{key!r} is not a field of {records[0].path}, which this object reports, "
                                  f"nor one {tool.name}'s output schema names"))
    return flags


def _copies(item: dict[str, Any], record: Record) -> bool:
    """Whether an observed object is a copy of the record rather than a view renaming its fields: most of
    its fields (one may be the invented one) are the record's."""
    own = sum(1 for key in item if key in record.value or item[key] == _mapping_key(record))
    return 2 * own >= len(item) - 1


def _mapping_key(record: Record) -> str | None:
    """The key a record is filed under in its mapping (its id there), which a view may report as a field."""
    last = record.path.rsplit("/", 1)[-1]
    return None if last.isdigit() else jsonpointer.unescape(last)


def _state_has_field(after: StateIndex, observation: dict[str, Any], path: str, key: str) -> bool:
    node = jsonpointer.resolve_pointer(observation, path)
    return isinstance(node, dict) and any(key in record.value for record in after.sources(node))


def _state_agreement(observation: dict[str, Any], after: StateIndex,
                     patch: Sequence[dict[str, Any]]) -> list[StepFlag]:
    """Fields of a reported record that differ from that record in the state (after the patch), and derived
    fields its collection declares that disagree with their formula."""
    flags = []
    for path, item in walk_objects(observation):
        records = after.resolved(item)
        if not records:
            continue
        named = _named_paths(item, after)
        for key, value in item.items():
            having = [r for r in records if key in r.value and is_scalar(r.value[key])]
            if not is_scalar(value) or not having or any(same_value(value, r.value[key]) for r in having) or \
                    any(same_value(value, w) for path in named for w in _patched_values(patch, path).get(key, ())):
                continue
            record = having[0]
            held = record.value[key]
            where = f"{record.path}/{key}"
            if _touches(patch, where):
                flags.append(StepFlag(kind=FlagKind.patch_contradiction, path=f"{path}/{key}",
                                      detail=f"the observation says {key}={value!r}, the patch sets {where} to "
                                      f"{held!r}"))
            else:
                flags.append(StepFlag(kind=FlagKind.value_mismatch, path=f"{path}/{key}",
                                      detail=f"the observation says {key}={value!r}, the state holds "
                                      f"{held!r} at {where}"))
        for record in records[:1]:
            flags.extend(_derived_flags(path, item, record, after))
    return flags


def _patched_record_flags(observation: dict[str, Any], after: StateIndex,
                          patch: Sequence[dict[str, Any]]) -> list[StepFlag]:
    """Fields of an observed object that names a record under its own key, where the patch writes a field
    of that name within the record, yet reports neither what the patch writes nor what the record holds."""
    if after.entities is None or not patch:
        return []
    flags = []
    for path, item in walk_objects(observation):
        owned = [(key, record) for key, value in item.items() for record in after.entities.named(value)
                 if owns(key, record)]
        if not owned:
            continue
        created = added_values(item, patch)
        keys = {key for key, _ in owned}
        written: dict[str, list[Any]] = {}
        for _, record in owned:
            for name, values in _patched_values(patch, record.path).items():
                written.setdefault(name, []).extend(values)
        for field, observed in item.items():
            if field in keys or not is_scalar(observed) or field not in written or \
                    any(same_value(observed, w) for w in [*written[field], *created.get(field, ())]) or \
                    any(same_value(observed, record.value.get(field)) for _, record in owned):
                continue
            flags.append(StepFlag(kind=FlagKind.patch_contradiction, path=f"{path}/{field}",
                                  detail=f"the observation says {field}={observed!r}, the patch writes "
                                  f"{written[field][0]!r} under {field} in {owned[0][1].path}"))
    return flags


def _named_paths(item: dict[str, Any], after: StateIndex) -> set[str]:
    """The records an observed object names in any of its fields: a view joining a call to its incident
    may report what the patch wrote to either."""
    if after.entities is None:
        return set()
    return {r.path for value in item.values() for r in after.entities.named(value)}


def _derived_flags(path: str, item: dict[str, Any], record: Record, after: StateIndex) -> list[StepFlag]:
    found = after.entities.by_path.get(record.path) if after.entities is not None else None
    if found is None:
        return []
    flags = []
    for derived in found.collection.derived:
        value = item.get(derived.field)
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        inputs = {**record.value, **{k: v for k, v in item.items() if is_scalar(v)}}
        expected = evaluate_formula(derived.formula, inputs)
        if expected is not None and abs(value - expected) > derived.tolerance:
            flags.append(StepFlag(kind=FlagKind.value_mismatch, path=f"{path}/{derived.field}",
                                  detail=f"the observation says {derived.field}={value!r}, but {derived.formula} "
                                  f"gives {expected:g}"))
    return flags


def _patched_values(patch: Sequence[dict[str, Any]], below: str) -> dict[str, list[Any]]:
    """Field name -> the scalar values the patch writes at or below a record: an observation describing a
    record the call changes (a submission added below a case) may report these, not the parent's fields."""
    written: dict[str, list[Any]] = {}
    for op in patch:
        value, path = op.get("value"), op.get("path")
        if not isinstance(path, str) or not _within(path, below):
            continue
        if is_scalar(value):
            written.setdefault(path.rsplit("/", 1)[-1], []).append(value)
        for _, item in walk_objects(value):
            for key, field in item.items():
                if is_scalar(field):
                    written.setdefault(key, []).append(field)
    return written


def _omissions(observation: dict[str, Any], after: StateIndex, arguments: dict[str, Any],
               tool: Tool) -> list[StepFlag]:
    flags = []
    bounds = _date_bounds(arguments, tool)
    for path, item in walk_objects(observation):
        for record in after.resolved(item)[:1]:
            for key, value in item.items():
                held = record.value.get(key)
                if isinstance(held, list) and bounds is not None:
                    held = [h for h in held if _dated_within(h, bounds)]
                if isinstance(value, list) and isinstance(held, list) and len(value) < len(held):
                    flags.append(StepFlag(kind=FlagKind.omission, path=f"{path}/{key}",
                                          detail=f"{len(value)} of the {len(held)} items of {record.path}/{key} "
                                          "are listed"))
    for path, listed in walk_lists(observation):
        missing = _unlisted(listed, after, arguments, _date_bounds(arguments, tool), tool.description)
        if missing:
            names = ", ".join(_label(r) for r in missing[:5])
            flags.append(StepFlag(kind=FlagKind.omission, path=path,
                                  detail=f"{len(missing)} record(s) of {missing[0].container} that match the "
                                  f"listed ones are left out: {names}"))
    return flags


def _label(record: Record) -> str:
    named = own_id(record.value)
    return named[1] if named else record.path


def _unlisted(listed: list[Any], after: StateIndex, arguments: dict[str, Any],
              bounds: tuple[str | None, str | None] | None, described: str) -> list[Record]:
    """The records a list drawn from one state collection leaves out although no attribute, pair of
    attributes, range or argument tells them apart from the listed ones; empty when none do."""
    if not listed or not all(isinstance(item, dict) for item in listed):
        return []
    # A list of whole copies of one state list's rows is read as that list first: the rows may also name
    # records of a collection (a transcript's courses), which the second reading would take them for.
    return _unlisted_by(after.copies, listed, after, arguments, bounds, described) or \
        _unlisted_by(after.sources, listed, after, arguments, bounds, described)


def _unlisted_by(source: Callable[[dict[str, Any]], list[Record]], listed: list[Any], after: StateIndex,
                 arguments: dict[str, Any], bounds: tuple[str | None, str | None] | None,
                 described: str) -> list[Record]:
    containers: set[str] | None = None
    sources = []
    for item in listed:
        found = source(item)
        if not found:
            return []
        sources.append(found)
        here = {r.container for r in found}
        containers = here if containers is None else containers & here
        if not containers:
            return []
    assert containers is not None
    container = min(containers)
    chosen = [next(r for r in found if r.container == container) for found in sources]
    members = after.members(container)
    chosen_paths = {r.path for r in chosen}
    others = [r for r in members if r.path not in chosen_paths]
    if not others or len(chosen_paths) < len(listed):
        return []
    selected = _argument_selected(chosen, members, arguments, bounds, described)
    if selected:
        return [r for r in others if r.path in selected]
    return [] if _explained(chosen, members, arguments, bounds) else others


def _argument_selected(chosen: list[Record], members: list[Record], arguments: dict[str, Any],
                       bounds: tuple[str | None, str | None] | None, described: str) -> set[str]:
    """The records the call's own filter arguments certainly select: a field named like an argument equal
    to its value, for every listed record and the selected ones, and, under a date range, every date of a
    selected record within it (the dates the tool's description names, else whichever date it filters on).
    Empty when no argument names a field and the call gives no closed date range (from a day on, a tool may
    list a window of its own)."""
    if any(not isinstance(v, str) for v in arguments.values() if v is not None):
        return set()  # a list, number or flag filters by a rule this reading does not know
    named = {k: normalized(v) for k, v in arguments.items() if isinstance(v, str) and not _DATE.match(v)}
    keys = [k for k in named if all(isinstance(r.value.get(k), str) for r in members)]
    closed = bounds is not None and None not in bounds
    if not (keys or closed) or not all(normalized(r.value[k]) == named[k] for r in chosen for k in keys):
        return set()
    selected = {r.path for r in members if all(normalized(r.value[k]) == named[k] for k in keys)
                and (bounds is None or _all_dates_within(r.value, bounds, described))}
    wanted = {r.path for r in chosen}
    if not selected > wanted or _category_separates(chosen, [r for r in members if r.path in selected - wanted]):
        return set()
    return selected


def _category_separates(chosen: list[Record], left_out: list[Record]) -> bool:
    """Whether a text field with one or two values over the listed records, values that recur among the
    selected ones (see `_categorical`), holds another value in every left-out one: a rule the tool may apply
    besides its arguments (reserves only, open cases only)."""
    members = [*chosen, *left_out]
    for key in {k for k, v in chosen[0].value.items() if isinstance(v, str)}:
        values = {r.value.get(key) for r in chosen}
        if len(values) <= 2 and all(r.value.get(key) not in values for r in left_out) and \
                _categorical(key, chosen, members):
            return True
    return False


def _categorical(key: str, chosen: list[Record], members: list[Record]) -> bool:
    """Whether the listed records' values of a field read as categories a rule may select on, not as what
    tells one record from the next: no value a date (dates select by range), and each held by two or more
    members, or the left-out ones holding none. With a few records listed, some field of their own (an id,
    a free text, the day they were last used) always differs from a left-out record's."""
    listed = [r.value.get(key) for r in chosen]
    if any(isinstance(v, str) and _DATE.match(v) for v in listed):
        return False
    wanted = {r.path for r in chosen}
    if all(r.value.get(key) is None for r in members if r.path not in wanted):
        return True
    counts = Counter(_key(r.value.get(key)) for r in members)
    return all(counts[_key(v)] >= 2 for v in listed)


def _all_dates_within(value: dict[str, Any], bounds: tuple[str | None, str | None], described: str) -> bool:
    """Whether a record's dates lie within the call's range: those the tool's description names (`collected`
    for `collected_at` in "results collected in a date range"), or every one when it names none."""
    dates = {k: v for k, v in value.items() if isinstance(v, str) and _DATE.match(v)}
    words = set(_WORD.split(described.lower()))
    named = [v for k, v in dates.items() if _names_field(k, words)]
    return all(_within_dates(v, bounds) for v in named or dates.values())


def _names_field(key: str, words: set[str]) -> bool:
    tokens = [t for t in _WORD.split(key.lower()) if t and t not in _DATE_WORDS]
    return bool(tokens) and all(t in words for t in tokens)


_WORD = re.compile(r"[^a-z0-9]+")
_DATE_WORDS = frozenset({"at", "on", "date", "time", "ts", "datetime", "day", "utc"})


def _explained(chosen: list[Record], members: list[Record], arguments: dict[str, Any],
               bounds: tuple[str | None, str | None] | None) -> bool:
    """Whether some filter selects exactly the listed records: a categorical attribute's values, a range
    of a number or date, the call's arguments (equal values, dates between two of them, or text a record
    contains)."""
    keys = set.intersection(*({k for k, v in r.value.items() if is_scalar(v)} for r in members))
    wanted = {r.path for r in chosen}
    left_out = len(members) - len(wanted)
    given = [v for v in call_scalars(arguments) if isinstance(v, str)]
    argument_values = {normalized(v) for v in given}
    for key in sorted(keys, key=str):
        values = [r.value[key] for r in members]
        listed_values = {_key(r.value[key]) for r in chosen}
        if len({_key(v) for v in values}) < len(values) and _filter_like(listed_values, wanted, members, key) and \
                {r.path for r in members if _key(r.value[key]) in listed_values} == wanted and \
                _categorical(key, chosen, members):
            return True
        if left_out >= 2 and len(chosen) >= 3 and _range_explains(key, chosen, members, wanted):
            return True
    if argument_values and _arguments_explain(sorted(keys, key=str), chosen, members, wanted, bounds,
                                              argument_values):
        return True
    if not argument_values:
        return False
    texts = [(r.path, all_strings(r.value, set())) for r in members]
    return any(value and {path for path, strings in texts if value in strings} == wanted for value in argument_values)


def _arguments_explain(keys: list[str], chosen: list[Record], members: list[Record], wanted: set[str],
                       bounds: tuple[str | None, str | None] | None, argument_values: set[str]) -> bool:
    """The records whose fields equal an argument wherever the listed ones do, and whose dates lie within
    the arguments' date bounds wherever the listed ones' do, are exactly the listed ones."""
    equal = [k for k in keys if all(isinstance(r.value[k], str) and normalized(r.value[k]) in argument_values
                                    for r in chosen)]
    between = [k for k in keys if bounds is not None and k not in equal and
               all(_within_dates(r.value[k], bounds) for r in chosen)]
    if not equal and not between:
        return False
    selected = {r.path for r in members
                if all(isinstance(r.value[k], str) and normalized(r.value[k]) in argument_values for k in equal)
                and all(bounds is not None and _within_dates(r.value[k], bounds) for k in between)}
    return selected == wanted


_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")
_LOWER = frozenset({"from", "start", "since", "after", "begin", "min", "earliest"})
_UPPER = frozenset({"to", "end", "until", "before", "max", "through", "latest"})


def _date_bounds(arguments: dict[str, Any], tool: Tool) -> tuple[str | None, str | None] | None:
    """The date range the call's declared arguments select: a lower or upper bound named as one (`from`,
    `since`, `end_date`), else the earliest and latest of two or more dates; None when they name none."""
    declared = tool.input_schema.get("properties")
    names = declared if isinstance(declared, dict) else {}
    dated = {k: v for k, v in arguments.items() if isinstance(v, str) and _DATE.match(v)}
    low = [v for k, v in dated.items() if k in names and _LOWER & set(re.split(r"[_\W]+", k.lower()))]
    high = [v for k, v in dated.items() if k in names and _UPPER & set(re.split(r"[_\W]+", k.lower()))]
    if low or high:
        return (max(low) if low else None, min(high) if high else None)
    dates = sorted(dated.values())
    return (dates[0], dates[-1]) if len(dates) >= 2 else None


def _dated_within(item: Any, bounds: tuple[str | None, str | None]) -> bool:
    """Whether a listed item survives a date filter: it has no date, or one of its dates lies within."""
    dates = [v for v in (item.values() if isinstance(item, dict) else [item]) if isinstance(v, str) and _DATE.match(v)]
    return not dates or any(_within_dates(v, bounds) for v in dates)


def _within_dates(value: Any, bounds: tuple[str | None, str | None]) -> bool:
    """Whether a date or date-time lies within bounds; a bound without a time takes in its whole day."""
    if not isinstance(value, str) or _DATE.match(value) is None:
        return False
    low, high = bounds
    return (low is None or _not_before(value, low)) and (high is None or _not_before(high, value))


def _not_before(later: str, earlier: str) -> bool:
    if len(later) <= 10 or len(earlier) <= 10:
        return later[:10] >= earlier[:10]
    first, second = instant(earlier), instant(later)
    return first is None or second is None or second >= first


def _filter_like(listed_values: set[str], wanted: set[str], members: list[Record], key: str) -> bool:
    """Whether selecting on `key` reads like a filter: a few values kept, or several left out. Keeping every
    value but the one of a single left-out record reads like a dropped record instead."""
    left_out = {_key(r.value[key]) for r in members if r.path not in wanted} - listed_values
    return len(listed_values) <= 2 or len(left_out) >= 2


def _range_explains(key: str, chosen: list[Record], members: list[Record], wanted: set[str]) -> bool:
    """A range of numbers or dates (not of names or ids) holding exactly the listed records."""
    values = [r.value[key] for r in chosen]
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
    if not numbers and not all(isinstance(v, str) and _DATE.match(v) for v in values):
        return False
    low, high = min(values), max(values)
    inside = {r.path for r in members if type(r.value[key]) is type(low) and low <= r.value[key] <= high}
    return inside == wanted


def _key(value: Any) -> str:
    return repr(value)
