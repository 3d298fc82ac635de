"""Property tests: the YAML directory backend loses nothing, and its files say what they mean.

Sessions and moments are generated with any Unicode text (no lone surrogates, which the
model refuses), strings a YAML reader could take for something else, and extreme numbers.
Each example is written by one :class:`YamlDirBackend` and read back by a new one on the
same directory, in a fresh temporary directory.
"""

from __future__ import annotations

import math
import re
import tempfile
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_notebook import (
    Action,
    Decision,
    Escalation,
    Link,
    Moment,
    Notebook,
    PendingItem,
    Session,
    TaskStatus,
)
from agent_notebook.core.yamlcodec import dump_record
from agent_notebook.model import (
    MomentContent,
    MomentMetadata,
    Relations,
    SessionContext,
    SessionStats,
)
from agent_notebook.storage import MomentFilter, YamlDirBackend

#: Strings another YAML reader (1.1 or 1.2) could take for a bool, null, number or date, or
#: that need care to print: indicators, spaces at the ends, odd line breaks, BOM, NUL.
AMBIGUOUS = [
    "no", "No", "NO", "n", "N", "y", "Y", "yes", "on", "On", "off", "OFF", "true", "True",
    "false", "FALSE", "null", "Null", "NULL", "~", "", "1e3", "1E3", "-1e-3", "+1", "1_000",
    "0755", "0o17", "0x1F", "0b101", "012", "1.5", ".5", "5.", "-.inf", ".inf", ".NaN",
    "1:20", "190:20:30", "2026-01-01", "2026-1-1", "2026-01-01T10:00:00Z",
    "2026-01-01 10:00:00.5 +02:00", "-", "--", "---", "...", "? x", ": x", "x: y", "- x",
    "#x", "x #y", "@x", "`x", "!x", "!!str x", "&a", "*a", "%TAG", "|", ">", "'", '"', "[x]",
    "{x: 1}", ",", "=", "<<", " leading", "trailing ", "  ", "\t", "a\tb", "tab\t",
    "\r\n", "a\r\nb", "\r", "a\rb", "\x85", "a\x85b", "\u2028", "a\u2029b", "\ufeff",
    "\ufeffbom", "\x00", "nul\x00here", "\n", "\n\n", "a\n", "\na", " a\n b ", "a\n\n", "x\n ",
    "\x7f", "\x1b[31m", "é", "日本語", "🚀", "\u200b", "\U0010ffff", "\ufffe",
]  # fmt: skip

any_text = st.text(st.characters(exclude_categories=["Cs"]))
ambiguous = st.sampled_from(AMBIGUOUS)
texts = st.one_of(
    ambiguous,
    any_text,
    st.lists(st.one_of(ambiguous, any_text), min_size=2, max_size=4).map("".join),
)
opt_texts = st.none() | texts
#: Concepts are keys of index.yaml; kept short here (NFKC may grow a character 18-fold),
#: long ones have their own test below.
concept_texts = texts.map(lambda t: t[:50])

EXTREME_FLOATS = [
    5e-324, -5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, -1.7976931348623157e308,
    -0.0, 0.0, 1e16, 1e-7, 0.1, 123456789012345678.0, 2.0**53 + 2,
]  # fmt: skip
finite_floats = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from(EXTREME_FLOATS)
big_ints = st.integers(-(2**80), 2**80) | st.sampled_from(
    [2**80, -(2**80), 2**63, -(2**63) - 1, 2**64, 0, -1]
)
json_values = st.recursive(
    st.none() | st.booleans() | big_ints | finite_floats | texts,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=12,
)

times = st.datetimes(
    min_value=datetime(1900, 1, 1),
    max_value=datetime(2200, 1, 1),
    timezones=st.just(UTC) | st.builds(timezone, st.integers(-23 * 60, 23 * 60).map(
        lambda m: timedelta(minutes=m)
    )),
)  # fmt: skip
session_ids = st.builds(
    lambda d, n: f"s_{d.isoformat()}_{n:03d}",
    st.dates(min_value=datetime(1000, 1, 1).date(), max_value=datetime(9999, 12, 31).date()),
    st.integers(1, 10**6),
)
moment_ids = st.integers(1, 10**12).map(lambda n: f"m_{n}")


def _numbered(prefix: str, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"id": f"{prefix}_{i + 1}", **item} for i, item in enumerate(items)]


