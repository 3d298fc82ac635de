"""Deterministic, diff-friendly YAML for records, and loading that names the broken file.

- Field order is the model's, so a record always prints the same way.
- Multi-line text is a literal block (``|``), so a diff shows changed lines.
- A string another YAML reader could take for a number, boolean, null or date is quoted
  (``'no'``, ``'1e3'``, ``'0755'``, ``'~'``), under YAML 1.1 and 1.2 alike.
- Lines are never folded.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from ..errors import CorruptFile, InvalidInput
from .crypto import sealed_key_id
from .validation import describe_validation_error

if TYPE_CHECKING:
    from .crypto import Cipher

_Dumper: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# Plain scalars that YAML 1.2 (core/JSON schema) or 1.1 readers would not read as a string.
_AMBIGUOUS = re.compile(
    r"""^(?:
        [-+]?(?:\.[0-9]+|[0-9][0-9_]*(?:\.[0-9_]*)?)(?:[eE][-+]?[0-9]+)?   # numbers, 1e3
      | [-+]?\.(?:inf|Inf|INF) | \.(?:nan|NaN|NAN)
      | 0o[0-7]+ | 0x[0-9a-fA-F]+ | 0b[01_]+ | [-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?
      | (?i:y|n|yes|no|on|off|true|false|null) | ~ | = | <<
      | [0-9]{4}-[0-9]{1,2}-[0-9]{1,2}.*
    )$""",
    re.VERBOSE,
)


class _RecordDumper(_Dumper):  # type: ignore[misc,valid-type]
    pass


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    if _AMBIGUOUS.match(value):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="'")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_RecordDumper.add_representer(str, _represent_str)


def dump_data(data: Any) -> str:
    return yaml.dump(
        data,
        Dumper=_RecordDumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=1_000_000,
        indent=2,
    )


def dump_record(record: BaseModel) -> str:
    return dump_data(record.model_dump(mode="json"))


# Characters YAML readers fold as line breaks or refuse as unprintable: escape them.
_UNSAFE_IN_QUOTES = re.compile("[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]")
_PLAIN_KEY = re.compile(r"[a-z0-9][\w .\-/]*", re.ASCII)  # fullmatch: "$" allows a "\n"


def _key(text: str) -> str:
    """A mapping key: plain when that is unambiguous, else a JSON string (valid YAML)."""
    if _PLAIN_KEY.fullmatch(text) and not _AMBIGUOUS.match(text) and not text.endswith(" "):
        return text
    return _UNSAFE_IN_QUOTES.sub(
        lambda m: f"\\u{ord(m[0]):04x}", json.dumps(text, ensure_ascii=False)
    )


def dump_index(
    schema_version: int,
    revision: int,
    counters: dict[str, int],
    concepts: dict[str, tuple[list[str], list[str]]],
) -> str:
    """``index.yaml``, written by hand: it is rewritten on every commit, and PyYAML's
    representer costs ~25 ms per 1,000 concepts. Any YAML reader parses it to the same
    mapping (ids are plain scalars; other keys are quoted when they could be misread).
    ``concepts`` maps a concept to (moment ids, session ids), both already sorted.
    """
    out = [f"schema_version: {schema_version}", f"revision: {revision}"]
    out.append("counters:" + ("" if counters else " {}"))
    out += [f"  {_key(name)}: {value}" for name, value in sorted(counters.items())]
    out.append("concepts:" + ("" if concepts else " {}"))
    for concept, (moments, sessions) in sorted(concepts.items()):
        key = _key(concept)
        # YAML caps implicit keys at 1024 characters; longer ones need the explicit form.
        out += [f"  {key}:"] if len(key) < 1000 else [f"  ? {key}", "  :"]
        out.append(f"    moments: [{', '.join(moments)}]")
        out.append(f"    sessions: [{', '.join(sessions)}]")
    return "\n".join(out) + "\n"


def load_data(text: str, path: Path) -> Any:
    """The YAML document in ``text``; any failure is a :class:`CorruptFile` naming ``path``.

    Aliases (``*name``) are refused before the document is built: the notebook never writes
    them, and a few of them nested (an "alias bomb") make a small file expand beyond any
    memory. So are numbers too long for Python's ``int`` and nesting too deep to build."""
    # LibYAML recurses on the C stack for each level of nesting: 100,000 "[" crash the
    # process. Text that may nest that deep (brackets counted naively, a block scalar's too)
    # goes to the pure-Python parser, whose recursion limit is a clean RecursionError.
    parser = _Loader if _flow_depth(text) <= _C_PARSER_DEPTH else yaml.SafeLoader
    try:
        if "*" not in text:  # no alias possible: the common case, parsed in one go
            return yaml.load(text, Loader=parser)
        loader = parser(text)
        try:
            node = loader.get_single_node()
            if node is None:
                return None
            _refuse_aliases(node, path)
            return loader.construct_document(node)
        finally:
            loader.dispose()
    except yaml.YAMLError as err:
        raise CorruptFile(path, f"not valid YAML ({_one_line(err)})") from None
    except ValueError as err:  # int() of a number over Python's 4,300-digit limit
        reason = str(err).split(";")[0]
        raise CorruptFile(path, f"holds a value that cannot be read ({reason})") from None
    except RecursionError:
        raise CorruptFile(path, "nested too deeply to read") from None


#: Above this many open brackets, a text is not given to LibYAML (see :func:`load_data`).
_C_PARSER_DEPTH = 500


def _flow_depth(text: str) -> int:
    """The deepest run of "[" and "{" not yet closed in ``text``, quotes and block scalars
    not told apart (an upper bound of how deep its flow collections nest)."""
    if text.count("[") + text.count("{") <= _C_PARSER_DEPTH:
        return 0  # the common case: too few brackets to nest that deep
    depth = deepest = 0
    for char in text:
        if char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}" and depth:
            depth -= 1
    return deepest


