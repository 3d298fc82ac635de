"""Local signatures of media, and ranking by example on them. No model, no download.

* Images: ``ph1:`` + 16 hex digits, a 64-bit DCT perceptual hash. The image in grayscale is
  averaged down to 32x32, transformed with a 2-D DCT-II, and its 64 lowest frequencies after
  the DC term (in zigzag order) each give one bit: above their median or not. Resizing and
  recompression move a few bits; distance is the share of differing bits.
* Audio: ``af1:`` + base64 of little-endian uint32 sub-fingerprints, after Haitsma and Kalker
  ("A Highly Robust Audio Fingerprinting System", 2002). The first
  :data:`AUDIO_SIGNATURE_SECONDS` seconds in mono, resampled to 5512 Hz, are cut in frames of
  0.37 s every 11.6 ms; each frame's energy in 33 log-spaced bands from 300 to 2000 Hz gives
  32 bits, the signs of the band-energy differences across neighbouring bands and frames.
  Scaling the volume scales every energy alike and leaves the signs; re-encoding moves a
  few. Distance is the bit error rate at the best alignment within ±:data:`MAX_SHIFT` frames
  (encoders add a few milliseconds of delay).

Both distances run from 0.0 (identical) to 1.0; unrelated media land near 0.5.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Literal

import numpy as np
import numpy.typing as npt
from PIL import Image

from ..errors import InvalidInput
from .decode import load_audio, load_image

__all__ = [
    "AUDIO_SIGNATURE_SECONDS",
    "MAX_SHIFT",
    "audio_signature",
    "distance",
    "image_signature",
    "rank_by_example",
    "signature_kind",
]

IMAGE_PREFIX = "ph1:"
AUDIO_PREFIX = "af1:"

AUDIO_SIGNATURE_SECONDS = 10.0
"""Only the start of a recording is fingerprinted: it keeps a signature compact (3.4 KB) and
search fast; two recordings that share their first ten seconds look alike."""

_RATE = 5512  # Hz; 300-2000 Hz is all the fingerprint looks at
_FRAME = 2048  # samples: 0.37 s
_HOP = _FRAME // 32  # 11.6 ms
_BANDS = 33
_LOW_HZ, _HIGH_HZ = 300.0, 2000.0
_MIN_FRAMES = 16  # a clip shorter than a frame is padded with silence to this many

MAX_SHIFT = 8
"""Frames (of 11.6 ms) by which two fingerprints may be shifted against each other."""

Kind = Literal["image", "audio"]


# -- images -----------------------------------------------------------------------------------


def image_signature(path: Path) -> str:
    """``ph1:`` + the 64-bit perceptual hash of the image at ``path`` (16 hex digits)."""
    gray = load_image(path, draft=(64, 64))
    small = Image.fromarray(gray).resize((32, 32), Image.Resampling.BOX)
    return IMAGE_PREFIX + f"{_phash(np.asarray(small, dtype=np.float64)):016x}"


def _phash(pixels: npt.NDArray[np.float64]) -> int:
    c = _dct_matrix(32)
    coefficients = (c @ pixels @ c.T).ravel()[_zigzag_low()]
    bits = coefficients > np.median(coefficients)
    return int.from_bytes(np.packbits(bits).tobytes(), "big")


@cache
def _dct_matrix(n: int) -> npt.NDArray[np.float64]:
    """Orthonormal DCT-II as a matrix: ``c @ x`` transforms the columns of ``x``."""
    k = np.arange(n)[:, None]
    i = np.arange(n)[None, :]
    c: npt.NDArray[np.float64] = np.sqrt(2.0 / n) * np.cos(np.pi * (2 * i + 1) * k / (2 * n))
    c[0] /= np.sqrt(2.0)
    return c


@cache
def _zigzag_low() -> npt.NDArray[np.intp]:
    """Flat indices into a 32x32 DCT of its 64 lowest frequencies after DC."""
    order = sorted((u + v, u, v) for u in range(32) for v in range(32))[1:65]
    return np.array([u * 32 + v for _, u, v in order], dtype=np.intp)


# -- audio ------------------------------------------------------------------------------------


def audio_signature(path: Path) -> str:
    """``af1:`` + the base64 fingerprint of the first seconds of the audio at ``path``."""
    samples, rate = load_audio(path, max_seconds=AUDIO_SIGNATURE_SECONDS)
    frames = _fingerprint(samples, rate)
    return AUDIO_PREFIX + base64.b64encode(frames.astype("<u4").tobytes()).decode("ascii")


def _fingerprint(samples: npt.NDArray[np.float32], rate: int) -> npt.NDArray[np.uint32]:
    x = _resample(samples.astype(np.float64), rate)
    if len(x) < _FRAME + _MIN_FRAMES * _HOP:
        x = np.pad(x, (0, _FRAME + _MIN_FRAMES * _HOP - len(x)))
    frames = np.lib.stride_tricks.sliding_window_view(x.astype(np.float32), _FRAME)[::_HOP]
    lo, hi, bands = _bands()
    spectrum = np.fft.rfft(frames * np.hanning(_FRAME).astype(np.float32), axis=1)[:, lo:hi]
    energy = (spectrum.real**2 + spectrum.imag**2) @ bands  # (frames, 33)
    across = energy[:, :-1] - energy[:, 1:]  # (frames, 32)
    bits = (across[1:] - across[:-1]) > 0  # (frames - 1, 32)
    return np.packbits(bits, axis=1).view(">u4").ravel().astype(np.uint32)


def _resample(x: npt.NDArray[np.float64], rate: int) -> npt.NDArray[np.float64]:
    """Band-limited resampling to :data:`_RATE` through the FFT (no aliasing folds into the
    bands, whatever the source rate)."""
    if rate == _RATE or len(x) == 0:
        return x
    n_out = max(1, round(len(x) * _RATE / rate))
    spectrum = np.fft.rfft(x)[: n_out // 2 + 1]
    return np.fft.irfft(spectrum, n_out) * (n_out / len(x))


@cache
def _bands() -> tuple[int, int, npt.NDArray[np.float32]]:
    """The FFT bins ``lo:hi`` that fall in the bands, and a (hi - lo, 33) matrix of ones
    where a bin falls in a band: the band energies are one matrix product."""
    edges = np.geomspace(_LOW_HZ, _HIGH_HZ, _BANDS + 1)
    freqs = np.fft.rfftfreq(_FRAME, 1.0 / _RATE)
    band = np.searchsorted(edges, freqs, side="right") - 1
    inside = np.nonzero((band >= 0) & (band < _BANDS))[0]
    lo, hi = int(inside[0]), int(inside[-1]) + 1
    matrix = np.zeros((hi - lo, _BANDS), dtype=np.float32)
    matrix[inside - lo, band[inside]] = 1.0
    return lo, hi, matrix


# -- comparing --------------------------------------------------------------------------------


def signature_kind(signature: str) -> Kind:
    """``"image"`` or ``"audio"`` from the signature's prefix."""
    if signature.startswith(IMAGE_PREFIX):
        return "image"
    if signature.startswith(AUDIO_PREFIX):
        return "audio"
    raise InvalidInput(
        f"unknown media signature {signature[:12]!r}: expected {IMAGE_PREFIX!r} (image) or "
        f"{AUDIO_PREFIX!r} (audio) followed by its value"
    )


