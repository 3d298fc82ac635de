"""Media attached to moments (issue 9, part B): record an image or audio clip (library, CLI in
a subprocess, HTTP on a real server), the owner-only content-addressed store, corrupt files
refused with nothing recorded, the audio opt-out leaving no trace on disk, search by example
(alone, with words, with a session filter), export/import carrying the files, redaction
removing them, and a user's multimodal embedder filling ``multimodal_embedding``.

Every media file is generated here (Pillow, numpy, soundfile); nothing is mocked.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import stat
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path

import httpx
import numpy as np
import pytest
import soundfile as sf
from PIL import Image

from agent_notebook import Notebook
from agent_notebook import config as cfg
from agent_notebook.embed.multimodal import NO_MULTIMODAL_EMBEDDER, MultimodalEmbedder
from agent_notebook.errors import InvalidInput, NotFound
from agent_notebook.media.decode import CorruptMedia
from agent_notebook.media.signatures import audio_signature, image_signature
from agent_notebook.media.store import MAX_MEDIA_BYTES, MediaStore
from agent_notebook.storage import YamlDirBackend
from tests.support.clirun import text_cli
from tests.support.media import make_image
from tests.support.server import Server

NO_EMBEDDER = {cfg.EMBEDDER_ENV: "none"}

RATE = 16_000


# -- generated media --------------------------------------------------------------------------


def recompressed(source: Path, path: Path) -> Path:
    """``source`` at half size, saved as JPEG."""
    with Image.open(source) as img:
        half = img.convert("RGB").resize((img.width // 2, img.height // 2))
        half.save(path, "JPEG", quality=70)
    return path


def make_clip(path: Path, seed: int, seconds: float = 3.0, volume: float = 1.0) -> Path:
    """A clip of random tones changing every 0.25 s (each seed a different melody)."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(RATE * 0.25)) / RATE
    notes = [
        np.sin(2 * np.pi * f * t) * 0.3 + np.sin(2 * np.pi * 2.5 * f * t) * 0.1
        for f in rng.uniform(200, 2000, int(seconds * 4))
    ]
    sf.write(path, (np.concatenate(notes) * volume).astype(np.float32), RATE)
    return path


def all_files(home: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in home.rglob("*") if p.is_file()}


@pytest.fixture(autouse=True)
def lexical_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """No text embedder: these tests are about media, and run faster without the model."""
    monkeypatch.setenv(cfg.EMBEDDER_ENV, "none")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def nb(home: Path) -> Iterator[Notebook]:
    with Notebook.open(home) as notebook:
        yield notebook


def counts(nb: Notebook) -> tuple[int, list[str]]:
    return nb.backend.count_moments(), nb.media_store().names()


# -- record -----------------------------------------------------------------------------------


def test_an_image_is_copied_signed_and_stored_once_owner_only(
    nb: Notebook, home: Path, tmp_path: Path
) -> None:
    picture = make_image(tmp_path / "Holiday Photo.PNG", 1)
    s = nb.start_session("Trip")
    first = nb.record(s.id, "The harbour at dusk", image=picture, speaker="ana")
    again = nb.record(s.id, image=str(picture))  # no text: the image alone
    digest = hashlib.sha256(picture.read_bytes()).hexdigest()
    assert first.image_path == again.image_path == f"media/{digest[:2]}/{digest}.png"
    assert first.content.image_signature == image_signature(picture)
    assert first.audio_path is None and first.content.audio_signature is None
    assert again.content.text == "" and nb.get_moment(again.id) == again
    assert nb.media_store().names() == [first.image_path]  # a duplicate is stored once
    stored = home / first.image_path
    assert stored.read_bytes() == picture.read_bytes()
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600
    for d in (home / "media", stored.parent):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700
    assert not [p for p in (home / "media").rglob("*") if p.name.startswith(".")]  # no temp


def test_an_audio_clip_is_recorded_in_a_batch_with_text_only_moments(
    nb: Notebook, tmp_path: Path
) -> None:
    clip = make_clip(tmp_path / "memo.wav", 2)
    s = nb.start_session("Voice notes")
    plain, voiced = nb.record_many(
        s.id, [{"text": "before the memo"}, {"text": "the memo", "audio_file": str(clip)}]
    )
    assert plain.audio_path is None and plain.content.audio_signature is None
    assert voiced.audio_path is not None and voiced.audio_path.endswith(".wav")
    assert voiced.content.audio_signature == audio_signature(clip)
    assert nb.media_store().path_of(voiced.audio_path).read_bytes() == clip.read_bytes()


