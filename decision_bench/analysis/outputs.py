"""Writing a set of output files so that a failure leaves none of the new set.

`staged_outputs(directory)` yields a fresh hidden folder inside `directory`.
Everything is written there first (each file with `_src.files.atomic_write`);
only when the block ends without an exception is each file moved into
`directory` (``os.replace``: atomic per file, same file system). On any
exception the folder and what it holds are removed, so `directory` keeps its
previous outputs unchanged and gains no partial new ones.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterator, Sequence

__all__ = ["staged_outputs"]

STAGING_PREFIX = ".analyze-"


@contextlib.contextmanager
def staged_outputs(directory: str | os.PathLike, last: Sequence[str] = ()) -> Iterator[Path]:
    """Yields a staging folder whose files are moved into `directory` on success.

    Files named in `last` are moved after all others: a reader who finds the
    report then finds the files it refers to. Only plain files directly in the
    staging folder are moved. Raises ValueError, moving nothing, if a target
    name is taken by a folder.
    """
    directory = Path(directory)
    # A leading "." and a ".tmp" suffix: globs for outputs never match a folder
    # left behind by kill -9.
    stage = Path(tempfile.mkdtemp(dir=directory, prefix=STAGING_PREFIX, suffix=".tmp"))
    try:
        yield stage
        names = sorted(p.name for p in stage.iterdir() if p.is_file())
        names = [n for n in names if n not in last] + [n for n in last if n in names]
        blocked = [n for n in names if (directory / n).is_dir()]
        if blocked:
            raise ValueError(f"cannot write {directory / blocked[0]}: a folder of that name exists; move it away")
        for name in names:
            os.replace(stage / name, directory / name)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
