"""The updater without a model: rules over the messages since the last update, pure Python.

Sections keep their old text and gain at most ``max_bullets`` new bullets per call, none they
have (compared by the text before " → "); Current State alone is replaced. Same input and clock
(used for messages without ``timestamp`` metadata), same output.

* Current State: ``Request:`` the last user message, ``Answer:`` and ``Last step:`` after it.
* Task Specification: ``- ask: …`` or ``- correction: …`` ("no,", "actually", "instead"…).
* Files and Functions: paths (``a/b.py:42``, ``./x``, ``~/x``), traceback locations, calls,
  code-like dotted and snake_case names in messages and tool-call arguments (paths and files
  only in tool outputs; system prompts are skipped), unless the section mentions them.
* Workflow: ``- done: tool(args) → ok|failed|no result``; ``- planned: Next/I will/Then/1. …``.
* Errors and Corrections: ``- error: tool: first line → resolved: how`` (or ``→ unresolved``),
  likewise ``- correction: …``; resolved by a later success of that tool (any tool for a
  correction) or an assistant saying fixed/resolved, in this batch or a later one.
* Key Results: assistant sentences with results language; successful tool outputs, one line.
* Worklog: ``- YYYY-MM-DD HH:MM who: one line`` per message, oldest first.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any, Final

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from ...core.enrich import identifiers
from ...model import normalize_concept
from ..sections import SECTION_NAMES, Sections
from .base import UpdateProposal

__all__ = ["MAX_BULLETS", "DeterministicUpdater"]

MAX_BULLETS: Final = 20
ARROW: Final = " → "
_KINDS: Final = (AIMessage, HumanMessage, ToolMessage)
_SUFFIX: Final = r"(?:pyi?|ipynb|[cm]?[jt]sx?|rs|go|java|kt|rb|php|[ch]|cc|[ch]pp|cs|swift|scala|sh|sql|md|rst|txt|toml|ya?ml|json|cfg|ini|html|css|lock)"
_FILE: Final = re.compile(rf".*\.{_SUFFIX}(?::\d+)*")
_PATH_KEYS: Final = frozenset(["path", "file", "file_path", "filename", "filepath", "module"])
_URL: Final = re.compile(r"https?://\S+|www\.\S+")
_LOCATION: Final = re.compile(
    r"(?<![\w./~-])(?:File \"(?P<tb>[^\"\n]+)\", line (?P<line>\d+)"
    r"|(?P<path>(?:(?:~|\.{1,2})?/(?:[\w.-]+/)*|(?:[\w.-]+/)+)[\w.-]*\w(?::\d+)*)"
    r"|(?P<call>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\((?!s\))"
    r"|(?P<dotted>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?::\d+)*)(?![\w(]|\.\w)"
    r"|(?P<snake>[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+)(?![\w(]|\.\w))"
)
_CODE_DOTTED: Final = re.compile(r"[\w.]*_[\w.]*|\w+\.\w+\.[\w.]+|[A-Z]\w*[a-z]\w*\.[a-z_]\w*")
_CORRECTION: Final = re.compile(
    r"(?i)^\W*(?:(?:no|nope|nah|actually|instead|wait|rather|correction|oops|sorry|wrong|stop|"
    r"i meant|that's not|that is not)\b|not\b[^,.;\n]{1,80},)"
)
_PLANNED: Final = re.compile(r"^(?:next\b|i will\b|i'll\b|then\b|let me\b|\d+[.)]\s)", re.I)
_RESULTS: Final = re.compile(
    r"(?i)\b(?:found|finds|results?|returns?|returned|pass(?:ed|es)?|fail(?:ed|s)?|is|are|was|were|equals?)\b|\d"
)
_FIXED: Final = re.compile(r"\b(?:fixed|resolved|solved|works now|now pass(?:es)?)\b", re.I)
_FAILURE: Final = re.compile(  # an exception line, a test failure
    r"(?m)^[ \t]*(?:[\w.]*(?:Exception|Error)\b(?::.*)?|FAILED\b.*|.*\b[1-9]\d* failed\b.*)$"
)
_SENTENCE: Final = re.compile(r"(?<=[^\d\s][.!?])\s+|\n+")  # "1. Do x" stays whole
_ACK: Final = re.compile(r"(?i)\W*(?:ok|okay|done|success(?:ful)?|true|none|null)?\W*")
_UNRESOLVED: Final = re.compile(r"^- (?:error: (?P<tool>[^:\s]+): |correction: ).*→ unresolved$")


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _lines(text: str) -> list[str]:
    return [" ".join(line.split()) for line in text.splitlines() if line.strip()]


def _norm(line: str) -> str:
    return " ".join(line.split(ARROW)[0].strip().lstrip("-*• ").split()).casefold()


def _error_line(text: str) -> str:
    """A traceback's last failure line, other output's first failure line or first line."""
    found = _FAILURE.findall(text)
    found = found[-1:] if "Traceback" in text else found[:1]
    return _cut((found or _lines(text) or ["(no output)"])[0], 160)


def _summary(text: str) -> str:
    lines = _lines(text)
    tests = [line for line in lines if re.search(r"\b\d+ (?:passed|failed)\b", line)]
    return _cut((tests[-1:] or lines or ["(no output)"])[0].strip("= "), 160)


def _short_args(args: dict[str, Any]) -> str:
    text = {k: v if isinstance(v, str) else json.dumps(v, default=str) for k, v in args.items()}
    return _cut(", ".join(f"{k}={_cut(v, 40)}" for k, v in text.items()), 120)


def _locations(text: str, *, loose: bool) -> Iterator[str]:
    """Code locations in ``text``; unless ``loose`` (tool outputs), paths and files only."""
    for m in _LOCATION.finditer(_URL.sub(" ", text)):
        if m["tb"]:
            yield f"{m['tb']}:{m['line']}"
        elif value := m["path"]:
            tail = value.rsplit("/", 1)[-1]
            if value[0] in "~./" or "." in tail.strip(".") or value.count("/") >= 2:
                yield value
        elif value := m["dotted"]:
            if _FILE.fullmatch(value) or (loose and _CODE_DOTTED.fullmatch(value)):
                yield value
        elif loose and (value := m["call"] or m["snake"]):
            yield value + "()" if m["call"] else value


def _arg_locations(args: dict[str, Any]) -> Iterator[str]:
    """A path-like argument's value whole; locations in other short values; paths in the rest."""
    for key, value in args.items():
        text = value.strip() if isinstance(value, str) else json.dumps(value, default=str)
        short = "\n" not in text and len(text) <= 200 and isinstance(value, str)
        if short and key.casefold() in _PATH_KEYS and text:
            yield text
        else:
            yield from _locations(text, loose=short)