def test_a_moved_home_still_finds_its_media(home: Path, tmp_path: Path) -> None:
    with Notebook.open(home) as nb:
        s = nb.start_session("t")
        moment = nb.record(s.id, image=make_image(tmp_path / "a.png", 3))
    moved = tmp_path / "elsewhere"
    home.rename(moved)
    with Notebook.open(moved) as nb:
        found = nb.get_moment(moment.id)
        assert found.image_path is not None
        assert nb.media_store().verify(found.image_path).parent.parent == moved / "media"


@pytest.mark.parametrize("damage", ["truncated", "garbage", "wrong kind"])
def test_a_corrupt_file_is_named_and_records_nothing(
    nb: Notebook, tmp_path: Path, damage: str
) -> None:
    s = nb.start_session("t")
    good = make_image(tmp_path / "good.png", 4)
    nb.record(s.id, "already here", image=good)
    bad = tmp_path / f"bad-{damage.replace(' ', '-')}.png"
    if damage == "truncated":
        bad.write_bytes(good.read_bytes()[:200])
    elif damage == "garbage":
        bad.write_bytes(b"\x89PNG\r\n\x1a\n" + os.urandom(500))
    else:
        bad = make_clip(tmp_path / "a-clip.wav", 5)  # an audio file given as an image
    before = counts(nb)
    other = make_image(tmp_path / "other.png", 6)
    with pytest.raises(InvalidInput) as err:  # CorruptMedia is an InvalidInput
        nb.record_many(s.id, [{"image_file": str(other)}, {"image_file": str(bad)}])
    assert bad.name in str(err.value)
    assert counts(nb) == before  # the good file of the same batch was not copied either
    assert nb.get_session(s.id).stats.moments == 1


def test_missing_directory_and_oversized_files_are_refused(nb: Notebook, tmp_path: Path) -> None:
    s = nb.start_session("t")
    before = counts(nb)
    big = tmp_path / "big.png"
    with big.open("wb") as f:
        f.truncate(MAX_MEDIA_BYTES + 1)
    cases = {tmp_path / "missing.png": "does not exist", tmp_path: "not a regular file"}
    cases[big] = "at most"
    for path, says in cases.items():
        with pytest.raises(InvalidInput, match=says):
            nb.record(s.id, "x", image=path)
    assert counts(nb) == before


def test_a_failed_transaction_removes_the_file_it_copied(nb: Notebook, tmp_path: Path) -> None:
    s = nb.start_session("t")
    kept = nb.record(s.id, image=make_image(tmp_path / "kept.png", 7))
    with pytest.raises(NotFound):  # fails inside the transaction, after the copy
        nb.record(s.id, "x", image=make_image(tmp_path / "new.png", 8), parent="m_999")
    with pytest.raises(NotFound):  # the same file as a recorded moment: it stays
        nb.record(s.id, "x", image=tmp_path / "kept.png", parent="m_999")
    assert nb.media_store().names() == [kept.image_path]
    assert nb.backend.count_moments() == 1


def test_media_need_a_notebook_with_a_home(tmp_path: Path) -> None:
    from agent_notebook.storage import MemoryBackend

    nb = Notebook(MemoryBackend(), embedder=None)
    s = nb.start_session("t")
    with pytest.raises(InvalidInput, match="home"):
        nb.record(s.id, image=make_image(tmp_path / "a.png", 9))
    assert nb.backend.count_moments() == 0


# -- the opt-out ------------------------------------------------------------------------------


