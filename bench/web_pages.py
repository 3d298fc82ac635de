"""Time to first paint of the web pages on a large notebook, through headless Chromium.

Builds a notebook of ``--size`` moments (100k by default; sessions of 1000 moments, one an
hour, no embedder), serves it with ``agent-notebook serve`` and loads the session list and a
search page ``--runs`` times each in Debian's Chromium, reading the browser's own
first-contentful-paint (and the document's response time) from the Performance API; then
the compaction preview (a dry run, streamed): its first contentful paint (target < 1 s) and
when its summary has arrived, a few times.

    python bench/web_pages.py [--size 100000] [--runs 15] [--home DIR]

``--home`` keeps the built notebook there and reuses it on the next run.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from _common import SAMPLE_TEXTS, percentile

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.support.server import free_port
from tests.support.web_browser import launch, missing

from agent_notebook import Notebook
from agent_notebook.privacy.tokens import read_owner_token

BATCH = 1000
TARGET_MS = 300.0
PREVIEW_TARGET_MS = 1000.0
PREVIEW = "/housekeeping/compact"
PAGES = {"session list": "/sessions", "search page": "/search?q=deadline+plan"}
_PAINT = """() => new Promise((resolve) => {
  const nav = performance.getEntriesByType('navigation')[0].responseEnd;
  new PerformanceObserver((list) => {
    const paint = list.getEntriesByName('first-contentful-paint')[0];
    if (paint) resolve([paint.startTime, nav]);
  }).observe({type: 'paint', buffered: true});
})"""


def build(home: Path, size: int) -> None:
    with Notebook.open(home) as nb:  # AGENT_NOTEBOOK_EMBEDDER=none, set in main()
        have = nb.backend.count_moments()
        start = datetime(2024, 1, 1, tzinfo=UTC)
        t0 = time.perf_counter()
        for first in range(have, size, BATCH):
            when = start + timedelta(hours=first // BATCH)
            session = nb.start_session(f"batch {first // BATCH}", started=when)
            drafts = [
                {
                    "text": f"{SAMPLE_TEXTS[(first + i) % len(SAMPLE_TEXTS)]} (#{first + i})",
                    "speaker": "user" if i % 2 else "assistant",
                    "timestamp": when + timedelta(seconds=i),
                }
                for i in range(min(BATCH, size - first))
            ]
            nb.record_many(session.id, drafts)
            if (first + BATCH) % 10_000 == 0:
                print(f"recorded {first + BATCH} ({time.perf_counter() - t0:.0f} s)", flush=True)
        print(f"notebook: {nb.backend.count_moments()} moments", flush=True)


def serve(home: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "AGENT_NOTEBOOK_EMBEDDER": "none"}
    command = [sys.executable, "-m", "agent_notebook", "serve", "--home", str(home)]
    command += ["--port", str(port), "--model", "fake:echo", "--log-level", "warning"]
    with log.open("ab") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=out)
    for _ in range(600):
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=1).status_code == 200:
                return process
        except httpx.TransportError:
            time.sleep(0.1)
    process.terminate()
    raise SystemExit(f"the server did not start: {log.read_text()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--home", type=Path, default=None)
    parser.add_argument("--preview-wait", type=int, default=120, help="s for the preview")
    args = parser.parse_args()
    os.environ["AGENT_NOTEBOOK_EMBEDDER"] = "none"  # words only: the build takes minutes
    why = missing()
    if why:
        raise SystemExit(why)
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as scratch:
        home = args.home or Path(scratch) / "home"
        build(home, args.size)
        port = free_port()
        process = serve(home, port, Path(scratch) / "server.log")
        try:
            token = read_owner_token(home)
            with sync_playwright() as playwright:
                browser = launch(playwright)
                context = browser.new_context(
                    base_url=f"http://127.0.0.1:{port}",
                    extra_http_headers={"Authorization": f"Bearer {token}"},
                )
                page = context.new_page()
                print(f"\n{args.size} moments, {args.runs} loads each (after one warm-up):")
                for name, path in PAGES.items():
                    page.goto(path)  # warm-up: caches, the search index
                    paints, responses = [], []
                    for _ in range(args.runs):
                        page.goto(path, wait_until="load")
                        paint, response = page.evaluate(_PAINT)
                        paints.append(paint)
                        responses.append(response)
                    p50, p95 = percentile(paints, 0.5), percentile(paints, 0.95)
                    verdict = "ok" if p95 < TARGET_MS else "over"
                    print(
                        f"  {name:13} first contentful paint p50 {p50:6.1f} ms  p95 {p95:6.1f} ms"
                        f"  (document p50 {percentile(responses, 0.5):6.1f} ms)"
                        f"  target < {TARGET_MS:.0f} ms: {verdict}"
                    )
                # the preview: first paint, then the summary, waited for up to --preview-wait s
                paints, whole = [], []
                for _ in range(max(1, min(3, args.runs))):
                    t0 = time.perf_counter()
                    page.goto(PREVIEW, wait_until="commit")
                    paint, _ = page.evaluate(_PAINT)
                    paints.append(paint)
                    verdict = "ok" if paint < PREVIEW_TARGET_MS else "over"
                    print(
                        f"  compaction preview first contentful paint {paint:6.1f} ms"
                        f"  target < {PREVIEW_TARGET_MS:.0f} ms: {verdict}",
                        flush=True,
                    )
                    try:
                        page.wait_for_selector(
                            "text=Nothing was changed", timeout=args.preview_wait * 1000
                        )
                    except PlaywrightTimeout:
                        print(f"    its summary: not within {args.preview_wait} s; stopped there")
                        break
                    whole.append(time.perf_counter() - t0)
                    print(f"    its summary arrived after {whole[-1]:.1f} s", flush=True)
                browser.close()
        finally:
            process.terminate()
            process.wait(timeout=60)


if __name__ == "__main__":
    main()