def _timestamp(message: BaseMessage, now: datetime) -> datetime:
    """A datetime, ISO text or epoch seconds under "timestamp", else ``now``; naive as UTC."""
    raw = message.response_metadata.get("timestamp", message.additional_kwargs.get("timestamp"))
    try:
        when = datetime.fromisoformat(raw) if isinstance(raw, str) else raw
        when = datetime.fromtimestamp(raw, UTC) if isinstance(raw, int | float) else when
    except (ValueError, OverflowError, OSError):
        when = now
    if not isinstance(when, datetime):
        return now
    return when.astimezone(UTC) if when.tzinfo else when


class _Bullets:
    """One section's lines: the old ones, then at most ``cap`` new bullets, none twice."""

    def __init__(self, old: str, cap: int) -> None:
        self.lines = old.strip("\n").splitlines() if old.strip() else []
        self.keys = {_norm(line): n for n, line in enumerate(self.lines)}
        self.room, self.dropped = cap, 0

    def add(self, bullet: str, repeat: bool = False) -> int | None:
        """Append ``bullet``, or the index of a line with its key unless ``repeat``."""
        if not repeat and (key := _norm(bullet)) in self.keys:
            return self.keys[key]
        self.dropped += not self.room
        if self.room:
            self.room -= 1
            self.keys.setdefault(_norm(bullet), len(self.lines))
            self.lines.append(bullet)
        return None

    def text(self) -> str:
        return "\n".join(self.lines + [f"- … {self.dropped} more not listed"] * bool(self.dropped))


