"""Other people's tools accept the OpenAPI description: Redocly's recommended ruleset finds
no error and no warning (every operation declares the bearer scheme and its 4xx answers).

Redocly CLI comes from npm (tools/openapi-lint, installed by ``.ci/run`` with ``npm ci``);
without it the test is skipped, saying how to install it, except under ``CI=true``."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from agent_notebook.server import ServerSettings, create_app
from tests.support.prerequisites import REDOCLY, redocly_missing


def test_redocly_recommended_ruleset_finds_nothing(tmp_path: Path) -> None:
    why = redocly_missing()
    if why is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip(why)
    app = create_app(ServerSettings(home=tmp_path / "home", model="fake:echo", mcp=False))
    spec = app.openapi()
    assert spec["components"]["securitySchemes"]["bearer"] == {
        "type": "http",
        "scheme": "bearer",
        "description": spec["components"]["securitySchemes"]["bearer"]["description"],
    }
    described = tmp_path / "openapi.json"
    described.write_text(json.dumps(spec), encoding="utf-8")
    run = subprocess.run(
        [str(REDOCLY), "lint", str(described), "--extends", "recommended", "--format", "json"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={**os.environ, "REDOCLY_TELEMETRY": "off", "REDOCLY_SUPPRESS_UPDATE_NOTICE": "true"},
    )
    report = json.loads(run.stdout[run.stdout.index("{") :])
    problems = [(p["ruleId"], p["severity"], p["message"]) for p in report["problems"]]
    assert problems == [], problems
    assert report["totals"] == {"errors": 0, "warnings": 0, "ignored": 0}
    assert run.returncode == 0, run.stderr