def distance(a: str, b: str) -> float:
    """0.0 for identical media .. 1.0; both signatures must be of the same kind."""
    kind = _same_kind(a, b)
    if kind == "image":
        return (_image_bits(a) ^ _image_bits(b)).bit_count() / 64
    return _audio_distance(_audio_frames(a), _audio_frames(b))


def rank_by_example(
    query: str, stored: Sequence[tuple[int, str]], limit: int
) -> list[tuple[int, float]]:
    """The ``limit`` stored signatures nearest to ``query``: (moment number, distance),
    nearest first, ties by number. ``stored`` holds (number, signature) pairs; any of
    another kind than the query's is skipped."""
    kind = signature_kind(query)
    prefix = IMAGE_PREFIX if kind == "image" else AUDIO_PREFIX
    same = [(n, s) for n, s in stored if s.startswith(prefix)]
    if limit <= 0 or not same:
        return []
    numbers = np.array([n for n, _ in same], dtype=np.int64)
    if kind == "image":
        distances = _image_distances(query, [s for _, s in same])
    else:
        distances = _audio_distances(query, [s for _, s in same], limit)
    keep = np.isfinite(distances)
    order = np.lexsort((numbers[keep], distances[keep]))[:limit]
    return [
        (int(n), float(d))
        for n, d in zip(numbers[keep][order], distances[keep][order], strict=True)
    ]


def _same_kind(a: str, b: str) -> Kind:
    kind_a, kind_b = signature_kind(a), signature_kind(b)
    if kind_a != kind_b:
        raise InvalidInput(f"cannot compare an {kind_a} signature with an {kind_b} signature")
    return kind_a


def _image_bits(signature: str) -> int:
    value = signature[len(IMAGE_PREFIX) :]
    try:
        if len(value) != 16:
            raise ValueError(value)
        return int(value, 16)
    except ValueError as err:
        raise InvalidInput(
            f"invalid image signature {signature!r}: expected {IMAGE_PREFIX!r} + 16 hex digits"
        ) from err


def _image_distances(query: str, signatures: list[str]) -> npt.NDArray[np.float64]:
    q = np.uint64(_image_bits(query))
    values = np.array([_image_bits(s) for s in signatures], dtype=np.uint64)
    bits: npt.NDArray[np.float64] = np.bitwise_count(values ^ q).astype(np.float64)
    return bits / 64


