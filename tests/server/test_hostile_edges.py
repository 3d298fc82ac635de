"""Clear errors instead of tracebacks, and sign-out behind its CSRF token (issue 40, items
4 and 8), on a real ``agent-notebook serve``, its MCP endpoint and the command: a moment
timestamp at the edge of the range, a ``who`` out of bounds on MCP as on HTTP, forgetting
an unknown concept on the pages as on the CLI, and a TTL past any date in ``config.yaml``.
Each gets one clear answer (4xx with a message, exit 1 with ``error:``) and changes nothing."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.support.clirun import cli, cli_process, counts
from tests.support.server import Server, assert_error, csrf_of, new_session, over_mcp, signed_in

EDGE = "9999-12-31T23:59:59-14:00"  # a valid ISO time, past 9999-12-31 once in UTC


def one_error_line(done: object, *words: str) -> str:
    err = done.stderr.decode()  # type: ignore[attr-defined]
    assert done.returncode == 1, err  # type: ignore[attr-defined]
    assert err.startswith("error: ") and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1, err
    for word in words:
        assert word in err, err
    return err


def test_sign_out_needs_the_csrf_token(server: Server) -> None:
    with signed_in(server, server.token) as browser:
        for refused in (browser.post("/signout"), browser.post("/signout", data={"csrf": "0"})):
            assert refused.status_code == 403, refused.text
            assert "CSRF" in refused.text and "nothing was changed" in refused.text
        foreign = browser.post(
            "/signout", data={"csrf": csrf_of(browser)}, headers={"Origin": "http://evil.test"}
        )
        assert foreign.status_code == 403, foreign.text
        assert browser.get("/sessions").status_code == 200  # still signed in
        done = browser.post("/signout", data={"csrf": csrf_of(browser)})
        assert done.status_code == 303 and done.headers["location"] == "/signin"
        after = browser.get("/sessions")
        assert after.status_code == 303 and after.headers["location"].startswith("/signin")
    with httpx.Client(base_url=server.url, timeout=30) as stranger:  # no session: nothing to end
        assert stranger.post("/signout").status_code == 303


def test_a_timestamp_at_the_edge_of_the_range_is_refused_clearly(
    api: httpx.Client, tmp_path: Path
) -> None:
    sid = new_session(api, "Edge of time")
    answer = api.post(f"/api/sessions/{sid}/moments", json={"text": "hi", "timestamp": EDGE})
    assert_error(answer, 422, "out of range", "9999-12-31 UTC")
    batch = api.post(
        f"/api/sessions/{sid}/moments/batch", json={"moments": [{"text": "a", "timestamp": EDGE}]}
    )
    assert batch.status_code == 422, batch.text
    assert api.get(f"/api/sessions/{sid}/moments").json()["items"] == []
    home = tmp_path / "home"
    assert cli(home, "init").returncode == 0
    draft = b'{"text": "hi", "speaker": "Ana", "timestamp": "' + EDGE.encode() + b'"}'
    one_error_line(cli_process(home, "record", "--task", "x", stdin=draft), "out of range")
    assert counts(home) == (0, 0)


def test_who_has_one_bound_on_mcp_and_http(server: Server, api: httpx.Client) -> None:
    sid = new_session(api, "Who decides")
    for who in ("", "   ", "x" * 600_000):
        failed, text = over_mcp(
            server, "decide", {"session_id": sid, "what": "Take the train", "who": who}
        )
        assert failed and "who" in text and "1 to 100" in text, text[:300]
        answer = api.post(f"/api/sessions/{sid}/decisions", json={"what": "x", "who": who})
        assert answer.status_code == 422, answer.text[:300]
    assert api.get(f"/api/sessions/{sid}/decisions").json()["items"] == []
    failed, text = over_mcp(server, "decide", {"session_id": sid, "what": "Go", "who": "x" * 100})
    assert not failed, text


def test_forgetting_an_unknown_concept_says_so_on_the_pages_as_on_the_cli(
    server: Server, tmp_path: Path
) -> None:
    with signed_in(server, server.token) as browser:
        csrf = csrf_of(browser)
        for confirm in ("", "yes"):
            answer = browser.post(
                "/concepts/no-such-thing-anywhere/forget", data={"csrf": csrf, "confirm": confirm}
            )
            assert answer.status_code == 404, answer.text
            assert "text/html" in answer.headers["content-type"]
            assert "nothing to forget" in answer.text
    home = tmp_path / "home"
    assert cli(home, "init").returncode == 0
    done = cli(home, "forget", "no-such-thing-anywhere")  # the count, then the error line
    assert done.returncode == 1
    last = done.stderr.decode().strip().splitlines()[-1]
    assert last.startswith("error: ") and "nothing to forget" in last, last


def test_a_ttl_past_any_date_is_refused_by_the_config_check(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert cli(home, "init").returncode == 0
    config = home / "config.yaml"
    original = config.read_text()
    config.write_text(original + "\nstore:\n  default_ttl_minutes: 1e308\n", encoding="utf-8")
    for args in (("doctor",), ("stats",)):
        one_error_line(cli(home, *args), "store.default_ttl_minutes", "config.yaml")
    config.write_text(original + "\nstore:\n  default_ttl_minutes: 525600\n", encoding="utf-8")
    assert cli(home, "stats").returncode == 0  # a year is fine