@st.composite
def sessions(draw: st.DrawFn, sid: str | None = None) -> Session:
    pending = draw(
        st.lists(
            st.fixed_dictionaries(
                {"what": texts, "since": times},
                optional={"closed": times, "resolution": texts},
            ),
            max_size=3,
        )
    )
    escalations = draw(
        st.lists(
            st.fixed_dictionaries(
                {"when": times, "to": texts},
                optional={"why": texts, "slice": texts, "outcome": opt_texts, "resolved": times},
            ),
            max_size=2,
        )
    )
    return Session(
        id=sid or draw(session_ids),
        task=draw(texts),
        task_status=draw(st.sampled_from(TaskStatus)),
        started=draw(times),
        context=SessionContext(
            raw_history_size=draw(st.integers(0, 2**62)),
            condensed_history=draw(texts),
            recent_moments=draw(st.lists(moment_ids, max_size=3)),
        ),
        decisions=draw(
            st.lists(st.builds(Decision, when=times, what=texts, why=texts, who=texts), max_size=3)
        ),
        pending=[PendingItem(**p) for p in _numbered("p", pending)],
        escalations=[Escalation(**e) for e in _numbered("e", escalations)],
        links=draw(st.lists(st.builds(Link, target=texts, relation=texts, note=texts), max_size=3)),
        stats=SessionStats(
            moments=draw(st.integers(0, 2**62)),
            tokens=draw(st.integers(0, 2**62)),
            bytes=draw(st.integers(0, 2**62)),
            first_activity=draw(st.none() | times),
            last_activity=draw(st.none() | times),
        ),
    )


@st.composite
def moments(draw: st.DrawFn, session_id: str) -> Moment:
    return Moment(
        id=draw(moment_ids),
        session=session_id,
        timestamp=draw(times),
        role=draw(texts),
        speaker=draw(texts),
        content=MomentContent(
            text=draw(texts),
            audio_signature=draw(opt_texts),
            image_signature=draw(opt_texts),
            multimodal_embedding=draw(st.none() | st.lists(finite_floats, max_size=6)),
        ),
        audio_path=draw(opt_texts),
        image_path=draw(opt_texts),
        metadata=MomentMetadata(
            concepts=draw(st.lists(concept_texts, max_size=4)),
            retrieval_keys=draw(st.lists(texts, max_size=4)),
            importance=draw(st.floats(0.0, 1.0) | st.sampled_from([0.0, 1.0, 5e-324])),
            decay_rate=draw(st.floats(0.0, allow_infinity=False) | st.sampled_from([0.0, 5e-324])),
        ),
        relations=Relations(
            parent=draw(st.none() | moment_ids),
            children=draw(st.lists(moment_ids, max_size=3)),
            links=draw(st.lists(texts, max_size=3)),
        ),
        actions=draw(
            st.lists(
                st.builds(
                    Action,
                    tool=texts,
                    arguments=st.dictionaries(texts, json_values, max_size=4),
                    result=json_values,
                    ok=st.booleans(),
                ),
                max_size=3,
            )
        ),
        source_id=draw(opt_texts),
    )


@st.composite
def notebooks(draw: st.DrawFn) -> tuple[list[Session], list[Moment]]:
    chosen = draw(st.lists(sessions(), min_size=1, max_size=3, unique_by=lambda s: s.id))
    found = draw(
        st.lists(
            st.sampled_from([s.id for s in chosen]).flatmap(moments),
            min_size=1,
            max_size=4,
            unique_by=lambda m: m.number,
        )
    )
    return chosen, found


PROPERTY = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _signed_floats(value: Any) -> list[tuple[float, float]]:
    """Every float in ``value`` with its sign, since ``-0.0 == 0.0``."""
    if isinstance(value, float):
        return [(value, math.copysign(1.0, value))]
    if isinstance(value, dict):
        return [f for v in value.values() for f in _signed_floats(v)]
    if isinstance(value, list):
        return [f for v in value for f in _signed_floats(v)]
    return []


def _file_of(root: Path, record: Session | Moment) -> Path:
    if isinstance(record, Session):
        return root / "sessions" / f"{record.id}.yaml"
    return root / "sessions" / record.session / "moments" / f"{record.id}.yaml"