def test_audio_opted_out_leaves_no_trace_on_disk(home: Path, tmp_path: Path) -> None:
    with Notebook.open(home) as nb:  # makes the home; then audio is opted out
        pass
    conf = cfg.load_config(home)
    conf.privacy.modalities.audio = False
    cfg.write_config(home, conf)
    clip = make_clip(tmp_path / "confidential-voicememo.wav", 10)
    signature = audio_signature(clip)
    digest = hashlib.sha256(clip.read_bytes()).hexdigest()
    with Notebook.open(home) as nb:
        s = nb.start_session("t")
        moment = nb.record(s.id, "said aloud", audio=clip)
        assert moment.audio_path is None and moment.content.audio_signature is None
        assert moment.content.text == "said aloud"  # the text is kept
        whats = [d.what for d in nb.get_session(s.id).decisions]
        assert any("audio not recorded" in w for w in whats)  # and says so
        assert nb.media_store().names() == []
    assert not (home / "media").exists()
    needles = [signature[:40], signature[-40:], digest, "confidential-voicememo", "media/"]
    for name, data in all_files(home).items():
        for needle in needles:
            assert needle.encode() not in data, f"{needle} found in {name}"
    samples = clip.read_bytes()[1000:1064]  # a run of the audio's own bytes
    assert not [n for n, data in all_files(home).items() if samples in data]


# -- search by example --------------------------------------------------------------------------


def test_search_by_image_finds_the_recompressed_copy_first(nb: Notebook, tmp_path: Path) -> None:
    trip, work = nb.start_session("Trip"), nb.start_session("Work")
    drafts = [
        {"text": f"picture number {n}", "image_file": str(make_image(tmp_path / f"{n}.png", n))}
        for n in range(100, 300)  # 200 other images
    ]
    nb.record_many(trip.id, drafts)
    target = make_image(tmp_path / "harbour.png", 42)
    wanted = nb.record(trip.id, "the harbour at dusk", image=target)
    in_work = nb.record(work.id, "slides about the harbour", image=target)
    example = recompressed(target, tmp_path / "harbour-small.jpg")

    hits = nb.search("", image=example, limit=5)
    assert {h.moment.id for h in hits[:2]} == {wanted.id, in_work.id}
    assert hits[0].explain["media_rank"] == 1.0 and hits[0].explain["media_share"] == 1.0
    assert nb.search("", image=example, session=trip.id)[0].moment.id == wanted.id
    with_words = nb.search("slides", image=example, limit=3)
    assert with_words[0].moment.id == in_work.id  # words and picture agree on it
    assert with_words[0].explain["media_share"] < 1.0
    assert nb.search("", image=example, speaker="nobody") == []
    with pytest.raises(InvalidInput, match="not both"):
        nb.search("", image=example, audio=example)
    bad = tmp_path / "cut.jpg"
    bad.write_bytes(example.read_bytes()[:100])
    with pytest.raises(CorruptMedia, match=r"cut\.jpg"):
        nb.search("harbour", image=bad)


def test_search_by_audio_finds_the_quieter_reencoded_clip_first(
    nb: Notebook, tmp_path: Path
) -> None:
    s = nb.start_session("Voice")
    drafts = [{"audio_file": str(make_clip(tmp_path / f"{n}.wav", n))} for n in range(200)]
    nb.record_many(s.id, drafts)
    target = nb.record(s.id, "the tune", audio=make_clip(tmp_path / "tune.wav", 9999))
    nb.record(s.id, "an image is not audio", image=make_image(tmp_path / "i.png", 99))
    example = make_clip(tmp_path / "tune-quiet.flac", 9999, volume=0.5)
    hits = nb.search("", audio=example, limit=3)
    assert hits[0].moment.id == target.id
    assert all(h.moment.audio_path is not None for h in hits)


# -- export, import, redact -------------------------------------------------------------------


def test_export_and_import_carry_the_media(nb: Notebook, tmp_path: Path) -> None:
    s = nb.start_session("t")
    picture = make_image(tmp_path / "p.png", 11)
    moment = nb.record(s.id, "a picture", image=picture)
    voiced = nb.record(s.id, "a clip", audio=make_clip(tmp_path / "c.wav", 11))
    out = tmp_path / "export"
    target = YamlDirBackend(out)
    try:
        nb.export_to(target, media_to=out)
    finally:
        target.close()
    assert moment.image_path is not None and voiced.audio_path is not None
    assert (out / moment.image_path).read_bytes() == picture.read_bytes()

    with Notebook.open(tmp_path / "other") as other:
        source = YamlDirBackend(out)
        try:
            other.import_from(source, media_from=out)
        finally:
            source.close()
        assert other.media_store().names() == sorted([moment.image_path, voiced.audio_path])
        hits = other.search("", image=picture)
        assert hits[0].moment.id == moment.id

    # A file changed on the way is refused, by its SHA-256, and nothing is imported.
    (out / moment.image_path).write_bytes(b"not the picture")
    with Notebook.open(tmp_path / "third") as third:
        source = YamlDirBackend(out)
        try:
            with pytest.raises(Exception, match="SHA-256"):
                third.import_from(source, media_from=out)
        finally:
            source.close()
        assert third.backend.count_moments() == 0 and third.media_store().names() == []


