"""Decoding the media a moment may carry: images (PNG, JPEG, WebP) with Pillow, audio (WAV,
FLAC, OGG, MP3) with libsndfile through ``soundfile`` (stdlib :mod:`wave` reads WAV when
``soundfile`` is missing).

The type is read from the file's first bytes, not only its name, and every decoder failure
becomes a :class:`CorruptMedia` naming the file, what is wrong with it and how to fix it,
before anything is recorded. Two guards keep a hostile file from exhausting memory: Pillow's
decompression-bomb limit (``Image.MAX_IMAGE_PIXELS``, 89 million pixels by default; above it
an image is refused) and a cap on the audio read (the first :data:`MAX_AUDIO_SECONDS`).
"""

from __future__ import annotations

import struct
import warnings
import wave
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from PIL import Image, features

from ..errors import CorruptMedia, InvalidInput

try:
    import soundfile as _sf
except (ImportError, OSError):  # OSError: the package is there but libsndfile is not
    _sf = None

__all__ = [
    "AUDIO_SUFFIXES",
    "IMAGE_SUFFIXES",
    "MAX_AUDIO_SECONDS",
    "CorruptMedia",
    "decoders_available",
    "load_audio",
    "load_image",
    "media_kind",
]

IMAGE_SUFFIXES: frozenset[str] = frozenset({".png", ".jpg", ".jpeg", ".webp"})
AUDIO_SUFFIXES: frozenset[str] = frozenset({".wav", ".flac", ".ogg", ".mp3"})

MAX_AUDIO_SECONDS = 60.0
""":func:`load_audio` reads at most this much from the start of a file (a guard: an hour of
44.1 kHz audio would be 600 MB of samples)."""

Format = Literal["png", "jpeg", "webp", "wav", "flac", "ogg", "mp3"]

_KIND: dict[str, Literal["image", "audio"]] = {
    "png": "image",
    "jpeg": "image",
    "webp": "image",
    "wav": "audio",
    "flac": "audio",
    "ogg": "audio",
    "mp3": "audio",
}
_NAME = {"png": "PNG", "jpeg": "JPEG", "webp": "WebP", "wav": "WAV", "flac": "FLAC"}
_NAME |= {"ogg": "OGG", "mp3": "MP3"}
_BY_SUFFIX: dict[str, Format] = {
    ".png": "png",
    ".jpg": "jpeg",
    ".jpeg": "jpeg",
    ".webp": "webp",
    ".wav": "wav",
    ".flac": "flac",
    ".ogg": "ogg",
    ".mp3": "mp3",
}
_PILLOW_FORMAT = {"png": "PNG", "jpeg": "JPEG", "webp": "WEBP"}
_SNDFILE_FORMAT = {"wav": "WAV", "flac": "FLAC", "ogg": "OGG", "mp3": "MP3"}


def media_kind(path: Path) -> Literal["image", "audio"]:
    """``"image"`` or ``"audio"``, read from the file's first bytes.

    Raises :class:`CorruptMedia` for a file named as media whose content is not (empty, or
    other bytes), and :class:`InvalidInput` for a missing file or an unsupported type.
    """
    return _KIND[_sniff(path)]


def load_image(path: Path, *, draft: tuple[int, int] | None = None) -> npt.NDArray[np.float32]:
    """The image as a 2-D grayscale float32 array (0..255; transparency over white).

    ``draft`` lets the decoder work at a reduced scale where the format allows (JPEG's DCT
    scaling) while keeping at least that size: much faster for a large photo when only a
    thumbnail is needed.
    """
    fmt = _sniff(path)
    if _KIND[fmt] != "image":
        raise _wrong_kind(path, fmt, "an image (PNG, JPEG or WebP)")
    if fmt == "webp" and not features.check("webp"):
        raise InvalidInput(
            f"{path}: this Pillow build cannot decode WebP; install a Pillow wheel with WebP "
            f"support or convert the image to PNG"
        )
    try:
        with warnings.catch_warnings():
            # Pillow warns above MAX_IMAGE_PIXELS and raises above twice that: refuse both
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(path, formats=[_PILLOW_FORMAT[fmt]]) as img:
                if draft is not None:
                    img.draft("L", draft)
                img.load()
                return _gray(img)
    except (Image.DecompressionBombWarning, Image.DecompressionBombError) as err:
        raise CorruptMedia(
            path,
            f"image too large to decode safely ({err})",
            "downscale it below 89 million pixels",
        ) from err
    except Exception as err:
        raise CorruptMedia(path, f"damaged or truncated {_NAME[fmt]} ({err})") from err


