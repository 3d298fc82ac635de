"""Media decoding and signatures (issue 9): a resized, recompressed image and a re-encoded,
quieter clip are found first among 200 others; broken files are refused by name.

Every image and clip is generated here, seeded: no downloads."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from PIL import Image, ImageDraw

from agent_notebook.errors import InvalidInput
from agent_notebook.media import decode
from agent_notebook.media.decode import (
    CorruptMedia,
    decoders_available,
    load_audio,
    load_image,
    media_kind,
)
from agent_notebook.media.signatures import (
    audio_signature,
    distance,
    image_signature,
    rank_by_example,
    signature_kind,
)

RATE = 22050


def synthetic_image(seed: int, size: int = 256) -> Image.Image:
    """A gradient at a random angle under random shapes, lines and a word."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:size, 0:size] / size
    angle = rng.uniform(0, 2 * np.pi)
    ramp = np.cos(angle) * x + np.sin(angle) * y
    base = np.stack([(ramp * rng.uniform(-200, 200) + rng.uniform(0, 255)) for _ in range(3)])
    img = Image.fromarray(np.clip(base, 0, 255).astype(np.uint8).transpose(1, 2, 0), "RGB")
    draw = ImageDraw.Draw(img)
    for _ in range(int(rng.integers(3, 8))):
        box = sorted(rng.integers(0, size, 2)), sorted(rng.integers(0, size, 2))
        xy = (box[0][0], box[1][0], box[0][1] + 8, box[1][1] + 8)
        fill = tuple(int(v) for v in rng.integers(0, 256, 3))
        shape = rng.integers(0, 3)
        if shape == 0:
            draw.ellipse(xy, fill=fill)
        elif shape == 1:
            draw.rectangle(xy, fill=fill)
        else:
            draw.polygon([tuple(int(v) for v in rng.integers(0, size, 2)) for _ in range(3)], fill)
    for _ in range(int(rng.integers(0, 4))):
        draw.line([tuple(int(v) for v in rng.integers(0, size, 2)) for _ in range(2)], width=5)
    draw.text((int(rng.integers(0, size - 60)), int(rng.integers(0, size - 20))), f"n{seed}")
    return img


def synthetic_clip(seed: int, seconds: float = 3.0) -> np.ndarray:
    """Tones, a chirp, noise bursts and a rhythm, in random segments; peak 0.8."""
    rng = np.random.default_rng(10_000 + seed)
    t = np.arange(int(seconds * RATE)) / RATE
    clip = np.zeros_like(t)
    for _ in range(int(rng.integers(2, 5))):
        start, length = rng.uniform(0, seconds - 0.5), rng.uniform(0.3, seconds)
        on = (t >= start) & (t < start + length)
        clip += on * rng.uniform(0.2, 1) * np.sin(2 * np.pi * rng.uniform(250, 2200) * t)
    f0, f1 = rng.uniform(200, 2000, 2)
    clip += 0.5 * np.sin(2 * np.pi * (f0 * t + (f1 - f0) * t**2 / (2 * seconds)))
    for _ in range(int(rng.integers(1, 4))):
        start = rng.uniform(0, seconds - 0.2)
        burst = (t >= start) & (t < start + rng.uniform(0.05, 0.3))
        clip += burst * rng.standard_normal(len(t)) * 0.4
    clip *= 0.6 + 0.4 * np.sign(np.sin(2 * np.pi * rng.uniform(1, 6) * t))
    peak = float(np.abs(clip).max())
    return np.asarray(0.8 * clip / peak, dtype=np.float32)


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[tuple[int, str]]]:
    """The target (number 0) and 200 others, as stored signatures."""
    folder = tmp_path_factory.mktemp("images")
    stored = []
    for n in range(201):
        path = folder / f"{n}.png"
        synthetic_image(n).save(path)
        stored.append((n, image_signature(path)))
    return folder / "0.png", stored