def test_redact_removes_the_file_unless_another_moment_has_it(
    nb: Notebook, home: Path, tmp_path: Path
) -> None:
    s = nb.start_session("t")
    shared = make_image(tmp_path / "shared.png", 12)
    one, two = nb.record(s.id, "one", image=shared), nb.record(s.id, "two", image=shared)
    alone = nb.record(s.id, "alone", audio=make_clip(tmp_path / "alone.wav", 12))
    assert one.image_path is not None and alone.audio_path is not None

    gone = nb.redact(one.id, "private")
    assert gone.image_path is None and gone.content.image_signature is None
    assert (home / one.image_path).exists()  # still the image of `two`
    nb.redact(two.id, "private")
    assert not (home / one.image_path).exists()
    nb.redact(alone.id, "private")
    assert nb.media_store().names() == []
    signatures = [one.content.image_signature, alone.content.audio_signature]
    for name, data in all_files(home).items():
        for sig in signatures:
            assert sig is not None and sig.encode() not in data, name
    assert nb.search("", image=shared) == []


def test_forget_removes_the_media_of_the_moments_it_redacts(
    nb: Notebook, home: Path, tmp_path: Path
) -> None:
    s = nb.start_session("t")
    tied = nb.record(s.id, "Photo of the marmalade jar", image=make_image(tmp_path / "j.png", 14))
    kept = nb.record(s.id, "Photo of the bridge", image=make_image(tmp_path / "b.png", 15))
    report = nb.forget("marmalade", "private")
    assert report.moments == [tied.id]
    assert nb.media_store().names() == [kept.image_path]
    assert nb.get_moment(tied.id).image_path is None


# -- the multimodal embedder ----------------------------------------------------------------------


class ColorHistogram:
    """A user's tiny multimodal embedder: an image's normalised 4x4x4 colour histogram."""

    model_id = "test/color-histogram-64"
    dim = 64

    def embed_image(self, path: Path) -> Sequence[float]:
        with Image.open(path) as img:
            rgb = np.asarray(img.convert("RGB").resize((32, 32))) // 64
        bins = rgb[..., 0] * 16 + rgb[..., 1] * 4 + rgb[..., 2]
        hist = np.bincount(bins.ravel(), minlength=64).astype(np.float64)
        return [float(x) for x in hist / np.linalg.norm(hist)]


def test_a_multimodal_embedder_fills_the_embedding(home: Path, tmp_path: Path) -> None:
    embedder = ColorHistogram()
    assert isinstance(embedder, MultimodalEmbedder)
    with Notebook.open(home) as opened:
        backend, conf = opened.backend, opened.config
        nb = Notebook(backend, home=home, config=conf, embedder=None, multimodal_embedder=embedder)
        s = nb.start_session("t")
        picture = make_image(tmp_path / "p.png", 13)
        moment = nb.record(s.id, image=picture)
        assert moment.content.multimodal_embedding == pytest.approx(embedder.embed_image(picture))
        voiced = nb.record(s.id, audio=make_clip(tmp_path / "c.wav", 13))
        assert voiced.content.multimodal_embedding is None  # it has no embed_audio
        plain = Notebook(backend, home=home, config=conf, embedder=None)
        bare = plain.record(s.id, image=picture)
        assert bare.content.multimodal_embedding is None


# -- the CLI and the HTTP API -------------------------------------------------------------------