def _refuse_aliases(root: yaml.Node, path: Path) -> None:
    """Refuse a node graph in which a node is reached twice (an alias: the composer gives
    it the anchored node itself), walking each node once."""
    seen: set[int] = set()
    stack: list[yaml.Node] = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            mark = node.start_mark
            raise CorruptFile(
                path,
                f"uses a YAML alias (*name) to repeat the value anchored at line "
                f"{mark.line + 1}: notebook files never hold aliases, so it is refused "
                "(write the value out in full)",
            )
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
        elif isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                stack.extend((key, value))


_R = TypeVar("_R", bound=BaseModel)


def read_text(path: Path, cipher: Cipher | None = None) -> str:
    """A stored file's text; failures are a :class:`CorruptFile` naming ``path``. A sealed
    file (encryption at rest) is opened with ``cipher``."""
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise CorruptFile(path, f"cannot be read ({err.strerror})") from None
    raw = open_sealed(raw, path, cipher)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise CorruptFile(path, f"not valid UTF-8 at byte {err.start}") from None


def open_sealed(raw: bytes, path: Path, cipher: Cipher | None) -> bytes:
    """``raw`` as written: a sealed file opened (bound to its name), a plain one as is."""
    if sealed_key_id(raw) is None:
        return raw
    if cipher is None:
        raise InvalidInput(
            f"{path} is encrypted: set privacy.encryption.enabled: true and give the "
            "notebook's key (AGENT_NOTEBOOK_KEY or privacy.encryption.key_file)"
        )
    return cipher.decrypt(raw, path.name.encode(), str(path))


def seal(data: bytes, path: Path, cipher: Cipher | None) -> bytes:
    """What to write to ``path``: ``data`` sealed when ``cipher`` is given."""
    return data if cipher is None else cipher.encrypt(data, path.name.encode())


def read_record(path: Path, cls: type[_R], cipher: Cipher | None = None) -> _R:
    """Load a record file; every failure is a :class:`CorruptFile` naming ``path``."""
    data = load_data(read_text(path, cipher), path)
    try:
        return cls.model_validate(data)
    except ValidationError as err:
        raise CorruptFile(
            path, f"not a valid {cls.__name__}: {describe_validation_error(err)}"
        ) from None


def _one_line(err: yaml.YAMLError) -> str:
    mark = getattr(err, "problem_mark", None)
    problem = getattr(err, "problem", None) or str(err).splitlines()[0]
    if mark is not None:
        return f"{problem} at line {mark.line + 1}, column {mark.column + 1}"
    return str(problem)