@pytest.fixture(scope="module")
def clips(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[tuple[int, str]]]:
    folder = tmp_path_factory.mktemp("clips")
    stored = []
    for n in range(201):
        path = folder / f"{n}.wav"
        sf.write(path, synthetic_clip(n), RATE, subtype="PCM_16")
        stored.append((n, audio_signature(path)))
    return folder / "0.wav", stored


# -- found first --------------------------------------------------------------------------------


def test_image_resized_to_half_and_recompressed_is_found_first(
    images: tuple[Path, list[tuple[int, str]]], tmp_path: Path
) -> None:
    target, stored = images
    with Image.open(target) as img:
        img.resize((128, 128), Image.Resampling.LANCZOS).save(tmp_path / "q.jpg", quality=70)
    query = image_signature(tmp_path / "q.jpg")

    ranked = rank_by_example(query, stored, limit=5)

    assert ranked[0][0] == 0
    assert ranked[0][1] <= 0.15 < ranked[1][1]
    assert signature_kind(query) == "image"


@pytest.mark.parametrize("fmt", ["FLAC", "OGG", "MP3"])
def test_clip_reencoded_at_half_volume_is_found_first(
    clips: tuple[Path, list[tuple[int, str]]], tmp_path: Path, fmt: str
) -> None:
    if not decoders_available()[fmt.lower()]:
        pytest.skip(f"this libsndfile has no {fmt}")
    target, stored = clips
    samples, rate = sf.read(target, dtype="float32")
    query_path = tmp_path / f"q.{fmt.lower()}"
    sf.write(query_path, samples * 0.5, rate, format=fmt)
    query = audio_signature(query_path)

    ranked = rank_by_example(query, stored, limit=5)

    assert ranked[0][0] == 0, ranked
    assert ranked[0][1] < 0.3 < ranked[1][1]
    assert signature_kind(query) == "audio"


def test_volume_alone_leaves_the_fingerprint(tmp_path: Path) -> None:
    clip = synthetic_clip(7)
    sf.write(tmp_path / "loud.wav", clip, RATE, subtype="FLOAT")
    sf.write(tmp_path / "quiet.wav", clip * 0.25, RATE, subtype="FLOAT")
    assert (
        distance(audio_signature(tmp_path / "loud.wav"), audio_signature(tmp_path / "quiet.wav"))
        == 0.0
    )


def test_rank_by_example_orders_by_distance_then_number(
    images: tuple[Path, list[tuple[int, str]]],
) -> None:
    _, stored = images
    query = stored[3][1]
    doubled = [*stored, (500, query), (250, query)]
    ranked = rank_by_example(query, doubled, limit=len(doubled))

    assert [n for n, _ in ranked[:3]] == [3, 250, 500]
    assert [d for _, d in ranked] == sorted(d for _, d in ranked)
    assert ranked == sorted(ranked, key=lambda nd: (nd[1], nd[0]))
    # the same as a plain loop over distance()
    naive = sorted(((n, distance(query, s)) for n, s in doubled), key=lambda nd: (nd[1], nd[0]))
    assert ranked == naive
    assert rank_by_example(query, doubled, limit=0) == []


def test_audio_ranking_agrees_with_distance(clips: tuple[Path, list[tuple[int, str]]]) -> None:
    _, stored = clips
    query = stored[5][1]
    ranked = rank_by_example(query, stored, limit=10)
    naive = sorted(((n, distance(query, s)) for n, s in stored), key=lambda nd: (nd[1], nd[0]))
    assert ranked == naive[:10]


def test_audio_ranking_mixes_short_and_long_clips(tmp_path: Path) -> None:
    stored = []
    for n, seconds in enumerate([0.2, 1.0, 2.0, 5.0, 8.0, 12.0] * 3):
        clip = synthetic_clip(300 + n, max(seconds, 1.0))[: int(seconds * RATE)]
        sf.write(tmp_path / f"{n}.wav", clip, RATE)
        stored.append((n, audio_signature(tmp_path / f"{n}.wav")))
    for n in (0, 4, 5):
        query = stored[n][1]
        naive = sorted(((m, distance(query, s)) for m, s in stored), key=lambda p: (p[1], p[0]))
        assert rank_by_example(query, stored, limit=5) == naive[:5]
        assert naive[0] == (n, 0.0)