class DeterministicUpdater:
    """Proposes all seven sections from the new messages by rules (see the module doc)."""

    name = "deterministic"

    def __init__(
        self,
        *,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        max_bullets: int = MAX_BULLETS,
    ) -> None:
        self._now, self._cap = now, max_bullets

    async def apropose(self, current: Sections, messages: Sequence[BaseMessage]) -> UpdateProposal:
        return self.propose(current, messages)

    def propose(self, current: Sections, messages: Sequence[BaseMessage]) -> UpdateProposal:
        old = {name: current.get(name, "") for name in SECTION_NAMES}
        run = _Run(messages, self._now())
        if not run.messages:
            return UpdateProposal(old)
        new = {"Current State": run.current_state(old["Current State"])}
        rules = (run.task, run.files, run.workflow, run.errors, run.results, run.worklog)
        for name, rule in zip(SECTION_NAMES[1:], rules, strict=True):
            new[name] = rule(_Bullets(old[name], self._cap))
        proposed = {n: new[n].strip("\n") or old[n] for n in SECTION_NAMES}
        # Current State is replaced by design: what it named before is superseded, not lost.
        now_named = normalize_concept("\n".join(proposed.values()))
        superseded = [i for i in identifiers(old["Current State"]) if i not in now_named]
        return UpdateProposal(proposed, resolved=superseded)


