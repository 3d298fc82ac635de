"""Screenshots of the main web pages into docs/ (small PNGs for docs/server.md).

Builds a small notebook from a made-up LoCoMo conversation (the tests' own), gives a thread
a session notebook, serves it, and photographs each page in headless Chromium at a laptop
width (and the session list at a phone's).

    python scripts/web_screenshots.py
"""

from __future__ import annotations

import io
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the suite's helpers: tests.support

from PIL import Image  # noqa: E402
from tests.support.server import ENV, Server  # noqa: E402
from tests.support.web_browser import ingest, launch, locomo_file, missing  # noqa: E402

OUT = ROOT / "docs"
SHOTS = {
    "web-sessions.png": "/sessions",
    "web-timeline.png": "/sessions/s_2023-05-08_001/moments",
    "web-search.png": "/search?q=lake",
    "web-notebook.png": "/notebooks/t-demo",
    "web-housekeeping.png": "/housekeeping",
    "web-plots.png": "/plots",
}


def small_png(raw: bytes, path: Path) -> None:
    """Quantized to 64 colours: a page of text stays sharp and weighs a few tens of KB."""
    image = Image.open(io.BytesIO(raw)).convert("RGB").quantize(64)
    image.save(path, optimize=True)


def main() -> None:
    why = missing()
    if why:
        raise SystemExit(why)
    from playwright.sync_api import sync_playwright

    os.environ.update(ENV)
    OUT.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        home = Path(scratch) / "home"
        ingest(home, locomo_file(Path(scratch) / "locomo.json"), ENV)
        server = Server(home, Path(scratch) / "server.log")
        try:
            with server.client() as api:
                notes = {
                    "Current State": "Ana paints the lake at sunset; Bo has a new puppy.",
                    "Task Specification": "Remember what Ana and Bo share about their hobbies.",
                    "Worklog": "- 8 May: painting, cobalt blue\n- 12 May: Biscuit the puppy",
                }
                for section, text in notes.items():
                    api.put(
                        f"/api/threads/t-demo/notebook/sections/{section}",
                        json={"content": text},
                    ).raise_for_status()
            with sync_playwright() as playwright:
                browser = launch(playwright)
                context = browser.new_context(
                    base_url=server.url,
                    viewport={"width": 1100, "height": 760},
                    extra_http_headers={"Authorization": f"Bearer {server.token}"},
                )
                page = context.new_page()
                for name, path in SHOTS.items():
                    page.goto(path)
                    small_png(page.screenshot(), OUT / name)
                    print(f"{OUT / name}: {(OUT / name).stat().st_size // 1024} KB")
                phone = browser.new_context(
                    base_url=server.url,
                    viewport={"width": 390, "height": 760},
                    extra_http_headers={"Authorization": f"Bearer {server.token}"},
                )
                shot = phone.new_page()
                shot.goto("/sessions/s_2023-05-08_001/moments")
                small_png(shot.screenshot(), OUT / "web-phone.png")
                print(
                    f"{OUT / 'web-phone.png'}: {(OUT / 'web-phone.png').stat().st_size // 1024} KB"
                )
                browser.close()
        finally:
            server.stop()


if __name__ == "__main__":
    main()
