"""Media signatures: time to sign an image and a second of audio, and search-by-example
latency over 10,000 stored signatures.

Media are generated here (seeded): a photo-like JPEG (smooth gradients, shapes, noise) at
640x480 and at 1920x1080, and a 30 s WAV clip at 44.1 kHz (tones, a chirp, noise bursts).
Reported:

* ``image_signature`` per image (decode with JPEG draft scaling + 32x32 DCT pHash), and the
  alternative: the same hash after a full-size decode (``load_image`` without draft);
* ``audio_signature`` per second of audio: the 30 s clip (only its first 10 s are
  fingerprinted, so per fingerprinted second), and a 10 s clip;
* ``rank_by_example`` (limit 10) over 10,000 stored signatures of each kind (images: random
  64-bit hashes; audio: fingerprints of 10 s clips, a few hundred real ones repeated with
  random bit flips so that no two are equal), p50/p95 over repeated queries, against the
  naive alternative: a pure-Python loop calling ``distance`` on each stored signature;
* end to end, ``Notebook.search(image=...)`` on a SQLite notebook of ``--stored`` moments
  each recorded with its own small PNG (the example: one of them resized to half and saved
  as JPEG), p50/p95, beside a lexical search of the same notebook (``--no-notebook`` skips
  it: recording 10,000 images takes a minute or two).

    python bench/media_signatures.py [--stored 10000] [--queries 30] [--seed 0] [--no-notebook]
"""

from __future__ import annotations

import argparse
import base64
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

import numpy as np
import soundfile as sf
from PIL import Image, ImageDraw

sys.path.insert(0, str(Path(__file__).parent))
from _common import summary_ms
from agent_notebook import Notebook
from agent_notebook.media.decode import load_image
from agent_notebook.media.signatures import (
    _phash,
    audio_signature,
    distance,
    image_signature,
    rank_by_example,
)
from agent_notebook.storage import SqliteBackend

RATE = 44100