def load_audio(
    path: Path, *, max_seconds: float | None = MAX_AUDIO_SECONDS
) -> tuple[npt.NDArray[np.float32], int]:
    """The first ``max_seconds`` of the audio (all of it with None), mixed down to mono
    float32 in -1..1, and its sample rate."""
    fmt = _sniff(path)
    if _KIND[fmt] != "audio":
        raise _wrong_kind(path, fmt, "audio (WAV, FLAC, OGG or MP3)")
    if fmt == "wav":
        _check_wav_length(path)
    if _sf is None:
        if fmt != "wav":
            raise InvalidInput(
                f"{path}: decoding {_NAME[fmt]} needs the soundfile package (pip install "
                f"soundfile); only WAV can be read without it"
            )
        samples, rate = _load_wav_stdlib(path, max_seconds)
    else:
        if _SNDFILE_FORMAT[fmt] not in _sf.available_formats():
            raise InvalidInput(
                f"{path}: this libsndfile ({_sf.__libsndfile_version__}) cannot decode "
                f"{_NAME[fmt]}; convert the file to WAV or FLAC"
            )
        samples, rate = _load_sndfile(path, fmt, max_seconds)
    if samples.size == 0:
        raise CorruptMedia(path, f"no audio samples in this {_NAME[fmt]} file")
    return np.nan_to_num(samples, copy=False), rate


def decoders_available() -> dict[str, bool]:
    """Which formats this installation decodes (for ``doctor``)."""
    sndfile = set(_sf.available_formats()) if _sf is not None else set()
    return {
        "png": features.check("zlib") is True,
        "jpeg": features.check("jpg") is True,
        "webp": features.check("webp") is True,
        "wav": True,
        "flac": "FLAC" in sndfile,
        "ogg": "OGG" in sndfile,
        "mp3": "MP3" in sndfile,
    }


# -- sniffing ---------------------------------------------------------------------------------


def _sniff(path: Path) -> Format:
    try:
        with open(path, "rb") as f:
            head = f.read(16)
    except FileNotFoundError as err:
        raise InvalidInput(f"{path}: no such file; check the path") from err
    except OSError as err:
        raise InvalidInput(f"{path}: cannot be read ({err.strerror or err})") from err
    named = _BY_SUFFIX.get(Path(path).suffix.lower())
    fmt = _format_of(head)
    if fmt is not None:
        return fmt
    # a bare MPEG frame header is only 4 bytes of loose rules (1 random file in ~500 passes):
    # trusted when the name does not say otherwise
    if named in (None, "mp3") and _is_mpeg_frame(head):
        return "mp3"
    if named is None:
        raise InvalidInput(
            f"{path}: not a supported media file; attach an image (PNG, JPEG, WebP) or audio "
            f"(WAV, FLAC, OGG, MP3)"
        )
    if not head:
        raise CorruptMedia(path, "empty file")
    raise CorruptMedia(
        path, f"not a {_NAME[named]} file (its first bytes are not {_NAME[named]}'s)"
    )


def _format_of(head: bytes) -> Format | None:
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if head.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "webp"
    if head[:4] in (b"RIFF", b"RIFX", b"RF64", b"BW64") and head[8:12] == b"WAVE":
        return "wav"
    if head.startswith(b"fLaC"):
        return "flac"
    if head.startswith(b"OggS"):
        return "ogg"
    if head.startswith(b"ID3"):
        return "mp3"
    return None


def _is_mpeg_frame(head: bytes) -> bool:
    """11 sync bits, then a version, layer, bitrate and sample rate that are not reserved."""
    return (
        len(head) >= 3
        and head[0] == 0xFF
        and head[1] & 0xE0 == 0xE0
        and (head[1] >> 3) & 3 != 1
        and (head[1] >> 1) & 3 != 0
        and head[2] >> 4 != 0xF
        and (head[2] >> 2) & 3 != 3
    )


def _wrong_kind(path: Path, fmt: Format, wanted: str) -> CorruptMedia:
    return CorruptMedia(
        path,
        f"this is {_KIND[fmt]} ({_NAME[fmt]}), not {wanted}",
        "attach it as " + _KIND[fmt],
    )


