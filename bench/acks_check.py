"""The data-safety check of bench/shared_load.py: every acknowledged write of a run is looked
for in the run's sessions (through a server's API, or with ``Notebook.open``) and counts as
present only when exactly one moment carries its marker, under the id it was given."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import httpx

from agent_notebook import Notebook

PAGE = 1000  # the API's largest page


MARKER = re.compile(r"\[(bench-[\w-]+)\]")


class Acks:
    """The acknowledged writes of one run (marker -> the moment id its writer was given)
    and every session the run's writers used."""

    def __init__(self) -> None:
        self.ids: dict[str, str] = {}
        self.sessions: set[str] = set()
        self._lock = threading.Lock()

    def session(self, session_id: str) -> None:
        with self._lock:
            self.sessions.add(session_id)

    def add(self, marker: str, moment_id: str, session_id: str) -> None:
        with self._lock:
            self.ids[marker] = moment_id
            self.sessions.add(session_id)


@dataclass
class Check:
    """Acknowledged writes against the moments found in the run's sessions."""

    view: str
    acknowledged: int
    present: int  # found once, under the acknowledged id
    missing: list[str]
    doubled: list[str]
    moved: list[str]  # found once, under another id
    error: str = ""  # why the moments could not be read back at all

    @property
    def ok(self) -> bool:
        return self.present == self.acknowledged and not self.error

    def problems(self) -> str:
        unread = [f"could not read them back: {self.error}"] if self.error else []
        parts = unread + [
            f"{what} {len(markers)} (e.g. {', '.join(markers[:3])})"
            for what, markers in (
                ("missing", self.missing),
                ("found more than once", self.doubled),
                ("under another id", self.moved),
            )
            if markers
        ]
        return "; ".join(parts)


def check(view: str, acks: Acks, moments: Iterable[tuple[str, str]]) -> Check:
    """``moments``: (id, text) of every moment in the run's sessions."""
    found: dict[str, list[str]] = {}
    for moment_id, text in moments:
        for marker in MARKER.findall(text):
            found.setdefault(marker, []).append(moment_id)
    present, missing, doubled, moved = 0, [], [], []
    for marker, moment_id in sorted(acks.ids.items()):
        where = found.get(marker, [])
        if not where:
            missing.append(marker)
        elif len(where) > 1:
            doubled.append(marker)
        elif where[0] != moment_id:
            moved.append(marker)
        else:
            present += 1
    return Check(view, len(acks.ids), present, missing, doubled, moved)


def read_back(view: str, acks: Acks, read: Callable[[], list[tuple[str, str]]]) -> Check:
    """:func:`check` on what ``read`` returns; a notebook that cannot be read back (a
    damaged file, say) is reported as such, every write of the run missing."""
    try:
        moments = read()
    except Exception as err:  # noqa: BLE001 - a notebook that cannot be read is the finding
        failed = check(view, acks, [])
        failed.error = f"{type(err).__name__}: {err}".replace("\n", " ")[:300]
        return failed
    return check(view, acks, moments)


def api_moments(url: str, auth: dict[str, str], sessions: Iterable[str]) -> list[tuple[str, str]]:
    """Every moment of ``sessions``, read page by page through the server at ``url``."""
    out: list[tuple[str, str]] = []
    with httpx.Client(base_url=url, headers=auth, timeout=120) as client:
        for session in sorted(sessions):
            offset: int | None = 0
            while offset is not None:
                response = client.get(
                    f"/api/sessions/{session}/moments", params={"offset": offset, "limit": PAGE}
                )
                response.raise_for_status()
                page = response.json()
                out += [(m["id"], m["content"]["text"]) for m in page["items"]]
                offset = page["next_offset"]
    return out


def notebook_moments(home: Path, sessions: Iterable[str]) -> list[tuple[str, str]]:
    """Every moment of ``sessions``, read with ``Notebook.open`` (no server running)."""
    with Notebook.open(home, create=False, background_embedding=False) as nb:
        return [(m.id, m.content.text) for s in sorted(sessions) for m in nb.moments(s)]


def report_check(c: Check, indent: str = "") -> bool:
    print(f"{indent}writes acknowledged {c.acknowledged}, present {c.present} ({c.view})")
    if not c.ok:
        print(f"{indent}!!! DATA LOSS ({c.view}): {c.problems()} !!!")
    return c.ok
