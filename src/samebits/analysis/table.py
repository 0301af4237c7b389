"""The run table: one row per run with its provenance, the settings that differ among the runs, and its final
metrics; printed, or written as CSV or parquet for pandas, spreadsheets and notebooks.

Rows are built from `RunRecord`s (records.py) only, so any source of runs gives the same table: `frame(records)`.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.errors import UsageError
from ..project import current
from . import folders
from .records import RunRecord, display, swept_columns

if TYPE_CHECKING:
    import pandas as pd

RUN_COLUMNS = ("run_name", "main_tag", "tags", "state", "commit", "config_sha256")
SUFFIXES = (".csv", ".parquet")
SHORT_HASH = 10  # on a terminal; files keep the full commit and config hash


def collect(runs_dir: Path, main_tag: str | None = None) -> pd.DataFrame:
    """The table of the run folders under `runs_dir`, or of one main tag; no runs is a one-line error."""
    found = folders.records(runs_dir, main_tag)
    if not found:
        raise UsageError(
            f"no runs in {runs_dir / (main_tag or '')}: train some first (python -m {current().package}.train)"
        )
    return frame(found)


def frame(records: Sequence[RunRecord]) -> pd.DataFrame:
    """One row per record: RUN_COLUMNS, the swept settings, `step`, then every final metric (validation first)."""
    import pandas as pd

    swept = swept_columns({record.name: record.settings for record in records})
    metrics = sorted({name for record in records for name in record.metrics}, key=lambda n: (n[:4] != "val/", n))
    columns = [*RUN_COLUMNS, *swept, "step", *metrics]
    return pd.DataFrame([row(record, swept) for record in records], columns=columns)


def row(record: RunRecord, swept: Sequence[str]) -> dict[str, object]:
    """One run's row: a setting the run lacks is empty, as is a metric it never logged."""
    return {
        "run_name": record.name,
        "main_tag": record.main_tag,
        "tags": ",".join(record.tags),
        "state": record.state,
        "commit": record.commit,
        "config_sha256": record.config_sha256,
        **{key: display(record.settings.get(key)) for key in swept},
        "step": record.step,
        **record.metrics,
    }


def check_out(out: Path) -> None:
    """Refuse an --out the table cannot be written to, before any run is read."""
    if out.suffix not in SUFFIXES:
        raise UsageError(
            f"--out {out}: the table is written as .csv or .parquet, not {out.suffix or 'a name without suffix'}"
        )
    if out.suffix == ".parquet" and find_spec("pyarrow") is None:
        raise UsageError(f"--out {out}: parquet needs pyarrow (in the dev group: uv sync), or write .csv")


def write(table: pd.DataFrame, out: Path) -> None:
    check_out(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.suffix == ".csv":
        table.to_csv(out, index=False)
    else:
        _as_text(table, _mixed(table)).to_parquet(out, index=False)


def text(table: pd.DataFrame) -> str:
    """The table for a terminal: hashes cut short, numbers to 4 significant digits."""
    short = table.assign(**{column: table[column].map(_short) for column in ("commit", "config_sha256")})
    short = short.assign(
        **{column: short[column].map(_dash) for column in short.columns if short[column].dtype == object}
    )
    return short.to_string(index=False, float_format=lambda value: f"{value:.4g}", na_rep="-")


def _mixed(table: pd.DataFrame) -> list[str]:
    """Columns whose cells have several types (a setting that is 4 in one run and "auto" in another): parquet
    wants one type per column."""
    return [
        column
        for column in table.columns
        if table[column].dtype == object and len({type(value) for value in table[column].dropna()}) > 1
    ]


def _as_text(table: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    return table.assign(**{column: table[column].map(lambda v: v if v is None else str(v)) for column in columns})


def _short(value: object) -> object:
    return value[:SHORT_HASH] if isinstance(value, str) else value


def _dash(value: object) -> object:
    return "-" if value is None else value