def _audio_frames(signature: str, *, strict: bool = True) -> npt.NDArray[np.uint32]:
    """The frames of an audio signature; ``strict=False`` skips the check of every character
    (3x faster, for signatures the notebook computed itself)."""
    try:
        raw = base64.b64decode(signature[len(AUDIO_PREFIX) :], validate=strict)
    except binascii.Error as err:
        raise InvalidInput(f"invalid audio signature {signature[:24]!r}…: {err}") from err
    if not raw or len(raw) % 4:
        raise InvalidInput(
            f"invalid audio signature {signature[:24]!r}…: its value is not whole 32-bit frames"
        )
    return np.frombuffer(raw, dtype="<u4").astype(np.uint32)


def _audio_distance(a: npt.NDArray[np.uint32], b: npt.NDArray[np.uint32]) -> float:
    """The lowest bit error rate over shifts of up to MAX_SHIFT frames, on the frames the two
    share at that shift."""
    best = 1.0
    for shift in range(-MAX_SHIFT, MAX_SHIFT + 1):
        x = a[max(0, -shift) :]
        y = b[max(0, shift) :]
        n = min(len(x), len(y))
        if n == 0:
            continue
        errors = int(np.bitwise_count(x[:n] ^ y[:n]).sum())
        best = min(best, errors / (32 * n))
    return best


_COARSE_STRIDE = 4  # frames; neighbouring frames overlap by 31/32 and tell little more
_COARSE_FRAMES = 240  # the coarse pass reads this window (2.8 s); a multiple of 3 frames
_SHORTLIST = 64  # least number of candidates measured exactly after the coarse pass


def _audio_distances(query: str, signatures: list[str], limit: int) -> npt.NDArray[np.float64]:
    """Distances to every signature; exact for a shortlist of the nearest, +inf for the rest.

    A coarse pass compares every fourth frame of a 2.8 s window of the query (from its first
    sound) at each shift against the same window of every stored fingerprint, decoded alone
    in one call; the ``max(4 * limit, 64)`` nearest then get the exact
    :func:`_audio_distance`. Frames are so correlated with their neighbours that the coarse
    rate is within a few points of the exact one.
    """
    q = _audio_frames(query)
    # the window starts at the query's first non-silent frame, on a multiple of 3 frames
    # (12 bytes = 16 base64 characters) so that it can be cut out of the text undecoded
    sound = np.flatnonzero(q)
    start = min(int(sound[0]) if len(sound) else 0, max(0, len(q) - _COARSE_FRAMES)) // 3 * 3
    first_char = len(AUDIO_PREFIX) + start * 16 // 3
    width = _COARSE_FRAMES * 16 // 3
    long = [len(s) > first_char + width + 4 for s in signatures]  # +4: clear of any padding
    matrix = np.zeros((len(signatures), _COARSE_FRAMES), dtype=np.uint32)
    lengths = np.full(len(signatures), _COARSE_FRAMES)
    rows = np.flatnonzero(long)
    if len(rows):
        text = "".join(signatures[r][first_char : first_char + width] for r in rows)
        try:
            raw = base64.b64decode(text)
        except binascii.Error as err:
            raise InvalidInput(f"invalid audio signature among those stored: {err}") from err
        matrix[rows] = np.frombuffer(raw, dtype="<u4").reshape(len(rows), _COARSE_FRAMES)
    for r in np.flatnonzero(~np.array(long, dtype=bool)):
        tail = _audio_frames(signatures[r], strict=False)[start : start + _COARSE_FRAMES]
        matrix[r, : len(tail)] = tail
        lengths[r] = len(tail)
    window = q[start : start + _COARSE_FRAMES]
    # query frames first, first + stride, ...; first >= MAX_SHIFT so first + shift >= 0
    first = min(MAX_SHIFT, len(window) - 1)
    picks = window[first::_COARSE_STRIDE]
    # beyond a row's length its padding is 0, so XOR there counts the query's own bits:
    # take those back off with the suffix sums of the picks' popcounts
    counts = np.bitwise_count(picks)[::-1].astype(np.int64)
    suffix = np.concatenate([np.cumsum(counts)[::-1], np.zeros(1, np.int64)])
    coarse = np.ones(len(signatures))
    for shift in range(-MAX_SHIFT, MAX_SHIFT + 1):
        at = first + shift
        columns = matrix[:, at::_COARSE_STRIDE][:, : len(picks)]
        k = columns.shape[1]
        if k == 0:
            continue
        # how many of the k compared frames lie inside each row's own length
        inside = np.clip((lengths - at + _COARSE_STRIDE - 1) // _COARSE_STRIDE, 0, k)
        errors = np.bitwise_count(columns ^ picks[:k]).sum(axis=1, dtype=np.int64)
        errors -= suffix[inside] - suffix[k]
        rate = errors / np.maximum(32 * inside, 1)
        coarse = np.minimum(coarse, np.where(inside > 0, rate, 1.0))
    distances = np.full(len(signatures), np.inf)
    for row in np.argsort(coarse, kind="stable")[: max(4 * limit, _SHORTLIST)]:
        distances[row] = _audio_distance(q, _audio_frames(signatures[row]))
    return distances
