"""Writing the project's files whole or not at all: a kill at any moment leaves the old file or the new one.

Each write goes to a hidden temporary file in the target's folder (``.NAME.RANDOM.tmp``), is flushed to
disk, then renamed over the target, which a file system does in one step.  A failed write removes its
temporary file; a killed one can leave it behind, never a short or empty target.
"""

from __future__ import annotations

import os
import secrets
import shutil
import stat
from pathlib import Path
from typing import Callable

CHUNK_BYTES = 1 << 20  # the most one os.write call is given (a call may write less: the loop writes the rest)


def _temporary_beside(path: Path) -> Path:
    """A fresh name in ``path``'s folder for a file or folder that will be renamed onto ``path``."""
    return path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")


def write_bytes_atomic(path: Path | str, data: bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file renamed into place, so it is never seen half-written."""
    path = Path(path)
    temporary = _temporary_beside(path)
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        try:
            if path.exists():  # keep the mode the file had, as writing over it in place did
                os.chmod(temporary, stat.S_IMODE(path.stat().st_mode))
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view[:CHUNK_BYTES]):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return path


def write_text_atomic(path: Path | str, text: str, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` whole or not at all (no newline translation: the bytes are the text's)."""
    return write_bytes_atomic(path, text.encode(encoding))


def replace_folder(path: Path | str, fill: Callable[[Path], None]) -> Path:
    """Build a folder with ``fill(folder)`` beside ``path``, then swap it in for ``path``'s old contents.

    A failure or kill while filling leaves the old folder as it was; only a kill between the two renames
    of the swap (microseconds) leaves no folder, which the next run rebuilds.
    """
    path = Path(path)
    building = _temporary_beside(path)
    try:
        building.mkdir()
        fill(building)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    retired = _temporary_beside(path)
    if path.exists():
        os.replace(path, retired)
    os.replace(building, path)
    shutil.rmtree(retired, ignore_errors=True)
    return path
