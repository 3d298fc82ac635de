"""Part 1: HTTP, every operation of the OpenAPI document."""

from __future__ import annotations

import argparse
import copy
import json
import os
import time
from dataclasses import dataclass
from typing import Any

import httpx

from .common import (
    DESTRUCTIVE,
    RAW_BODIES,
    TRACEBACK,
    Server,
    Tally,
    draw,
    edge_variants,
    log,
)

# -- part 1: HTTP -------------------------------------------------------------------------------


@dataclass
class Seeded:
    session: str
    moment: str
    thread: str
    ids: dict[str, str]


def seed_server(server: Server) -> Seeded:
    auth = {"Authorization": f"Bearer {server.owner}"}
    with httpx.Client(base_url=server.url, headers=auth, timeout=120) as api:
        sid = api.post("/api/sessions", json={"task": "Plan the Lyon trip"}).json()["id"]
        moments = []
        for text, who in [
            ("Ana is vegetarian and books the 09:04 TGV to Lyon", "Ana"),
            ("We decided to stay near Part-Dieu", "Ben"),
            ("I work at Acme now", "Ana"),
        ]:
            r = api.post(f"/api/sessions/{sid}/moments", json={"text": text, "speaker": who})
            moments.append(r.json()["id"])
        api.post(f"/api/sessions/{sid}/decisions", json={"what": "Take the train", "who": "Ana"})
        api.post(f"/api/sessions/{sid}/pending", json={"what": "Book the hotel"})
        api.post(
            f"/api/sessions/{sid}/escalations",
            json={"to": "planner", "why": "multi-city", "slice": f"{moments[0]}..{moments[-1]}"},
        )
        thread = api.post("/api/chat/sessions", json={"title": "fuzz"})
        thread_id = thread.json().get("id") or thread.json().get("thread_id") or "thread-1"
        api.put(
            f"/api/threads/{thread_id}/notebook/sections/Current State",
            json={"content": "Planning the trip"},
        )
    ids = {
        "session_id": sid,
        "moment_id": moments[0],
        "thread_id": thread_id,
        "pending_id": "p_1",
        "decision_id": "d_1",
        "escalation_id": "e_1",
        "section": "Current State",
        "name": "Ana",
    }
    return Seeded(sid, moments[0], thread_id, ids)


def http_answer(kind_status: int, body: str) -> str:
    if TRACEBACK in body:
        return "traceback"
    if kind_status >= 500:
        return "5xx"
    if 200 <= kind_status < 400:
        return "ok"
    return "refused"


def variant(case: Any, **changes: Any) -> Any:
    """A copy of a schemathesis case with ``changes`` (body, query...)."""
    fields: dict[str, Any] = {
        "path_parameters": dict(case.path_parameters or {}),
        "headers": dict(case.headers or {}),
        "query": dict(case.query or {}),
        "media_type": case.media_type,
    }
    if type(case.body).__name__ != "NotSet":
        fields["body"] = copy.deepcopy(case.body)
    fields.update(changes)
    return case.operation.Case(**fields)


@dataclass
class RawCase:
    """A valid case whose body is replaced by raw bytes sent as application/json."""

    base: Any
    raw: bytes
    what: str

    def __getattr__(self, name: str) -> Any:
        return getattr(self.base, name)

    @property
    def body(self) -> str:
        return f"<raw: {self.what}, {len(self.raw)} bytes>"


def describe_case(case: Any) -> str:
    body = "" if case.body is None or type(case.body).__name__ == "NotSet" else case.body
    text = json.dumps(body, default=repr, ensure_ascii=True) if body != "" else ""
    if len(text) > 200:
        text = text[:200] + f"...({len(text)} chars)"
    query = json.dumps(case.query, default=repr)[:200] if case.query else ""
    return f"{case.method} {case.formatted_path} query={query} body={text}"