# -- images -----------------------------------------------------------------------------------


def _gray(img: Image.Image) -> npt.NDArray[np.float32]:
    if img.mode in ("I", "F") or img.mode.startswith("I;16"):
        high = 65535.0 if img.mode != "F" else 255.0
        return np.asarray(img.convert("F"), dtype=np.float32) * np.float32(255.0 / high)
    if "A" in img.getbands() or "transparency" in img.info:
        rgba = img.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        img = Image.alpha_composite(white, rgba)
    return np.asarray(img.convert("L"), dtype=np.float32)


# -- audio ------------------------------------------------------------------------------------


def _check_wav_length(path: Path) -> None:
    """A WAV cut short still opens in most decoders (they read what is there): compare the
    RIFF header's length with the file's."""
    with open(path, "rb") as f:
        head = f.read(8)
    if head[:4] != b"RIFF":
        return  # RIFX/RF64 keep their sizes elsewhere; the decoder checks them
    (declared,) = struct.unpack("<I", head[4:8])
    actual = Path(path).stat().st_size
    # 0 and 0xFFFFFFFF are what streaming writers put before they know the length
    if declared not in (0, 0xFFFFFFFF) and declared + 8 > actual + 1:
        raise CorruptMedia(
            path, f"truncated WAV (its header says {declared + 8} bytes, the file has {actual})"
        )


def _frames_wanted(total: int, rate: int, max_seconds: float | None) -> int:
    if max_seconds is None:
        return total if total > 0 else -1
    cap = int(max_seconds * rate)
    return min(total, cap) if total > 0 else cap


def _load_sndfile(
    path: Path, fmt: Format, max_seconds: float | None
) -> tuple[npt.NDArray[np.float32], int]:
    assert _sf is not None
    try:
        with _sf.SoundFile(str(path)) as f:
            rate = int(f.samplerate)
            wanted = _frames_wanted(int(f.frames), rate, max_seconds)
            data: Any = f.read(frames=wanted, dtype="float32", always_2d=True)
    except Exception as err:
        raise CorruptMedia(path, f"damaged or truncated {_NAME[fmt]} ({err})") from err
    if fmt == "flac" and 0 < len(data) < wanted:
        # FLAC states its length exactly (STREAMINFO): fewer samples means a cut file
        raise CorruptMedia(path, f"truncated FLAC ({len(data)} of {wanted} samples)")
    samples: npt.NDArray[np.float32] = np.asarray(data, dtype=np.float32).mean(axis=1)
    return samples.astype(np.float32, copy=False), rate


_PCM_DTYPES = {1: np.uint8, 2: np.int16, 4: np.int32}


def _load_wav_stdlib(path: Path, max_seconds: float | None) -> tuple[npt.NDArray[np.float32], int]:
    """PCM WAV (8, 16, 24 or 32 bits) with the standard library only."""
    try:
        with wave.open(str(path), "rb") as w:
            rate, width, channels = w.getframerate(), w.getsampwidth(), w.getnchannels()
            wanted = _frames_wanted(w.getnframes(), rate, max_seconds)
            raw = w.readframes(wanted if wanted >= 0 else w.getnframes())
    except (wave.Error, EOFError, struct.error, OSError) as err:
        raise CorruptMedia(path, f"damaged or unsupported WAV ({err})") from err
    if width == 3:  # 24-bit: widen each sample to 32 bits
        b = np.frombuffer(raw[: len(raw) - len(raw) % 3], dtype=np.uint8).reshape(-1, 3)
        raw = np.concatenate([np.zeros((len(b), 1), np.uint8), b], axis=1).tobytes()
        width = 4
    if width not in _PCM_DTYPES:
        raise CorruptMedia(path, f"unsupported WAV sample width ({width} bytes)")
    pcm = np.frombuffer(raw[: len(raw) - len(raw) % (width * channels)], dtype=_PCM_DTYPES[width])
    values = pcm.astype(np.float32)
    if width == 1:
        values = (values - 128.0) / 128.0
    else:
        values /= float(2 ** (8 * width - 1))
    mono = values.reshape(-1, channels).mean(axis=1) if channels > 1 else values
    return mono.astype(np.float32, copy=False), rate