def test_other_kinds_in_stored_are_skipped(
    images: tuple[Path, list[tuple[int, str]]], clips: tuple[Path, list[tuple[int, str]]]
) -> None:
    mixed = images[1][:10] + clips[1][:10]
    ranked = rank_by_example(clips[1][2][1], mixed, limit=20)
    assert sorted(n for n, _ in ranked) == list(range(10))
    assert ranked[0] == (2, 0.0)


# -- distance ---------------------------------------------------------------------------------


def test_distance_properties(
    images: tuple[Path, list[tuple[int, str]]], clips: tuple[Path, list[tuple[int, str]]]
) -> None:
    for stored in (images[1], clips[1]):
        a, b = stored[1][1], stored[2][1]
        assert distance(a, a) == 0.0
        assert distance(a, b) == distance(b, a)
        assert 0.0 < distance(a, b) <= 1.0
    with pytest.raises(InvalidInput, match="cannot compare an image signature with an audio"):
        distance(images[1][0][1], clips[1][0][1])
    with pytest.raises(InvalidInput, match="unknown media signature"):
        signature_kind("md5:abc")
    with pytest.raises(InvalidInput, match="invalid image signature"):
        distance("ph1:xyz", images[1][0][1])
    with pytest.raises(InvalidInput, match="invalid audio signature"):
        distance("af1:!!!!", clips[1][0][1])


def test_unrelated_media_are_far_apart(
    images: tuple[Path, list[tuple[int, str]]], clips: tuple[Path, list[tuple[int, str]]]
) -> None:
    for stored in (images[1], clips[1]):
        far = [distance(stored[0][1], s) for _, s in stored[1:]]
        assert 0.3 < float(np.median(far)) < 0.7


# -- decoding and broken files ------------------------------------------------------------------


def test_kind_is_read_from_the_content(tmp_path: Path) -> None:
    synthetic_image(1).save(tmp_path / "photo.webp")
    synthetic_image(1).save(tmp_path / "misnamed.wav", format="PNG")
    sf.write(tmp_path / "clip.flac", synthetic_clip(1), RATE)
    assert media_kind(tmp_path / "photo.webp") == "image"
    assert media_kind(tmp_path / "misnamed.wav") == "image"
    assert media_kind(tmp_path / "clip.flac") == "audio"
    if decoders_available()["mp3"]:  # libsndfile writes bare MPEG frames, no ID3 tag
        sf.write(tmp_path / "clip.mp3", synthetic_clip(1), RATE)
        assert media_kind(tmp_path / "clip.mp3") == "audio"
        assert load_audio(tmp_path / "clip.mp3")[1] == RATE
    gray = load_image(tmp_path / "photo.webp")
    assert gray.dtype == np.float32 and gray.shape == (256, 256)
    samples, rate = load_audio(tmp_path / "clip.flac")
    assert samples.dtype == np.float32 and samples.ndim == 1 and rate == RATE
    assert len(samples) == 3 * RATE


def test_audio_read_is_capped(tmp_path: Path) -> None:
    sf.write(tmp_path / "long.wav", np.zeros(70 * 8000, np.float32) + 0.1, 8000)
    samples, rate = load_audio(tmp_path / "long.wav")
    assert (
        len(samples)
        == 60 * rate
        == len(load_audio(tmp_path / "long.wav", max_seconds=None)[0]) - 10 * rate
    )