def http_part(server: Server, guest: str, seeded: Seeded, args: argparse.Namespace) -> list[Tally]:
    import requests
    import schemathesis
    from schemathesis import GenerationMode

    doc = httpx.get(f"{server.url}/openapi.json", timeout=60).json()
    schema = schemathesis.openapi.from_dict(doc)
    operations = [r.ok() for r in schema.get_all_operations()]
    operations.sort(
        key=lambda op: bool(DESTRUCTIVE.search(op.path) or op.method.upper() == "DELETE")
    )
    guest_paths = ("/api/slice", "/api/sessions/{session_id}/write-back")
    owner = Tally("HTTP, owner token")
    guest_t = Tally("HTTP, guest token")
    valid = Tally("  of which schema-valid (owner)")
    invalid = Tally("  of which schema-invalid (owner)")
    edges = Tally("  of which edge values (owner)")
    raw_t = Tally("  of which raw bodies (owner)")
    deadline = time.monotonic() + args.http_seconds
    reached = 0

    def send(case: Any, token: str, tallies: list[Tally]) -> None:
        t0 = time.perf_counter()
        request = describe_case(case)
        try:
            # sent with requests ourselves: Case.call drops the Authorization header when
            # schemathesis's mutation touched the security scheme, and here the token is
            # what is under test, never part of the generated input
            auth = {"Authorization": f"Bearer {token}"}
            kwargs = case.as_transport_kwargs(base_url=server.url, headers=auth)
            kwargs["headers"] = {**(kwargs.get("headers") or {}), **auth}
            if isinstance(case, RawCase):
                kwargs.pop("json", None)
                kwargs.pop("files", None)
                kwargs["data"] = case.raw
                kwargs["headers"]["Content-Type"] = "application/json"
            response = requests.request(**kwargs, timeout=args.timeout)
            text = response.content.decode(errors="replace")
            kind = http_answer(response.status_code, text)
            code, answer = str(response.status_code), f"{response.status_code} {text[:300]}"
        except requests.Timeout:
            kind, code, answer = "hang", "timeout", f"no answer in {args.timeout} s"
        except requests.RequestException as err:
            kind, code, answer = "other", "conn", f"{type(err).__name__}: {str(err)[:200]}"
        if os.environ.get("FUZZ_DEBUG") and code == "401":
            log(f"401: {request[:100]} -> {answer[:300]}")
        full = {
            "method": case.method,
            "path": case.formatted_path,
            "query": case.query,
            "headers": dict(case.headers or {}),
            "body": None if type(case.body).__name__ == "NotSet" else case.body,
            "token": "owner" if token == server.owner else "guest",
        }
        for t in tallies:
            t.add(kind, code, request, answer, full)
            t.seconds += time.perf_counter() - t0

    for n, op in enumerate(operations):
        if time.monotonic() > deadline:
            break
        reached += 1
        path_names = [p.name for p in op.path_parameters]
        fixed = {k: seeded.ids[k] for k in path_names if k in seeded.ids}
        cases: list[tuple[Any, Tally]] = []
        half = max(args.examples // 2, 1)
        for mode, tally in ((GenerationMode.POSITIVE, valid), (GenerationMode.NEGATIVE, invalid)):
            if fixed:
                free = draw(op.as_strategy(generation_mode=mode), half - half // 2, 1000 + n)
                pinned = draw(
                    op.as_strategy(generation_mode=mode, path_parameters=fixed), half // 2, 2000 + n
                )
                cases += [(c, tally) for c in free + pinned]
            else:
                cases += [
                    (c, tally) for c in draw(op.as_strategy(generation_mode=mode), half, 1000 + n)
                ]
        # edge values: one field at a time of a valid case with the seeded ids
        bases = draw(
            op.as_strategy(generation_mode=GenerationMode.POSITIVE, path_parameters=fixed or None),
            1,
            3000 + n,
        )
        if bases and args.edges:
            base = bases[0]
            body = base.body if isinstance(base.body, dict) else None
            keys = [f"body.{k}" for k in (body or {})]
            props = (
                (op.definition.raw.get("requestBody") or {})
                .get("content", {})
                .get("application/json", {})
                .get("schema", {})
            )
            if "$ref" in props:
                name = props["$ref"].rsplit("/", 1)[-1]
                props = doc.get("components", {}).get("schemas", {}).get(name, {})
            keys += [f"body.{k}" for k in props.get("properties", {}) if f"body.{k}" not in keys]
            keys += [f"query.{p.name}" for p in op.query]
            for key, value in edge_variants({}, keys, args.edges, n):
                where, name = key.split(".", 1)
                if where == "body":
                    new_body = dict(base.body) if isinstance(base.body, dict) else {}
                    new_body[name] = value
                    case = variant(base, body=new_body, media_type="application/json")
                else:
                    shown = (
                        value if isinstance(value, (str, int, float, bool)) else json.dumps(value)
                    )
                    case = variant(base, query={**(base.query or {}), name: shown})
                cases.append((case, edges))
        if bases and type(bases[0].body).__name__ != "NotSet":
            for what, raw in RAW_BODIES.items():
                cases.append((RawCase(bases[0], raw, what), raw_t))
        for case, tally in cases:
            if time.monotonic() > deadline:
                break
            send(case, server.owner, [owner, tally])
        # the guest: its own operations as the owner's, one valid case of every other one
        if op.path in guest_paths:
            for case, _ in cases:
                if time.monotonic() > deadline:
                    break
                named = isinstance(case.body, dict) and case.body.get("guest") is not None
                if named and n % 2:  # half of them as the token's own name
                    case = variant(case, body={**case.body, "guest": "fuzzer"})
                send(case, guest, [guest_t])
        elif bases:
            send(bases[0], guest, [guest_t])
    owner.note = (
        f"{reached} of {len(operations)} operations reached in the budget; codes "
        + ", ".join(f"{k}: {v}" for k, v in sorted(owner.codes.items()))
    )
    guest_t.note = "codes " + ", ".join(f"{k}: {v}" for k, v in sorted(guest_t.codes.items()))
    return [owner, valid, invalid, edges, raw_t, guest_t]
