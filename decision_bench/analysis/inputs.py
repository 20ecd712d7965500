"""Reading and checking the results files of `analyze` before anything is written.

`read_testbed(path)` and `read_bandit(path)` return the tables as DataFrames or
raise one error whose message is a single line naming the file and, where it
applies, the data row (1-based, header not counted), its CSV line number and the
column, with what is accepted:

- FileNotFoundError: the file does not exist;
- ValueError: the file does not match its checksum file NAME.csv.sha256 (written
  beside every results CSV by this package, `_src.files.write_results_csv`: a
  file cut short, edited, or left by an interrupted run), or is not UTF-8 text, is empty, has a header but no rows,
  has a row with fewer or more fields than the header (a file cut off mid-row:
  pandas would silently fill the missing fields with NaN), lacks a required
  column, or has a value that is not a number where one is needed, is missing
  where it is required, or is certainly out of range.

Columns (files may have more; they are ignored):

testbed.csv, one row per (agent, problem, test design, seed):
  required  agent (text), tau (whole number >= 1), kappa (empty for iid test
            inputs, else a whole number >= 1), seed (whole number), kl (number;
            empty, NaN or inf marks a failed estimate, dropped with a warning)
  optional  input_dim (whole >= 1), num_train (whole >= 0), temperature (> 0):
            the problem settings, for the per-setting averages of table2.csv and
            Fig. 5; without them all rows count as one setting and Fig. 5 is
            skipped. kl_stderr (number): widens the accepted range of kl below 0.
bandit.csv, one row per (bandit run, logged step):
  required  agent (text), seed (whole number), step (whole number >= 0),
            cumulative_regret (finite number)
  optional  final_regret (finite number, repeated on each row of a run; derived
            from cumulative_regret at the run's last step when absent), error
            (non-empty marks a failed run, whose rows may hold NaN), env,
            input_dim, num_actions, temperature (the bandit setting: a run is
            one (agent, setting, seed))
"""

from __future__ import annotations

import csv
import dataclasses
import io
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from decision_bench._src.files import read_verified_results

__all__ = [
    "BANDIT_OPTIONAL",
    "BANDIT_REQUIRED",
    "BANDIT_SETTING_COLUMNS",
    "KL_NOISE_STDERRS",
    "TESTBED_OPTIONAL",
    "TESTBED_REQUIRED",
    "TESTBED_SETTING_COLUMNS",
    "check_bandit",
    "check_testbed",
    "failed_rows",
    "read_bandit",
    "read_results_csv",
    "read_testbed",
]

# kappa is required although "empty = iid" could be assumed: a table without it
# cannot tell dyadic rows (tau 10, kappa 2) from iid ones, and silently averaging
# them into d_KL^10 would change the headline number.
TESTBED_REQUIRED = ("agent", "tau", "kappa", "seed", "kl")
TESTBED_SETTING_COLUMNS = ("input_dim", "num_train", "temperature")
TESTBED_OPTIONAL = TESTBED_SETTING_COLUMNS + ("kl_stderr",)
BANDIT_REQUIRED = ("agent", "seed", "step", "cumulative_regret")
BANDIT_SETTING_COLUMNS = ("env", "input_dim", "num_actions", "temperature")
BANDIT_OPTIONAL = ("final_regret", "error") + BANDIT_SETTING_COLUMNS

# d_KL >= 0, but `kl` is a Monte Carlo mean of log(p / p_hat) over sampled test
# labels, so an agent close to the environment can get a slightly negative
# estimate (the standard preset has estimates 0.1 standard errors above 0). Only
# an estimate this many of its standard errors below 0 (or any negative one
# without kl_stderr) is certainly wrong: a sign error or a corrupt value.
KL_NOISE_STDERRS = 4.0


@dataclasses.dataclass(frozen=True)
class _Source:
    """Where a table came from, to name its rows in messages."""

    name: str  # the file's path, or a name such as "testbed table"
    lines: tuple[int, ...] | None = None  # CSV line number of each data row

    def row(self, index: int) -> str:
        """'data row 3 (CSV line 4)' for the row at 0-based position `index`."""
        where = f"data row {index + 1}"
        if self.lines is not None and index < len(self.lines):
            where += f" (CSV line {self.lines[index]})"
        return where


def _is_blank(record: Sequence[str]) -> bool:
    # pandas skips empty and whitespace-only lines; so must the row count here.
    return len(record) == 0 or (len(record) == 1 and not record[0].strip())