def _half(path: Path, to: Path) -> Path:
    data = path.read_bytes()
    to.write_bytes(data[: len(data) // 2])
    return to


@pytest.mark.parametrize(
    ("name", "make", "problem"),
    [
        ("cut.png", lambda d: _half(d / "ok.png", d / "cut.png"), "damaged or truncated PNG"),
        ("cut.jpg", lambda d: _half(d / "ok.jpg", d / "cut.jpg"), "damaged or truncated JPEG"),
        ("cut.wav", lambda d: _half(d / "ok.wav", d / "cut.wav"), "truncated WAV"),
        ("cut.flac", lambda d: _half(d / "ok.flac", d / "cut.flac"), "truncated FLAC"),
        (
            "noise.png",
            lambda d: (d / "noise.png").write_bytes(np.random.default_rng(1).bytes(4000)),
            "not a PNG file",
        ),
        ("empty.jpg", lambda d: (d / "empty.jpg").write_bytes(b""), "empty file"),
        (
            "notes.wav",
            lambda d: (d / "notes.wav").write_text("not audio at all\n"),
            "not a WAV file",
        ),
        (
            "header.png",
            lambda d: (d / "header.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 40),
            "damaged or truncated PNG",
        ),
        (
            "header.ogg",
            lambda d: (d / "header.ogg").write_bytes(b"OggS" + b"\0" * 60),
            "damaged or truncated OGG",
        ),
    ],
)
def test_broken_media_is_refused_naming_the_file(
    tmp_path: Path, name: str, make: object, problem: str
) -> None:
    synthetic_image(2).save(tmp_path / "ok.png")
    synthetic_image(2).convert("RGB").save(tmp_path / "ok.jpg", quality=80)
    sf.write(tmp_path / "ok.wav", synthetic_clip(2), RATE)
    sf.write(tmp_path / "ok.flac", synthetic_clip(2), RATE)
    assert callable(make)
    make(tmp_path)
    path = tmp_path / name
    sign = image_signature if name.endswith((".png", ".jpg")) else audio_signature
    with pytest.raises(CorruptMedia, match=problem) as caught:
        sign(path)
    assert str(path) in str(caught.value)
    assert "Nothing was recorded" in str(caught.value)
    assert caught.value.path == str(path)


def test_missing_unsupported_and_wrong_kind(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="no such file"):
        media_kind(tmp_path / "nope.png")
    (tmp_path / "doc.txt").write_text("hello")
    with pytest.raises(InvalidInput, match="not a supported media file") as caught:
        media_kind(tmp_path / "doc.txt")
    assert not isinstance(caught.value, CorruptMedia)
    sf.write(tmp_path / "clip.wav", synthetic_clip(3), RATE)
    with pytest.raises(CorruptMedia, match=r"this is audio \(WAV\), not an image"):
        image_signature(tmp_path / "clip.wav")


def test_decompression_bombs_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synthetic_image(4, size=64).save(tmp_path / "big.png")
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 3000)  # 4096 pixels: warned (> limit)
    with pytest.raises(CorruptMedia, match="too large to decode safely") as caught:
        load_image(tmp_path / "big.png")
    assert str(tmp_path / "big.png") in str(caught.value)
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1000)  # > twice the limit: Pillow's error
    with pytest.raises(CorruptMedia, match="too large to decode safely"):
        image_signature(tmp_path / "big.png")


def test_stdlib_wav_reader_matches_soundfile(tmp_path: Path) -> None:
    """The fallback for an installation without soundfile reads the same samples."""
    clip = synthetic_clip(5)
    for subtype in ("PCM_16", "PCM_24", "PCM_U8"):
        path = tmp_path / f"{subtype}.wav"
        sf.write(
            path,
            np.stack([clip, -clip], axis=1) if subtype == "PCM_24" else clip,
            RATE,
            subtype=subtype,
        )
        ours, rate = decode._load_wav_stdlib(path, None)
        theirs, _ = load_audio(path)
        assert rate == RATE
        np.testing.assert_allclose(ours, theirs, atol=1e-2 if subtype == "PCM_U8" else 1e-6)


def test_decoders_available_names_every_format() -> None:
    available = decoders_available()
    assert set(available) == {"png", "jpeg", "webp", "wav", "flac", "ogg", "mp3"}
    assert available["png"] and available["jpeg"] and available["wav"]
