"""Modality opt-outs (``privacy.modalities``): an opted-out modality is never written.

Each test records on a real notebook (SQLite file, and the YAML layout), then searches the
bytes of every file under the home (database, WAL, YAML files, vector files, the media
store) for a marker only the opted-out value holds (the attached files carry theirs inside,
in a PNG text chunk and a WAV comment). A control run with the modality on finds the
marker, so the search can see it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from PIL import Image, PngImagePlugin

from agent_notebook import Notebook
from agent_notebook.config import Modalities, NotebookConfig, PrivacySettings, write_config
from agent_notebook.errors import InvalidInput
from agent_notebook.model import DEFAULT_IMPORTANCE, Moment
from agent_notebook.privacy.audit import AUDIT_WHO

TEXT_MARKER = "Zqxtextmarker"
AUDIO_MARKER = "zqxaudiomarker"
IMAGE_MARKER = "zqximagemarker"
KINDS = ["sqlite", "yaml"]


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def lexical_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_NOTEBOOK_EMBEDDER", "none")


def home_with(tmp_path: Path, kind: str, **modalities: bool) -> Path:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    privacy = PrivacySettings(modalities=Modalities(**modalities))
    write_config(home, NotebookConfig(backend=kind, privacy=privacy))
    return home


def files_holding(home: Path, marker: str) -> list[str]:
    """The files under ``home`` whose bytes contain ``marker`` (in any case)."""
    needles = {marker.encode(), marker.lower().encode(), marker.upper().encode()}
    return [
        str(path.relative_to(home))
        for path in sorted(home.rglob("*"))
        if path.is_file() and any(n in path.read_bytes() for n in needles)
    ]


def marked_clip(path: Path, marker: str, seed: int) -> Path:
    """A WAV file of tones whose comment is ``marker``."""
    tones = np.sin(np.arange(16_000 * 2) * (0.05 + seed / 100)) * 0.3
    with sf.SoundFile(path, "w", 16_000, 1, subtype="PCM_16") as out:
        out.comment = marker
        out.write(tones.astype(np.float32))
    return path


def marked_image(path: Path, marker: str, seed: int) -> Path:
    """A PNG picture whose text chunk is ``marker``."""
    info = PngImagePlugin.PngInfo()
    info.add_text("Comment", marker)
    pixels = (np.random.default_rng(seed).random((8, 8, 3)) * 255).astype(np.uint8)
    Image.fromarray(pixels).resize((64, 64)).save(path, pnginfo=info)
    return path


def draft(n: int, files: Path) -> dict[str, object]:
    files.mkdir(exist_ok=True)
    return {
        "text": f"{TEXT_MARKER} {n}: call Ana Lopez about the Lyon hotel at 10am",
        "speaker": "Ana",
        "audio_file": str(marked_clip(files / f"clip-{n}.wav", f"{AUDIO_MARKER}-{n}", n)),
        "image_file": str(marked_image(files / f"photo-{n}.png", f"{IMAGE_MARKER}-{n}", n)),
        "actions": [{"tool": "calendar.add", "arguments": {"slot": "morning"}, "result": "ok"}],
    }


def record_two_sessions(home: Path) -> tuple[list[Moment], list[str]]:
    """Three moments in one session (two calls) and one in another; returns the moments and
    the audit entries of the privacy settings, per session in order."""
    files = home.parent / "files"  # the attached files, outside the home
    with Notebook.open(home) as nb:
        first = nb.start_session("Plan the trip")
        moments = nb.record_many(first.id, [draft(1, files), draft(2, files)])
        moments += nb.record_many(first.id, [draft(3, files)])
        second = nb.start_session("Another day")
        moments += [nb.record(second.id, **draft(4, files))]
        nb.drain()
        audit = [
            d.what
            for s in (first.id, second.id)
            for d in nb.get_session(s).decisions
            if d.who == AUDIT_WHO
        ]
    return moments, audit


def test_control_every_modality_on_is_written(
    tmp_path: Path, kind: str, lexical_only: None
) -> None:
    home = home_with(tmp_path, kind)
    moments, audit = record_two_sessions(home)
    for marker in (TEXT_MARKER, AUDIO_MARKER, IMAGE_MARKER):
        assert files_holding(home, marker), marker
    assert moments[0].metadata.concepts and audit == []


def test_text_off_writes_no_text_nor_what_derives_from_it(
    tmp_path: Path, kind: str, lexical_only: None
) -> None:
    home = home_with(tmp_path, kind, text=False)
    moments, audit = record_two_sessions(home)
    assert files_holding(home, TEXT_MARKER) == []
    # nor the words the concepts and retrieval keys would have been made of
    assert files_holding(home, "Lopez") == [] and files_holding(home, "10am") == []
    for m in moments:
        assert m.content.text == "" and m.metadata.concepts == []
        assert m.metadata.retrieval_keys == [] and m.metadata.importance == DEFAULT_IMPORTANCE
        assert m.speaker == "Ana" and m.actions[0].tool == "calendar.add"  # metadata stays
    assert files_holding(home, AUDIO_MARKER) and files_holding(home, IMAGE_MARKER)
    # said once per session in its audit log, never per moment
    assert (
        audit
        == [
            "privacy: text not recorded (privacy.modalities.text is false in config.yaml); "
            "said once per session"
        ]
        * 2
    )
    with Notebook.open(home) as nb:
        assert nb.search("Lopez hotel") == []  # nothing to find it by, and no error
        assert nb.concepts() == []


def test_given_concepts_and_keys_are_dropped_with_the_text(
    tmp_path: Path, kind: str, lexical_only: None
) -> None:
    home = home_with(tmp_path, kind, text=False)
    with Notebook.open(home) as nb:
        session = nb.start_session()
        moment = nb.record(
            session.id, TEXT_MARKER, concepts=[TEXT_MARKER], retrieval_keys=[f"{TEXT_MARKER}-1"]
        )
        assert moment.metadata.concepts == [] and moment.metadata.retrieval_keys == []
    assert files_holding(home, TEXT_MARKER) == []


@pytest.mark.parametrize(
    ("modality", "marker", "field"),
    [("audio", AUDIO_MARKER, "audio_path"), ("image", IMAGE_MARKER, "image_path")],
)
def test_audio_or_image_off_writes_no_path(
    tmp_path: Path, kind: str, lexical_only: None, modality: str, marker: str, field: str
) -> None:
    home = home_with(tmp_path, kind, **{modality: False})
    moments, audit = record_two_sessions(home)
    assert files_holding(home, marker) == []
    for m in moments:
        assert getattr(m, field) is None and getattr(m.content, f"{modality}_signature") is None
        other = "image" if modality == "audio" else "audio"
        assert getattr(m, f"{other}_path") and getattr(m.content, f"{other}_signature")
        assert m.content.text.startswith(TEXT_MARKER)  # the other modalities are kept
    assert files_holding(home, TEXT_MARKER)
    assert (
        audit
        == [
            f"privacy: {modality} not recorded (privacy.modalities.{modality} is false in "
            "config.yaml); said once per session"
        ]
        * 2
    )


def vectors_in(home: Path, kind: str) -> int:
    if kind == "sqlite":
        with sqlite3.connect(home / "notebook.db") as conn:
            return int(conn.execute("SELECT count(*) FROM moment_vectors").fetchone()[0])
    return len(list(home.rglob("*.vec"))) + (home / "embeddings.faiss").exists()


@pytest.mark.parametrize("embeddings", [True, False], ids=["control", "off"])
def test_embeddings_off_makes_no_vector_and_search_stays_lexical(
    tmp_path: Path, kind: str, embeddings: bool
) -> None:
    """With the offline embedder installed, a notebook embeds what it records in the
    background; with embeddings off it never does, and search finds by words alone."""
    home = home_with(tmp_path, kind, embeddings=embeddings)
    with Notebook.open(home) as nb:  # background embedding on, the default embedder
        session = nb.start_session()
        nb.record_many(session.id, [draft(1, tmp_path / "files"), draft(2, tmp_path / "files")])
        nb.drain()
        assert (nb.semantic is None) is not embeddings
        [hit] = nb.search("Lyon hotel", limit=1)  # hybrid, the default mode
        assert hit.moment.content.text.startswith(TEXT_MARKER)
        assert all(m.content.multimodal_embedding is None for m in nb.moments())
        if not embeddings:
            assert nb.unembedded() == 0
            with pytest.raises(InvalidInput, match="embedder"):
                nb.reindex()
            with pytest.raises(InvalidInput, match="embedder"):
                nb.search("Lyon", mode="vector")
    assert (vectors_in(home, kind) > 0) is embeddings


@pytest.fixture
def yaml_home(tmp_path: Path) -> Iterator[Path]:
    yield home_with(tmp_path, "yaml", text=False, audio=False, image=False, embeddings=False)


def test_everything_off_leaves_the_moment_skeleton(yaml_home: Path, lexical_only: None) -> None:
    moments, audit = record_two_sessions(yaml_home)
    for marker in (TEXT_MARKER, AUDIO_MARKER, IMAGE_MARKER):
        assert files_holding(yaml_home, marker) == []
    assert [m.id for m in moments] == ["m_1", "m_2", "m_3", "m_4"]
    assert len(audit) == 6  # text, audio, image: once in each of the two sessions
    assert not list(yaml_home.rglob("*.vec")) and not (yaml_home / "embeddings.faiss").exists()