def read_results_csv(
    path: str | Path, required: Sequence[str], optional: Sequence[str] = ()
) -> tuple[pd.DataFrame, tuple[int, ...]]:
    """Reads a results CSV after checking its structure; returns (frame, line numbers).

    Checks: the file exists (FileNotFoundError otherwise), matches its checksum
    file and recorded row count when it has one (a file without one, e.g. made by
    hand or by another tool, is read unverified), is UTF-8 text, has a
    header with no repeated `required` column, at least one data row, the same
    number of fields on every row as in the header, and every `required` column.
    `optional` is only named in the message about missing columns. The line
    numbers are the 1-based CSV line on which each data row starts.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"results file not found: {path}")
    expected = f"required columns: {list(required)}" + (f"; optional: {list(optional)}" if optional else "")
    try:
        # utf-8-sig: a byte-order mark from a spreadsheet export is not part of the first column's name.
        # Read with retries: a run in progress may be replacing it (_src/files.py).
        raw, recorded_rows = read_verified_results(path)
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ValueError(
            f"{path} is not UTF-8 text (byte {error.start}); expected a CSV file with {expected}"
        ) from None
    if not text.strip():
        raise ValueError(f"{path} is empty; expected a header line and at least one data row ({expected})")
    reader = csv.reader(io.StringIO(text))
    header: list[str] | None = None
    lines: list[int] = []
    records: list[tuple[int, int]] = []  # (start line, number of fields) of each data row
    previous_end = 0
    try:
        for record in reader:
            start, previous_end = previous_end + 1, reader.line_num
            if _is_blank(record):
                continue
            if header is None:
                header = record
                continue
            records.append((start, len(record)))
    except csv.Error as error:
        raise ValueError(f"{path}: CSV line {reader.line_num} cannot be read ({error})") from None
    assert header is not None  # the text is not blank
    for index, (start, fields) in enumerate(records):
        if fields != len(header):
            cut = ""
            if index == len(records) - 1 and not text.endswith(("\n", "\r")):
                cut = "; the file ends in the middle of this row (cut off, e.g. by an interrupted write or copy)"
            missing = f", values missing from column {header[fields]!r} on" if fields < len(header) else ""
            raise ValueError(
                f"{path}: data row {index + 1} (CSV line {start}) has {fields} fields but the header has "
                f"{len(header)}{missing}{cut}; every row needs one value per column (empty for a missing value)"
            )
        lines.append(start)
    if not records:
        raise ValueError(f"{path} has a header but no data rows; expected at least one row of results")
    repeated = sorted({c for c in header if header.count(c) > 1 and c in required})
    if repeated:
        raise ValueError(f"{path} has columns {repeated} more than once; each column must appear once")
    missing = [c for c in required if c not in header]
    if missing:
        raise ValueError(f"{path} is missing columns {missing} (has {header}); {expected}")
    try:
        frame = pd.read_csv(io.StringIO(text))
    except (pd.errors.ParserError, ValueError) as error:
        reason = " ".join(str(error).split())
        cut = "" if text.endswith(("\n", "\r")) else "; the file does not end with a newline: was it cut off?"
        raise ValueError(f"{path} is not a readable CSV file ({reason}){cut}") from None
    if recorded_rows is not None and recorded_rows != len(frame):
        raise ValueError(f"{path} has {len(frame)} data rows but its checksum file records {recorded_rows}")
    # The checks above used the same text, so the rows line up; if pandas ever
    # counts differently, messages name data rows without line numbers.
    return frame, tuple(lines) if len(lines) == len(frame) else ()


def _is_missing(value) -> bool:
    return value is None or value is pd.NA or (isinstance(value, (float, np.floating)) and np.isnan(value))


def _shown(value) -> str:
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    return str(value)


def _fail(frame: pd.DataFrame, source: _Source, column: str, bad, problem: str, accepted: str) -> None:
    """Raises ValueError naming the first row where `bad` is True, if any."""
    bad = np.asarray(bad, dtype=bool)
    if not bad.any():
        return
    index = int(np.flatnonzero(bad)[0])
    count = int(bad.sum())
    more = f" ({count} rows of this column are affected; the first is shown)" if count > 1 else ""
    value = frame[column].iloc[index]
    where = f"{source.name}: {source.row(index)}, column {column!r}"
    # pandas reads an empty field and "NaN" alike, so the message cannot tell them apart.
    what = f"{where} is empty or NaN" if _is_missing(value) else f"{where}: {_shown(value)} {problem}"
    raise ValueError(f"{what}; accepted: {accepted}{more}")


def _numbers(frame: pd.DataFrame, source: _Source, column: str, accepted: str) -> np.ndarray:
    """The column as float64; raises for a value that is present but not a number."""
    raw = frame[column]
    values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    _fail(frame, source, column, raw.notna().to_numpy() & np.isnan(values), "is not a number", accepted)
    return values


def _whole(values: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return np.isfinite(values) & (values == np.round(values))


def _check_text(frame: pd.DataFrame, source: _Source, column: str) -> None:
    raw = frame[column]
    empty = raw.isna().to_numpy() | (raw.astype(str).str.strip() == "").to_numpy()
    _fail(frame, source, column, empty, "is blank", "a non-empty name")


def _check_whole(
    frame: pd.DataFrame, source: _Source, column: str, minimum: int | None, empty_ok: bool = False
) -> None:
    """Whole numbers >= `minimum` (if given); empty cells only where `empty_ok`."""
    accepted = "a whole number" + (f" >= {minimum}" if minimum is not None else "")
    if empty_ok:
        accepted += ", or empty"
    values = _numbers(frame, source, column, accepted)
    empty = np.isnan(values) & frame[column].isna().to_numpy()
    if not empty_ok:
        _fail(frame, source, column, empty, "is empty", accepted)
    wrong = ~empty & ~_whole(values)
    if minimum is not None:
        with np.errstate(invalid="ignore"):
            wrong |= ~empty & (values < minimum)
    _fail(frame, source, column, wrong, "is out of range", accepted)


def _as_int(column: pd.Series) -> pd.Series:
    """A checked whole-number column as int64, so that seed 3 and seed 3.0 join."""
    return pd.to_numeric(column).astype(np.int64)


def failed_rows(bandit: pd.DataFrame) -> np.ndarray:
    """Boolean mask of the rows of failed bandit runs: a non-empty `error` (none without the column)."""
    if "error" not in bandit.columns:
        return np.zeros(len(bandit), dtype=bool)
    error = bandit["error"]
    return (error.notna() & (error.astype(str).str.strip() != "")).to_numpy()


def _checked_columns(
    frame: pd.DataFrame, name: str, lines: Sequence[int] | None, required: Sequence[str], optional: Sequence[str]
) -> tuple[pd.DataFrame, _Source]:
    """(frame with a fresh index, where its rows came from) once it has the required
    columns; ValueError naming the missing ones, the required and the optional."""
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise ValueError(
            f"{name} is missing columns {missing} (has {list(frame.columns)}); required columns: "
            f"{list(required)}; optional: {list(optional)}"
        )
    return frame.reset_index(drop=True), _Source(name, tuple(lines) if lines else None)


def check_testbed(frame: pd.DataFrame, name: str = "testbed table", lines: Sequence[int] | None = None) -> pd.DataFrame:
    """Checks the values of a testbed table (columns: see the module doc); returns
    it with seed and tau as int64. Raises ValueError naming the first bad row."""
    frame, source = _checked_columns(frame, name, lines, TESTBED_REQUIRED, TESTBED_OPTIONAL)
    _check_text(frame, source, "agent")
    _check_whole(frame, source, "tau", 1)
    _check_whole(frame, source, "kappa", 1, empty_ok=True)
    _check_whole(frame, source, "seed", None)
    for column, minimum in (("input_dim", 1), ("num_train", 0)):
        if column in frame.columns:
            _check_whole(frame, source, column, minimum)
    if "temperature" in frame.columns:
        accepted = "a finite number > 0"
        temperature = _numbers(frame, source, "temperature", accepted)
        with np.errstate(invalid="ignore"):
            _fail(frame, source, "temperature", ~(np.isfinite(temperature) & (temperature > 0)),
                  "is out of range", accepted)  # fmt: skip
    accepted = (
        f"a number >= 0 (d_KL is a divergence; down to -{KL_NOISE_STDERRS:g} x kl_stderr is taken as Monte Carlo "
        "noise), or empty, NaN or inf for a failed estimate"
    )
    kl = _numbers(frame, source, "kl", accepted)
    stderr = np.zeros(len(frame))
    if "kl_stderr" in frame.columns:
        stderr = pd.to_numeric(frame["kl_stderr"], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
        stderr = np.where(np.isfinite(stderr) & (stderr > 0), stderr, 0.0)
    with np.errstate(invalid="ignore"):
        _fail(frame, source, "kl", kl < -KL_NOISE_STDERRS * stderr, "is out of range", accepted)
    return frame.assign(tau=_as_int(frame["tau"]), seed=_as_int(frame["seed"]))


def check_bandit(frame: pd.DataFrame, name: str = "bandit table", lines: Sequence[int] | None = None) -> pd.DataFrame:
    """Checks the values of a bandit table (columns: see the module doc); returns it
    with seed and step as int64. Raises ValueError naming the first bad row."""
    frame, source = _checked_columns(frame, name, lines, BANDIT_REQUIRED, BANDIT_OPTIONAL)
    _check_text(frame, source, "agent")
    _check_whole(frame, source, "seed", None)
    _check_whole(frame, source, "step", 0)
    failed = failed_rows(frame)
    for column in ("cumulative_regret", "final_regret"):
        if column not in frame.columns:
            continue
        # Only non-finite values are certainly wrong. Regret measured against
        # realised rewards (other tools) can be negative, and a failed run marks
        # its rows with `error`, as `decision-bench bandit` does; a NaN without
        # one would be silently dropped or averaged.
        accepted = "a finite number (NaN only in rows of a failed run, whose error column is non-empty)"
        values = _numbers(frame, source, column, accepted)
        _fail(frame, source, column, ~failed & ~np.isfinite(values), "is not finite", accepted)
    return frame.assign(seed=_as_int(frame["seed"]), step=_as_int(frame["step"]))


def read_testbed(path: str | Path) -> pd.DataFrame:
    """testbed.csv, checked (structure and values; see the module doc)."""
    frame, lines = read_results_csv(path, TESTBED_REQUIRED, TESTBED_OPTIONAL)
    return check_testbed(frame, str(path), lines)


def read_bandit(path: str | Path) -> pd.DataFrame:
    """bandit.csv, checked (structure and values; see the module doc)."""
    frame, lines = read_results_csv(path, BANDIT_REQUIRED, BANDIT_OPTIONAL)
    return check_bandit(frame, str(path), lines)
