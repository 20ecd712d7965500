"""Writing a set of output files so that a failure leaves none of the new set,
and a success leaves only the new set.

`staged_outputs(directory)` yields a fresh hidden folder inside `directory`.
Everything is written there first (each file with `_src.files.atomic_write`);
only when the block ends without an exception are the outputs of the previous
analysis (`owned_outputs`: the exact names `analyze` can write, which it alone
owns in a results directory; never a pattern, so a user's
robustness_plot_for_paper.png beside them is kept) removed, report.md first, and each new file moved into
`directory` (``os.replace``: atomic per file, same file system), the files named
in `last` at the end. So a figure the new data no longer produces is not left
beside a report that says it was skipped. On any exception the staging folder
is removed and `directory` keeps its previous outputs unchanged.

Staging folders are named ``.analyze-<pid>-*.tmp``; one left by a process that
no longer runs (kill -9) is removed when the next analysis starts.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterator, Sequence

from decision_bench.analysis.robustness_outputs import HEATMAP_NAMES

__all__ = ["OWNED_OUTPUTS", "owned_outputs", "remove_stale_stages", "staged_outputs"]

STAGING_PREFIX = ".analyze-"
_FIGURES = (
    "fig2_normalised_kl", "fig5_prior_functions", "fig7_regret_curves", "fig8_regret_vs_dkl1",
    "fig9_regret_vs_dkl10", "fig9b_regret_vs_dkl10_kappa2", "fig10_agent_regret_vs_kl",
    "fig16_regret_vs_dkl1_by_dim", "fig17_regret_vs_dkl10_by_dim", "fig_fidelity_vs_dkl10",
)  # fmt: skip
_TABLES = (
    "correlations.csv", "joined.csv", "joined_agents.csv", "table2.csv", "regret_by_dimension.csv",
    "fidelity.csv", "fidelity_correlations.csv", "robustness_summary.csv", "robustness_matrices.csv",
)  # fmt: skip
# What `analyze` can write into a results directory, by exact name (a pattern would
# also match a user's own files): the tables with their checksum files, the figures in
# both formats, the robustness heat maps (robustness_<group>_<metric>_<method>.png
# for the known groups, metrics and methods) and the report.
OWNED_OUTPUTS = frozenset((
    "report.md",
    *_TABLES,
    *(f"{name}.sha256" for name in _TABLES),
    *(f"{stem}.{fmt}" for stem in _FIGURES for fmt in ("png", "pdf")),
    *HEATMAP_NAMES,
))


def owned_outputs(directory: str | os.PathLike) -> list[Path]:
    """The files in `directory` that an analysis wrote (OWNED_OUTPUTS), report.md first."""
    directory = Path(directory)
    found = [
        path
        for path in directory.iterdir()
        if path.name in OWNED_OUTPUTS and path.is_file()
    ]
    return sorted(found, key=lambda path: (path.name != "report.md", path.name))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


def remove_stale_stages(directory: str | os.PathLike) -> list[Path]:
    """Removes staging folders left in `directory` by analyses that no longer run
    (their pid is gone; a folder without a pid in its name is from an older version)."""
    removed = []
    for path in Path(directory).glob(f"{STAGING_PREFIX}*.tmp"):
        pid_text = path.name[len(STAGING_PREFIX):].split("-", 1)[0]
        if not path.is_dir():
            continue
        if pid_text.isdigit() and (int(pid_text) == os.getpid() or _alive(int(pid_text))):
            continue  # this process's or a running analysis's folder
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


@contextlib.contextmanager
def staged_outputs(directory: str | os.PathLike, last: Sequence[str] = ()) -> Iterator[Path]:
    """Yields a staging folder whose files replace the previous outputs on success.

    Files named in `last` are moved after all others: a reader who finds the
    report then finds the files it refers to. Only plain files directly in the
    staging folder are moved. Raises ValueError, moving nothing, if a target
    name is taken by a folder.
    """
    directory = Path(directory)
    remove_stale_stages(directory)
    # A leading "." and a ".tmp" suffix: globs for outputs never match a folder
    # left behind by kill -9; the pid says whether its owner still runs.
    stage = Path(tempfile.mkdtemp(dir=directory, prefix=f"{STAGING_PREFIX}{os.getpid()}-", suffix=".tmp"))
    try:
        yield stage
        names = sorted(p.name for p in stage.iterdir() if p.is_file())
        names = [n for n in names if n not in last] + [n for n in last if n in names]
        blocked = [n for n in names if (directory / n).is_dir()]
        if blocked:
            raise ValueError(f"cannot write {directory / blocked[0]}: a folder of that name exists; move it away")
        for path in owned_outputs(directory):  # report.md first: no report while the set changes
            if path.name not in names or path.name == "report.md":
                path.unlink(missing_ok=True)
        for name in names:
            os.replace(stage / name, directory / name)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
