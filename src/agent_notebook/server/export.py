"""``GET /api/export``: the whole notebook, ids and all, as a file to download."""

from __future__ import annotations

import shutil
import tarfile
import tempfile
from pathlib import Path
from typing import Annotated, Literal

from fastapi import APIRouter, Depends
from fastapi.responses import FileResponse
from starlette.background import BackgroundTask

from ..notebook.facade import Notebook
from .deps import notebook

router = APIRouter(prefix="/api")


@router.get(
    "/export",
    tags=["notebook"],
    response_class=FileResponse,
    responses={200: {"content": {"application/gzip": {}, "application/vnd.sqlite3": {}}}},
)
def export(
    nb: Annotated[Notebook, Depends(notebook)], format: Literal["yaml", "sqlite"] = "yaml"
) -> FileResponse:
    """A copy of the notebook: a ``.tar.gz`` of the YAML directory (``format=yaml``) or a
    SQLite file (``format=sqlite``); ``agent-notebook import`` reads either back."""
    work = Path(tempfile.mkdtemp(prefix="agent-notebook-export-"))
    try:
        # the records and chat state only: the media and archive files stay on the server
        nb.transfer.export_file(
            work / ("notebook" if format == "yaml" else "notebook.db"), format, with_media=False
        )
        if format == "yaml":
            file = work / "notebook.tar.gz"
            with tarfile.open(file, "w:gz") as tar:
                tar.add(work / "notebook", arcname="notebook")
            media = "application/gzip"
        else:
            file, media = work / "notebook.db", "application/vnd.sqlite3"
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return FileResponse(
        file,
        media_type=media,
        filename=file.name,
        background=BackgroundTask(shutil.rmtree, work, ignore_errors=True),
    )