def cli(home: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return text_cli(home, *args, stdin=stdin, env=NO_EMBEDDER)


def test_cli_records_and_searches_by_example(home: Path, tmp_path: Path) -> None:
    pictures = [make_image(tmp_path / f"{n}.png", n) for n in range(20, 30)]
    made = cli(home, "record", "--task", "Photos", "--image", str(pictures[0]), "--format", "json")
    assert made.returncode == 0, made.stderr
    first = json.loads(made.stdout)[0]
    session = first["session"]
    assert first["image_path"].startswith("media/") and first["content"]["image_signature"]
    for picture in pictures[1:]:
        body = json.dumps({"text": f"photo {picture.stem}", "speaker": "ana"})
        done = cli(home, "record", "--session", session, "--image", str(picture), stdin=body)
        assert done.returncode == 0, done.stderr
    clip = make_clip(tmp_path / "c.wav", 20)
    assert cli(home, "record", "--session", session, "--audio", str(clip)).returncode == 0

    example = recompressed(pictures[5], tmp_path / "small.jpg")
    found = cli(home, "search", "--image", str(example), "--session", session, "--format", "json")
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)[0]["moment"]["content"]["text"] == "photo 25"
    explained = cli(
        home,
        "search",
        "photo",
        "--image",
        str(example),
        "--speaker",
        "ana",
        "--explain",
        "--format",
        "json",
    )  # (the table of --explain squeezes its headers at the test's terminal width)
    assert explained.returncode == 0, explained.stderr
    assert "media_share" in json.loads(explained.stdout)[0]["explain"]

    bad = tmp_path / "broken.png"
    bad.write_bytes(pictures[0].read_bytes()[:64])
    refused = cli(home, "record", "--session", session, "--image", str(bad))
    assert refused.returncode != 0 and "broken.png" in refused.stderr
    assert cli(home, "search").returncode == 2  # neither words nor an example
    doctor = cli(home, "doctor", "--format", "json")
    report = json.loads(doctor.stdout)
    assert report["multimodal embedder"] == NO_MULTIMODAL_EMBEDDER
    assert report["media files"] == "11 in media/"
    assert "png" in report["media decoders"].lower()


def test_http_upload_record_and_download(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert cli(home, "init").returncode == 0
    picture = make_image(tmp_path / "upload.png", 31)
    server = Server(home, tmp_path / "server.log")
    try:
        with server.client() as api:
            session = api.post("/api/sessions", json={"task": "Uploads"}).json()["id"]
            with picture.open("rb") as f:
                made = api.post(
                    f"/api/sessions/{session}/moments/media",
                    files={"file": ("upload.png", f, "image/png")},
                    data={"text": "uploaded", "speaker": "ana"},
                )
            assert made.status_code == 201, made.text
            moment = made.json()
            assert moment["image_path"].startswith("media/") and moment["speaker"] == "ana"
            got = api.get(f"/api/moments/{moment['id']}/media")
            assert got.status_code == 200 and got.content == picture.read_bytes()
            assert got.headers["content-type"] == "image/png"

            clip = io.BytesIO()
            sf.write(clip, np.zeros(RATE, np.float32) + 0.1, RATE, format="WAV")
            audio = api.post(
                f"/api/sessions/{session}/moments/media",
                files={"file": ("x.wav", clip.getvalue(), "audio/wav")},
            )
            assert audio.status_code == 201, audio.text
            got = api.get(f"/api/moments/{audio.json()['id']}/media", params={"kind": "audio"})
            assert got.status_code == 200 and got.content == clip.getvalue()

            broken = api.post(
                f"/api/sessions/{session}/moments/media",
                files={"file": ("broken.png", picture.read_bytes()[:80], "image/png")},
            )
            assert broken.status_code == 422 and "PNG" in broken.text
            local = api.post(f"/api/sessions/{session}/moments", json={"image_file": str(picture)})
            assert local.status_code == 422 and "upload" in local.text
            text_only = api.post(f"/api/sessions/{session}/moments", json={"text": "no media"})
            assert api.get(f"/api/moments/{text_only.json()['id']}/media").status_code == 404
            assert len(api.get("/api/moments", params={"limit": 10}).json()["items"]) == 3
        guest = cli(home, "token", "create", "--guest", "viewer").stdout.strip()
        with httpx.Client(base_url=server.url, timeout=30) as anon:
            url = f"/api/moments/{moment['id']}/media"
            assert anon.get(url).status_code == 401
            assert anon.get(url, headers={"Authorization": f"Bearer {guest}"}).status_code == 403
    finally:
        server.stop()
    assert MediaStore(home).names() == sorted([moment["image_path"], audio.json()["audio_path"]])