class _Run:
    """The messages of one update, each tool result matched to its call by id."""

    def __init__(self, messages: Sequence[BaseMessage], now: datetime) -> None:
        self.now, self.messages = now, [m for m in messages if isinstance(m, _KINDS)]
        self.texts = [str(m.text).strip() for m in self.messages]
        self.humans = [i for i, m in enumerate(self.messages) if isinstance(m, HumanMessage)]
        self.corrections = [i for i in self.humans if _CORRECTION.match(self.texts[i])]
        self.ai = [(i, m) for i, m in enumerate(self.messages) if isinstance(m, AIMessage)]
        names = {c["id"]: c["name"] for _, m in self.ai for c in m.tool_calls}
        self.tools: dict[int, tuple[str, bool]] = {}  # a tool result's index: (tool, ok)
        self.ok_by_call: dict[str | None, bool] = {}
        for i, m in enumerate(self.messages):
            if isinstance(m, ToolMessage):
                bad = self.texts[i].startswith(("Error", "Traceback"))
                ok = m.status != "error" and not (bad or _FAILURE.search(self.texts[i]))
                self.tools[i] = (m.name or names.get(m.tool_call_id) or "tool", ok)
                self.ok_by_call[m.tool_call_id] = ok

    def outcome(self, i: int) -> str:
        (tool, ok), text = self.tools[i], self.texts[i]
        return f"{tool} ok: {_summary(text)}" if ok else f"{tool} failed: {_error_line(text)}"

    def resolution(self, after: int, tool: str | None) -> str | None:
        """A later success of ``tool`` (any tool if None) or an assistant's fixed/resolved."""
        for i in range(after + 1, len(self.messages)):
            if i in self.tools and self.tools[i][1] and tool in (None, self.tools[i][0]):
                return self.outcome(i)
            said = [s for s in _SENTENCE.split(self.texts[i]) if _FIXED.search(s)]
            if said and isinstance(self.messages[i], AIMessage):
                return _cut(said[0], 160)
        return None

    def current_state(self, old: str) -> str:
        start = self.humans[-1] if self.humans else -1
        if self.humans:
            first, *more = [_cut(ln, 200) for ln in _lines(self.texts[start])[:2]] or [""]
            lines = [f"Request: {first}", *more]
        else:  # no new request: the old one stands
            lines = [ln for ln in old.splitlines() if not ln.startswith(("Answer:", "Last step:"))]
        answers = [t for i, _ in self.ai if i > start and (t := self.texts[i])]
        steps = [self.outcome(i) for i in self.tools if i > start]
        lines += [f"Answer: {_cut(answers[-1], 200)}"] if answers else []
        lines += [f"Last step: {_cut(steps[-1], 200)}"] if steps else []
        return "\n".join(lines)

    def task(self, bullets: _Bullets) -> str:
        for i in self.humans:
            kind = "correction" if i in self.corrections else "ask"
            bullets.add(f"- {kind}: {_cut(self.texts[i], 200)}")
        return bullets.text()

    def files(self, bullets: _Bullets) -> str:
        for i, m in enumerate(self.messages):
            found = [*_locations(self.texts[i], loose=not isinstance(m, ToolMessage))]
            for call in m.tool_calls if isinstance(m, AIMessage) else []:
                found += _arg_locations(call["args"])
            for item in (f for f in found if len(f) <= 200):  # longer: a blob, not a name
                core = re.escape(item.removesuffix("()"))  # mentioned already?
                if not re.search(rf"(?<![\w./~-]){core}(?![\w/]|\.\w)", "\n".join(bullets.lines)):
                    bullets.add(f"- {item}")
        return bullets.text()

    def workflow(self, bullets: _Bullets) -> str:
        for i, m in self.ai:
            for line in (ln.strip().lstrip("-*• ") for ln in _SENTENCE.split(self.texts[i])):
                if _PLANNED.match(line):
                    bullets.add(f"- planned: {_cut(line, 160)}")
            for call in m.tool_calls:
                ok = self.ok_by_call.get(call["id"])
                state = "no result" if ok is None else "ok" if ok else "failed"
                step = f"{call['name']}({_short_args(call['args'])})"
                bullets.add(f"- done: {step}{ARROW}{state}", repeat=True)
        return bullets.text()

    def errors(self, bullets: _Bullets) -> str:
        for n, line in enumerate(bullets.lines):  # older problems this batch resolves
            if (m := _UNRESOLVED.match(line)) and (how := self.resolution(-1, m["tool"])):
                bullets.lines[n] = line.removesuffix("unresolved") + f"resolved: {how}"
        for i, t in enumerate(self.texts):
            tool = self.tools[i][0] if i in self.tools and not self.tools[i][1] else None
            if not tool and i not in self.corrections:
                continue
            what = f"error: {tool}: {_error_line(t)}" if tool else f"correction: {_cut(t, 200)}"
            how = self.resolution(i, tool)
            bullet = f"- {what}{ARROW}" + (f"resolved: {how}" if how else "unresolved")
            at = bullets.add(bullet)
            if at is not None and how and bullets.lines[at].endswith("unresolved"):
                bullets.lines[at] = bullet
        return bullets.text()

    def results(self, bullets: _Bullets) -> str:
        for i, m in enumerate(self.messages):
            if isinstance(m, AIMessage):
                for s in (s.strip().lstrip("-*• ") for s in _SENTENCE.split(self.texts[i])):
                    if _RESULTS.search(s) and not _PLANNED.match(s) and not s.endswith("?"):
                        bullets.add(f"- {_cut(s, 160)}")
            elif i in self.tools and self.tools[i][1] and not _ACK.fullmatch(self.texts[i]):
                bullets.add(f"- {self.tools[i][0]}: {_summary(self.texts[i])}")
        return bullets.text()

    def worklog(self, bullets: _Bullets) -> str:
        for i, m in enumerate(self.messages):
            when = _timestamp(m, self.now).strftime("%Y-%m-%d %H:%M")
            who = "tool" if i in self.tools else "user" if i in self.humans else "assistant"
            what = self.outcome(i) if i in self.tools else self.texts[i]
            if isinstance(m, AIMessage) and m.tool_calls:
                calls = ", ".join(f"{c['name']}({_short_args(c['args'])})" for c in m.tool_calls)
                what = f"{what} [called {calls}]"
            bullets.add(f"- {when} {who}: {_cut(what, 200) or '(empty)'}", True)
        return bullets.text()