@pytest.mark.slow
@PROPERTY
@given(notebooks())
def test_round_trip_through_a_new_instance_loses_nothing(
    data: tuple[list[Session], list[Moment]],
) -> None:
    chosen, found = data
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "yaml"
        writer = YamlDirBackend(root)
        with writer.atomic():
            for s in chosen:
                writer.put_session(s)
            writer.put_moments(found)
            writer.raise_counter("moment", max(m.number for m in found))
            for s in chosen:
                writer.raise_counter(f"session:{s.id[2:12]}", int(s.id[13:]))
        writer.close()

        reader = YamlDirBackend(root)
        try:
            assert reader.list_sessions() == sorted(chosen, key=lambda s: (s.started, s.id))
            for s in chosen:
                assert reader.get_session(s.id) == s
            assert reader.list_moments() == sorted(found, key=lambda m: m.number)
            for m in found:
                again = reader.get_moment(m.id)
                assert again == m
                assert again is not None
                assert _signed_floats(again.model_dump()) == _signed_floats(m.model_dump())
            concepts = {c for m in found for c in m.metadata.concepts}
            entries = reader.list_concepts()
            assert {c.concept for c in entries} == concepts
            counters = reader.counters()
        finally:
            reader.close()

        # index.yaml (written by hand) reads back, with any YAML reader, as what was meant
        index_text = (root / "index.yaml").read_text(encoding="utf-8")
        for loader in (yaml.SafeLoader, getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
            index = yaml.load(index_text, Loader=loader)  # both are safe loaders
            assert index["counters"] == counters
            assert index["concepts"] == {
                c.concept: {"moments": c.moments, "sessions": c.sessions} for c in entries
            }

        for record in [*chosen, *found]:
            path = _file_of(root, record)
            text = path.read_text(encoding="utf-8")
            # deterministic: the same record always prints as the same bytes
            assert dump_record(record) == dump_record(record.model_copy(deep=True)) == text
            # a plain YAML reader gets the very same data back: strings stay strings
            # (never bools, nulls, numbers or dates), numbers keep their value and sign
            plain = yaml.safe_load(text)
            expected = record.model_dump(mode="json")
            assert plain == expected
            assert _types(plain) == _types(expected)
            assert _signed_floats(plain) == _signed_floats(expected)
            # and no string is left unquoted that a YAML 1.2 or strict 1.1 reader would
            # take for a null, bool or number
            misread = [v for v in _plain_strings(text) if OTHER_READERS.fullmatch(v)]
            assert misread == []


#: Plain scalars that a YAML 1.2 core-schema reader, or a YAML 1.1 reader with the spec's
#: boolean set, takes for something other than a string (PyYAML's own 1.1 resolver is
#: covered by ``yaml.safe_load``).
OTHER_READERS = re.compile(
    r"""
      ~ | null | Null | NULL | true | True | TRUE | false | False | FALSE        # 1.2 core
    | [-+]?[0-9]+ | 0o[0-7]+ | 0x[0-9a-fA-F]+
    | [-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?
    | [-+]?\.(?:inf|Inf|INF) | \.(?:nan|NaN|NAN)
    | y|Y|yes|Yes|YES|n|N|no|No|NO|on|On|ON|off|Off|OFF                       # 1.1 bool
    """,
    re.VERBOSE,
)


def _plain_strings(text: str) -> list[str]:
    """The values of every unquoted scalar that PyYAML reads as a string."""
    found = []
    todo = [yaml.compose(text)]
    while todo:
        node = todo.pop()
        if isinstance(node, yaml.ScalarNode):
            if node.style is None and node.tag == "tag:yaml.org,2002:str":
                found.append(node.value)
        elif isinstance(node, yaml.SequenceNode):
            todo.extend(node.value)
        elif isinstance(node, yaml.MappingNode):
            todo.extend(n for pair in node.value for n in pair)
    return found


def _types(value: Any) -> Any:
    """The shape of ``value`` with each leaf replaced by its type name."""
    if isinstance(value, dict):
        return {k: _types(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_types(v) for v in value]
    return type(value).__name__


@PROPERTY
@given(key=texts, value=texts)
def test_ambiguous_strings_stay_strings(key: str, value: str) -> None:
    """The smallest case: a string as a key and as a value, read by a plain YAML reader."""
    action = Action(tool=value, arguments={key: value, "list": [value, key]}, result=value)
    text = dump_record(action)
    assert yaml.safe_load(text) == action.model_dump(mode="json")
    assert [v for v in _plain_strings(text) if OTHER_READERS.fullmatch(v)] == []
    assert dump_record(Action.model_validate(yaml.safe_load(text))) == text


def test_every_listed_ambiguous_string_survives() -> None:
    """All of ``AMBIGUOUS`` at once, in every position a string can take in a moment."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        sid = "s_2026-01-01_001"
        backend = YamlDirBackend(root)
        moment = Moment(
            id="m_1",
            session=sid,
            timestamp=datetime(2026, 1, 1, tzinfo=UTC),
            role=AMBIGUOUS[0],
            speaker=AMBIGUOUS[-1],
            content=MomentContent(text="\n".join(AMBIGUOUS), multimodal_embedding=EXTREME_FLOATS),
            metadata=MomentMetadata(retrieval_keys=AMBIGUOUS),
            relations=Relations(links=AMBIGUOUS),
            actions=[Action(tool=s, arguments={s: s}, result=[s, {s: [s]}]) for s in AMBIGUOUS],
        )
        with backend.atomic():
            backend.put_session(
                Session(id=sid, started=moment.timestamp, task="\t".join(AMBIGUOUS))
            )
            backend.put_moments([moment])
        backend.close()
        again = YamlDirBackend(root)
        assert again.get_moment("m_1") == moment
        again.close()
        plain = yaml.safe_load(_file_of(root, moment).read_text(encoding="utf-8"))
        assert plain["metadata"]["retrieval_keys"] == AMBIGUOUS
        assert all(type(k) is str for k in plain["metadata"]["retrieval_keys"])
        assert [a["tool"] for a in plain["actions"]] == AMBIGUOUS
        assert _signed_floats(plain["content"]["multimodal_embedding"]) == _signed_floats(
            EXTREME_FLOATS
        )


def test_long_keys_in_records_survive(tmp_path: Path) -> None:
    """Keys past YAML's 1024-character limit for implicit keys, in a record file."""
    keys = ["k" * 1500, "é" * 1100, "no " * 400, "line\n" * 300]
    sid = "s_2026-01-01_001"
    moment = Moment(
        id="m_1",
        session=sid,
        timestamp=datetime(2026, 1, 1, tzinfo=UTC),
        actions=[Action(tool="t", arguments={k: k for k in keys}, result={k: [k] for k in keys})],
    )
    backend = YamlDirBackend(tmp_path)
    backend.put_moments([moment])
    backend.close()
    again = YamlDirBackend(tmp_path)
    assert again.get_moment("m_1") == moment
    again.close()


@pytest.mark.parametrize("concept", ["lyon " * 300, "é" * 1100], ids=["plain", "quoted"])
def test_long_concept_survives_reopening(tmp_path: Path, concept: str) -> None:
    home = tmp_path / "home"
    with Notebook.open(home, backend="yaml") as nb:
        session = nb.start_session("long concepts")
        nb.record(session.id, "a moment with a very long concept", concepts=[concept])
    with Notebook.open(home, backend="yaml") as nb:  # YAML caps implicit keys at 1024 chars
        assert nb.concept(concept).moments == ["m_1"]


def test_big_numbers_keep_type_and_sign() -> None:
    values = {
        "big": 2**80,
        "neg_big": -(2**80),
        "tiny": 5e-324,
        "max": 1.7976931348623157e308,
        "neg_zero": -0.0,
        "float_int": 3.0,
        "bool": True,
        "null": None,
    }
    action = Action(tool="t", arguments=values, result=list(values.values()))
    plain = yaml.safe_load(dump_record(action))
    assert plain["arguments"] == values
    assert {k: type(v) for k, v in plain["arguments"].items()} == {
        k: type(v) for k, v in values.items()
    }
    assert math.copysign(1.0, plain["arguments"]["neg_zero"]) == -1.0
    assert math.copysign(1.0, plain["result"][4]) == -1.0


def test_a_read_only_folder_hands_out_its_records_uncopied_and_still_finds_words(
    tmp_path: Path,
) -> None:
    """An import's source is only read: its moments are not copied on the way out (that was
    40% of importing 100,000 moments) and its words are indexed on the first search."""
    sid = "s_2026-01-01_001"
    moment = Moment(
        id="m_1",
        session=sid,
        timestamp=datetime(2026, 1, 1, tzinfo=UTC),
        content=MomentContent(text="the receipt for EXP-2291"),
    )
    writer = YamlDirBackend(tmp_path)
    writer.put_session(Session(id=sid, started=datetime(2026, 1, 1, tzinfo=UTC)))
    writer.put_moments([moment])
    writer.close()
    source = YamlDirBackend(tmp_path, read_only=True)
    try:
        assert source.get_moment("m_1") is source.get_moment("m_1") == moment
        hits = source.search_text("receipt", MomentFilter(), 10)
        assert [mid for mid, _ in hits] == ["m_1"]
    finally:
        source.close()