def photo(size: tuple[int, int], rng: np.random.Generator) -> Image.Image:
    w, h = size
    y, x = np.mgrid[0:h, 0:w] / max(w, h)
    base = np.stack([np.sin(x * rng.uniform(2, 9) + y * rng.uniform(2, 9)) for _ in range(3)])
    noise = rng.normal(0, 0.08, (3, h, w))
    pixels = np.clip((base + noise + 1) * 127, 0, 255).astype(np.uint8).transpose(1, 2, 0)
    img = Image.fromarray(pixels, "RGB")
    draw = ImageDraw.Draw(img)
    for _ in range(12):
        x0, y0 = int(rng.integers(0, w - 50)), int(rng.integers(0, h - 50))
        box = (x0, y0, x0 + int(rng.integers(20, w // 3)), y0 + int(rng.integers(20, h // 3)))
        draw.ellipse(box, fill=tuple(int(v) for v in rng.integers(0, 256, 3)))
    return img


def clip(seconds: float, rng: np.random.Generator) -> np.ndarray:
    t = np.arange(int(seconds * RATE)) / RATE
    out = 0.4 * np.sin(2 * np.pi * (rng.uniform(200, 800) * t + 30 * t**2))
    for _ in range(6):
        start = rng.uniform(0, seconds - 1)
        on = (t >= start) & (t < start + rng.uniform(0.5, 3))
        out += on * 0.3 * np.sin(2 * np.pi * rng.uniform(250, 2200) * t)
    out += 0.05 * rng.standard_normal(len(t))
    return np.asarray(0.8 * out / float(np.abs(out).max()), dtype=np.float32)


def timed(fn: Callable[[], object], repeat: int) -> list[float]:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return samples


def full_decode_hash(path: Path) -> int:
    gray = load_image(path)  # no draft: every pixel decoded
    small = Image.fromarray(gray).resize((32, 32), Image.Resampling.BOX)
    return _phash(np.asarray(small, dtype=np.float64))


def flipped(signature: str, rng: np.random.Generator, rate: float) -> str:
    frames = np.frombuffer(base64.b64decode(signature[4:]), dtype="<u4").copy()
    mask = (rng.random((len(frames), 32)) < rate).astype(np.uint8)
    frames ^= np.packbits(mask, axis=1).view(">u4").ravel().astype("<u4")
    return "af1:" + base64.b64encode(frames.tobytes()).decode("ascii")


def next_ranked(queries: Iterator[str], stored: list[tuple[int, str]]) -> object:
    return rank_by_example(next(queries), stored, 10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stored", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-notebook", action="store_true", help="skip the end-to-end part")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        print("== signature time (median of repeats) ==")
        for w, h in ((640, 480), (1920, 1080)):
            path = folder / f"photo_{w}.jpg"
            photo((w, h), rng).save(path, quality=90)
            ours = timed(partial(image_signature, path), 20)
            full = timed(partial(full_decode_hash, path), 20)
            print(
                f"image {w}x{h} JPEG: image_signature {statistics.median(ours) * 1000:7.2f} ms"
                f"   alternative (full-size decode) {statistics.median(full) * 1000:7.2f} ms"
            )
        for seconds in (10.0, 30.0):
            path = folder / f"clip_{seconds:.0f}.wav"
            sf.write(path, clip(seconds, rng), RATE, subtype="PCM_16")
            took = statistics.median(timed(partial(audio_signature, path), 10))
            fingerprinted = min(seconds, 10.0)
            print(
                f"audio {seconds:.0f} s WAV 44.1 kHz: audio_signature {took * 1000:7.2f} ms = "
                f"{took / fingerprinted * 1000:6.2f} ms per fingerprinted second "
                f"({took / seconds * 1000:6.2f} ms per second of the file)"
            )

        print(f"\n== rank_by_example, limit 10, over {args.stored} stored ==")
        images = [f"ph1:{int(v):016x}" for v in rng.integers(0, 2**63, args.stored)]
        stored_images = list(enumerate(images))

        base = []
        for n in range(40):
            path = folder / f"c{n}.wav"
            sf.write(path, clip(10.0, rng), RATE, subtype="PCM_16")
            base.append(audio_signature(path))
        audios = [flipped(base[n % len(base)], rng, 0.08) for n in range(args.stored)]
        stored_audio = list(enumerate(audios))
        print(f"(audio signatures: {len(audios[0])} characters each)")

        for kind, stored in (("image", stored_images), ("audio", stored_audio)):
            queries = [stored[int(i)][1] for i in rng.integers(0, len(stored), args.queries)]
            ours = timed(partial(next_ranked, iter(queries), stored), args.queries)
            naive_n = args.queries if kind == "image" else max(3, args.queries // 10)

            def naive(
                st: list[tuple[int, str]] = stored, it2: Iterator[str] = iter(queries)
            ) -> list[tuple[int, float]]:
                q = next(it2)
                pairs = sorted(((n, distance(q, s)) for n, s in st), key=lambda p: (p[1], p[0]))
                return pairs[:10]

            theirs = timed(naive, naive_n)
            print(f"{kind} rank_by_example : {summary_ms(ours)}")
            print(f"{kind} naive loop       : {summary_ms(theirs)}   ({naive_n} queries)")

        if not args.no_notebook:
            bench_notebook(folder, args.stored, args.queries, rng)


def bench_notebook(folder: Path, count: int, queries: int, rng: np.random.Generator) -> None:
    """Search by example end to end: a notebook of ``count`` image moments."""
    print(f"\n== Notebook.search(image=...) over {count} image moments (SQLite) ==")
    home = folder / "home"
    images = folder / "images"
    images.mkdir()
    started = time.perf_counter()
    with Notebook(SqliteBackend(home / "notebook.db"), home=home, embedder=None) as nb:
        sid = nb.start_session("photos").id
        for first in range(0, count, 500):
            drafts = []
            for n in range(first, min(count, first + 500)):
                path = images / f"{n}.png"
                small = rng.integers(0, 256, (8, 8), dtype=np.uint8)
                Image.fromarray(small).resize((64, 64), Image.Resampling.BICUBIC).save(path)
                drafts.append({"text": f"photo {n}", "image_file": str(path)})
            nb.record_many(sid, drafts)
        print(f"recorded {count} image moments in {time.perf_counter() - started:.1f} s")
        examples = []
        for i, n in enumerate(rng.integers(0, count, queries)):
            example = folder / f"example_{i}.jpg"
            Image.open(images / f"{n}.png").resize((32, 32)).convert("RGB").save(
                example, quality=70
            )
            examples.append((f"m_{int(n) + 1}", example))
        found = 0
        took = []
        for moment_id, example in examples:
            t0 = time.perf_counter()
            hits = nb.search("", image=example, limit=10)
            took.append(time.perf_counter() - t0)
            found += bool(hits) and hits[0].moment.id == moment_id
        lexical = timed(lambda: nb.search("photo 42", mode="lexical", limit=10), queries)
        print(f"search by example : {summary_ms(took)}   (the original first: {found}/{queries})")
        print(f"lexical search    : {summary_ms(lexical)}")


if __name__ == "__main__":
    main()
