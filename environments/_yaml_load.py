"""The one safe YAML reader of scenario and config files: bounded size, nesting and alias expansion (no
"billion laughs"), no duplicate keys, and only string keys (YAML 1.1 reads an unquoted `on:` as `true`
and `101:` as an integer; JSON, which scenarios are, has string keys only)."""

from __future__ import annotations

from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from ._occusim_error import OccusimError

# Far beyond any scenario or config file, far below what exhausts memory once aliases are written out.
MAX_YAML_CHARS = 8 * 1024 * 1024
MAX_YAML_NODES = 1_000_000
MAX_YAML_DEPTH = 200
_MERGE_TAG = "tag:yaml.org,2002:merge"
# libyaml's parser reads the same documents about ten times faster than the pure-Python one.
_BASE_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class YamlLoadError(OccusimError, ValueError):
    """A document that is not YAML, or one refused; `where` is `line L, column C` when known."""

    def __init__(self, message: str, where: str = "") -> None:
        self.message = message
        self.where = where
        super().__init__(f"{where}: {message}" if where else message)


class _Loader(_BASE_LOADER):
    """The safe loader that refuses a key given twice in one mapping (merge keys `<<` may still override)
    and a key that is not text."""

    def construct_mapping(self, node: Node, deep: bool = False) -> Any:
        if isinstance(node, MappingNode):
            seen: dict[Any, Any] = {}
            for key_node, _ in node.value:
                if key_node.tag == _MERGE_TAG:
                    continue
                key = self.construct_object(key_node, deep=deep)
                if not isinstance(key, str):
                    raise YamlLoadError(_not_a_string_key(key_node, key), _where(key_node.start_mark))
                first = seen.setdefault(key, key_node.start_mark)
                if first is not key_node.start_mark:
                    raise YamlLoadError(f"duplicate key {key!r} (first given at line {first.line + 1}); "
                                        "give each key once", _where(key_node.start_mark))
        return super().construct_mapping(node, deep=deep)


def _not_a_string_key(node: Node, key: Any) -> str:
    if isinstance(node, ScalarNode):
        return (f"the key {node.value!r} is read as {type(key).__name__} {key!r}, not as text; "
                f"quote it ('\"{node.value}\":') to mean the text")
    return f"a mapping key must be text, not a {type(key).__name__}"


def load_yaml(text: str) -> Any:
    """Parse one YAML document. Raises YamlLoadError for invalid YAML, a duplicate key, a key that is not
    text, or a document over MAX_YAML_CHARS characters, nested deeper than MAX_YAML_DEPTH or expanding
    (aliases written out) to more than MAX_YAML_NODES values."""
    if len(text) > MAX_YAML_CHARS:
        raise YamlLoadError(f"the document has {len(text)} characters, over the limit of {MAX_YAML_CHARS}")
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_expansion(node)
        return loader.construct_document(node)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark
        raise YamlLoadError(f"invalid YAML: {error.problem or error}", _where(mark) if mark else "") from None
    except yaml.YAMLError as error:
        raise YamlLoadError(f"invalid YAML: {error}") from None
    except RecursionError:  # the pure-Python parser, where libyaml is missing, recurses per level
        raise YamlLoadError(f"nested deeper than the limit of {MAX_YAML_DEPTH} levels") from None
    finally:
        loader.dispose()


def _check_expansion(root: Node) -> None:
    """Refuse a node graph that is too deep or, with every alias written out, too large.

    An alias is a second reference to an already composed node, so the graph stays small while its
    expansion grows exponentially; sizes are summed per node once, children before parents.
    """
    sizes: dict[int, tuple[int, int]] = {}  # node -> (values, characters) once expanded
    visiting: set[int] = set()  # the nodes on the current path
    stack: list[tuple[Node, int, bool]] = [(root, 1, False)]
    while stack:
        node, depth, children_done = stack.pop()
        if id(node) in sizes:
            continue
        if depth > MAX_YAML_DEPTH:
            raise YamlLoadError(f"nested deeper than the limit of {MAX_YAML_DEPTH} levels", _where(node.start_mark))
        children = _children(node)
        if not children_done:
            if any(id(child) in visiting for child in children):
                raise YamlLoadError("an alias refers to a value that contains it", _where(node.start_mark))
            visiting.add(id(node))
            stack.append((node, depth, True))
            stack.extend((child, depth + 1, False) for child in children if id(child) not in sizes)
            continue
        visiting.discard(id(node))
        values = 1 + sum(sizes[id(child)][0] for child in children)
        characters = len(node.value) if isinstance(node, ScalarNode) else sum(sizes[id(c)][1] for c in children)
        if values > MAX_YAML_NODES or characters > MAX_YAML_CHARS:
            raise YamlLoadError(
                f"with its aliases written out the document would exceed the limit of {MAX_YAML_NODES} values or "
                f"{MAX_YAML_CHARS} characters (an alias bomb?); write the data out or use fewer aliases",
                _where(node.start_mark))
        sizes[id(node)] = (values, characters)


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _where(mark: Any) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}"


def not_utf8(error: UnicodeDecodeError) -> str:
    """What to tell the user about a file that is not UTF-8 text."""
    return (f"not UTF-8 text: byte 0x{error.object[error.start]:02x} at offset {error.start} cannot be decoded; "
            "save the file as UTF-8")
