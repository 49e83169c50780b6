"""Stored files are written whole or not at all: a failed or killed write leaves the old file as it was."""

from __future__ import annotations

import io
import os
import random
import select
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from models import files
from models.files import replace_folder, write_bytes_atomic, write_text_atomic
from models.book.sweep import FLOAT_FORMAT, write_table


def temporaries(folder: Path) -> list[Path]:
    """The temporary files or folders a write left in ``folder``."""
    return sorted(folder.glob(".*.tmp"))


def test_text_and_bytes_are_written_whole(tmp_path):
    path = tmp_path / "table.csv"
    assert write_text_atomic(path, "a,b\nµs,2\n") == path
    assert path.read_bytes() == "a,b\nµs,2\n".encode()
    path.chmod(0o640)
    data = bytes(range(256)) * (3 * files.CHUNK_BYTES // 256 + 7)  # several chunks and a part of one
    write_bytes_atomic(path, data)
    assert path.read_bytes() == data
    assert path.stat().st_mode & 0o777 == 0o640, "rewriting a file keeps its mode"
    assert write_text_atomic(tmp_path / "crlf.txt", "a\r\nb\n").read_bytes() == b"a\r\nb\n"  # no translation
    assert temporaries(tmp_path) == []


@pytest.mark.parametrize("failing", ["write", "fsync", "replace"])
def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path, monkeypatch, failing):
    path = tmp_path / "table.csv"
    write_text_atomic(path, "old,complete\n")
    real_write = os.write

    def half_then_full_disk(fd: int, data: bytes) -> int:
        real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(28, "No space left on device")

    def fail(*args: object) -> None:
        raise OSError(5, f"{failing} failed")

    monkeypatch.setattr(files.os, failing, half_then_full_disk if failing == "write" else fail)
    with pytest.raises(OSError):
        write_text_atomic(path, "new," * 100_000)
    assert path.read_text() == "old,complete\n"
    assert temporaries(tmp_path) == []


def test_an_interrupted_write_keeps_the_old_file(tmp_path, monkeypatch):
    """Ctrl-C (or any BaseException) inside the write also removes the temporary file."""
    path = tmp_path / "table.csv"
    write_text_atomic(path, "old\n")

    def interrupted(*args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(files.os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_text_atomic(path, "new\n")
    assert path.read_text() == "old\n" and temporaries(tmp_path) == []


def test_a_folder_is_replaced_whole(tmp_path):
    target = tmp_path / "mathjax"
    (target / "old").mkdir(parents=True)
    (target / "old" / "a.js").write_text("old")

    def fill_then_fail(folder: Path) -> None:
        (folder / "a.js").write_text("new")
        raise OSError("copy failed")

    with pytest.raises(OSError, match="copy failed"):
        replace_folder(target, fill_then_fail)
    assert (target / "old" / "a.js").read_text() == "old" and temporaries(tmp_path) == []
    replace_folder(target, lambda folder: (folder / "b.js").write_text("new"))
    assert sorted(p.name for p in target.iterdir()) == ["b.js"] and temporaries(tmp_path) == []


# The child writes a large table through models.book.sweep.write_table again and again, alternating between
# two tables.  Its os.write is slowed (and writes at most 64 KiB a call, so write_bytes_atomic's loop over
# short writes is exercised): the write lasts long enough to be killed inside.  With "stall" it stops
# for good half-way through its first write, so the kill is certainly inside a write.
CHILD = """
import os, sys, time
from pathlib import Path
import pandas as pd
from models.book.sweep import write_table

path, first, mode = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
tables = [pd.read_pickle(sys.argv[4]), pd.read_pickle(sys.argv[5])]
real_write, written = os.write, 0

def slow_write(fd, data):
    global written
    if mode == "stall" and written > 1_000_000:
        print("half written", flush=True)
        time.sleep(3600)
    time.sleep(0.01)
    done = real_write(fd, bytes(data[:65536]))
    written += done
    return done

os.write = slow_write
print("ready", flush=True)
k = first
while True:
    write_table(tables[k], path)
    k = 1 - k
"""


def _table(seed: int, rows: int = 40_000) -> pd.DataFrame:
    """A sweep-shaped table (grid columns, then metrics) of about 2.4 MB as CSV."""
    rng = np.random.default_rng(seed)
    grid = {"workers": np.arange(rows), "policy": np.where(np.arange(rows) % 2, "fair", "unfair")}
    return pd.DataFrame({**grid, **{f"metric_{k}": rng.exponential(10.0, rows) for k in range(6)}})


def _wait_for(proc: subprocess.Popen, line: str, deadline: float) -> None:
    """Read the child's stdout until ``line`` (or fail at ``deadline``, never hang)."""
    while True:
        ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            proc.kill()
            pytest.fail(f"the writer did not print {line!r} in time")
        got = proc.stdout.readline()
        if not got:
            pytest.fail(f"the writer ended before {line!r}: {proc.stderr.read()}")
        if got.strip() == line:
            return


@pytest.mark.skipif(sys.platform == "win32", reason="select() on a pipe and SIGKILL are POSIX")
def test_a_write_killed_at_any_moment_leaves_a_whole_table(tmp_path):
    """SIGKILL a process writing a sweep table, at seeded random moments and certainly inside a write:
    the stored file is each time the old complete table or the new one, never empty or short."""
    frames = [_table(1), _table(2)]
    pickles = []
    for k, frame in enumerate(frames):
        pickles.append(tmp_path / f"table{k}.pkl")
        frame.to_pickle(pickles[-1])
    stored = [frame.to_csv(index=False, float_format=FLOAT_FORMAT).encode() for frame in frames]
    data = tmp_path / "data"
    path = write_table(frames[0], data / "sweep.csv")
    delays = random.Random(30).sample([0.05, 0.3, 0.55, 0.8, 1.1, 1.4, 1.7, 2.0], 4)
    trials = [("stall", None), *(("loop", d) for d in delays), ("stall", None)]
    for mode, delay in trials:
        before = stored.index(path.read_bytes())
        proc = subprocess.Popen([sys.executable, "-c", CHILD, str(path), str(1 - before), mode, *map(str, pickles)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            _wait_for(proc, "ready", time.monotonic() + 600)  # a condition; the limit ends a hung writer
            if mode == "stall":
                _wait_for(proc, "half written", time.monotonic() + 600)
            else:
                time.sleep(delay)
        finally:
            proc.kill()
            proc.communicate()
        now = path.read_bytes()
        assert now in stored, f"after a kill ({mode}, {delay} s) the table is {len(now):,} bytes, not a whole table"
        after = stored.index(now)
        pd.testing.assert_frame_equal(pd.read_csv(io.BytesIO(now)), frames[after], rtol=1e-5)
        left = temporaries(data)
        if mode == "stall":
            assert after == before, "killed inside its first write, the writer must leave the old table"
            assert len(left) == 1 and 1_000_000 < left[0].stat().st_size < len(stored[1 - before])
        assert {p.name for p in data.iterdir()} - {p.name for p in left} == {"sweep.csv"}
        for partial in left:  # a killed write cannot remove its temporary file
            partial.unlink()
