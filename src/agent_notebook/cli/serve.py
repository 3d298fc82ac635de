"""Commands that serve the notebook: serve (HTTP, with MCP mounted) and mcp (stdio)."""

from __future__ import annotations

import json
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer

from .. import config as cfg
from .common import HomeOption, flag, or_global, reporting_errors, stderr

BackendOption = Annotated[
    str | None,
    typer.Option(
        envvar=cfg.BACKEND_ENV,  # the value backend_location would read: shown in --help
        help="sqlite, yaml or a URL \\[default: backend in config.yaml, else sqlite].",
        show_default=False,
    ),
]


def serve(
    homes: Annotated[
        list[Path] | None,
        typer.Option(
            "--home",
            help="A notebook directory to serve; repeat it to serve several owners' notebooks "
            "(each request's token picks one) \\[default: AGENT_NOTEBOOK_HOME, else "
            "~/.agent-notebook].",
            show_default=False,
            callback=or_global,
        ),
    ] = None,
    host: Annotated[str, typer.Option(help="The address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="The port to listen on.")] = 8765,
    model: Annotated[
        str | None,
        typer.Option(
            help="The default chat model, provider:model \\[default: chat.model in config.yaml, "
            "else AGENT_NOTEBOOK_MODEL]. Offline: 'offline:notes' answers with what the "
            "notebook recalls, 'fake:echo' is a test double.",
            show_default=False,
        ),
    ] = None,
    backend: BackendOption = None,
    max_body: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Refuse request bodies over this many bytes (413) \\[default: room for one "
            "moment of moments.max_text_bytes, however JSON escapes it].",
            show_default=False,
        ),
    ] = None,
    read_timeout: Annotated[
        float,
        typer.Option(
            min=0.001,
            help="Seconds to wait for the next part of a request's body before answering 408.",
        ),
    ] = 30.0,
    shutdown_grace: Annotated[
        int,
        typer.Option(
            min=0,
            help="Seconds the requests in flight get to finish once SIGTERM or Ctrl-C asks "
            "the server to stop; 2 s later the process ends whatever still runs, and a second "
            "signal ends it at once.",
        ),
    ] = 5,
    log_level: Annotated[str, typer.Option(help="uvicorn's log level.")] = "info",
) -> None:
    """Serve the notebook over HTTP until stopped: the chat API, the notebook API, and the
    MCP server at /mcp/ (owner tools) and /mcp-guest/ (guest tools). OpenAPI docs at /docs.
    Every request needs 'Authorization: Bearer <token>': the owner's token is in
    <home>/secrets/owner-token (created now if missing; 'agent-notebook token rotate-owner'
    replaces it, taken up without a restart); guests get theirs from 'agent-notebook token
    create --guest NAME'. A PostgreSQL notebook keeps the tokens' hashes in its database, so
    any number of servers on any machines can serve it, each stateless. A port that is in
    use fails at once, with exit code 1.

    Example: agent-notebook serve --port 8765 --model openai:gpt-4o-mini
    """
    import uvicorn

    from .. import config as cfg
    from ..core.files import ensure_private_dir
    from ..server import ServerSettings, create_app
    from ..server.app import open_tenants
    from ..server.listen import listen
    from ..server.stopping import StoppingServer

    settings = ServerSettings(
        homes=tuple(homes or [cfg.resolve_home(None)]),
        backend=backend,
        model=model,
        max_body_bytes=max_body,
        host=host,
        read_timeout_s=read_timeout,
    )
    with reporting_errors():
        sock = listen(host, port)  # first: a taken port fails now, not after the opening
        for root in settings.all_homes():
            ensure_private_dir(root)
        # The notebooks are opened (and a PostgreSQL notebook's tables made) before uvicorn
        # starts, with SIGTERM and SIGINT ending the process at once, whatever call the
        # opening waits in: uvicorn's own handlers only ask a running server to stop
        # (issue 28). PostgreSQL frees its locks as the connections drop.
        with _signals_end_the_process():
            tenants = open_tenants(settings)
    try:
        for tenant in tenants:
            made = "created now; " if tenant.tokens_created else ""
            stderr.print(
                f"{tenant.home}: clients send 'Authorization: Bearer <token>'; "
                f"{tenant.tokens.owner_hint()} ({made}guest tokens: agent-notebook token create)",
                highlight=False,
            )
        url = f"http://{_url_host(host)}:{port}"
        stderr.print(
            f"serving on {url}/ (web page), {url}/docs (API docs), {url}/mcp/ (MCP); Ctrl-C stops",
            highlight=False,
            markup=False,
        )
        config = uvicorn.Config(
            create_app(settings, opened=tenants),
            host=host,
            port=port,
            log_level=log_level,
            timeout_graceful_shutdown=shutdown_grace,
        )
        with sock:
            StoppingServer(config).run(sockets=[sock])
    finally:
        for tenant in tenants:
            tenant.notebook.close()


def _url_host(host: str) -> str:
    """The host as a URL names it: an address for every interface is reached on loopback,
    an IPv6 address goes in brackets."""
    if host in {"0.0.0.0", "::", ""}:
        return "127.0.0.1"
    return f"[{host}]" if ":" in host else host


@contextmanager
def _signals_end_the_process() -> Iterator[None]:
    """SIGTERM and SIGINT end the process (the default action, by the kernel) for the block."""
    kept = {sig: signal.signal(sig, signal.SIG_DFL) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, handler in kept.items():
            signal.signal(sig, handler)


def mcp(
    home: HomeOption = None,
    guest: Annotated[
        bool, flag("--guest", "Only a guest's tools (slice, write_back), as a guest token gets.")
    ] = False,
    backend: BackendOption = None,
    print_config: Annotated[
        bool,
        flag(
            "--print-config",
            "Print the entry an MCP client's configuration needs to start this command (JSON, "
            "absolute paths, so it works from any directory) and exit.",
        ),
    ] = False,
) -> None:
    """Serve the notebook's MCP tools over stdio, for an MCP client that starts this command
    (search, slice, read_session, read_notebook_section, write_back, record and
    update_section; with --guest only slice and write_back).

    Example: agent-notebook mcp --print-config
    """
    if print_config:
        print(json.dumps(_mcp_client_entry(home, guest, backend), indent=2))
        return
    from ..notebook.facade import Notebook
    from ..server.mcp_tools import build_mcp

    with reporting_errors(), Notebook.open(home, backend=backend) as nb:
        nb.langgraph.start_ttl_sweeper()  # expired store items go while it runs (store: settings)
        build_mcp(nb, owner=not guest).run("stdio")


def _mcp_client_entry(home: Path | None, guest: bool, backend: str | None) -> dict[str, object]:
    """``{"mcpServers": {...}}`` starting this Python with ``-m agent_notebook mcp`` on the
    notebook's absolute home: a client starts it from a directory of its own."""
    from .. import config as cfg

    args = ["-m", "agent_notebook", "mcp", "--home", str(cfg.resolve_home(home))]
    args += ["--guest"] if guest else []
    args += ["--backend", backend] if backend else []
    name = "agent-notebook-guest" if guest else "agent-notebook"  # both fit in one client
    return {"mcpServers": {name: {"command": sys.executable, "args": args}}}
