"""`<package> plot`: every documented way of calling it gives a figure that reads, on real runs of two experiments.

The runs: a digits sweep (2 learning rates x 2 seeds), a digits run that differs from one of them in many settings,
the shortened language-model run, and a main tag holding one run of each experiment. Each figure is drawn with
every warning an error (matplotlib's "constrained_layout not applied" included), then its layout is measured:
every legend inside the figure and off every data area, every title, label and tick inside the figure."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import warnings
from importlib import import_module
from pathlib import Path

import pytest

from library.helpers.project import PACKAGE, ROOT
from library.helpers.runs import RunTraining

folders = import_module("samebits.analysis.folders")
core_runs = import_module("samebits.core.runs")
plots = import_module("samebits.analysis.plots")
records = import_module("samebits.analysis.records")
exit_on_error = import_module("samebits.core.errors").exit_on_error

SHORT = [
    "trainer.max_steps=20",
    "sched.warmup_steps=5",
    "trainer.eval_every=10",
    "trainer.log_every=5",
    "trainer.ckpt_every=10",
]
# What the varied run changes, all at once, from the sweep's run with optim.lr=3e-3 and seed=0.
VARIED = [
    "trainer.max_steps=30",
    "optim.lr=1e-3",
    "model.hidden_sizes=[32,16]",
    "model.dropout=0.2",
    "optim.weight_decay=0.1",
    "data.noise_std=0.1",
    "data.batch_size=32",
    "seed=3",
]
PLOT_FILES = ("config.yaml", "status.json", "summary.json", "metrics.jsonl")  # what plot reads of a run
LONGEST_LINE = 60  # characters in one line of a legend


def _copy_run(run_dir: Path, main_tag_dir: Path) -> None:
    (main_tag_dir / run_dir.name).mkdir(parents=True)
    for name in PLOT_FILES:
        shutil.copy(run_dir / name, main_tag_dir / run_dir.name / name)


@pytest.fixture(scope="module")
def runs(run_training: RunTraining, lm_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Main tags `sweep` (4 digits runs), `varied` (2 digits runs differing in 8 settings and their seed),
    `char-lm` (the language-model run) and `mixed` (one run of each experiment under one main tag)."""
    runs_dir = tmp_path_factory.mktemp("plot-runs")
    sweep = run_training(runs_dir, "hydra.mode=MULTIRUN", "optim.lr=1e-3,3e-3", "seed=0,1", *SHORT, "main_tag=sweep")
    assert sweep.returncode == 0, sweep.stderr
    varied = run_training(runs_dir, *SHORT, *VARIED, "main_tag=varied")
    assert varied.returncode == 0, varied.stderr
    base = next(
        run_dir
        for run_dir in core_runs.run_dirs(runs_dir, "sweep")
        if {"seed": 0, "optim.lr": 3e-3}.items() <= folders.settings(run_dir).items()
    )
    _copy_run(base, runs_dir / "varied")
    _copy_run(lm_run, runs_dir / "char-lm")
    _copy_run(lm_run, runs_dir / "mixed")
    _copy_run(base, runs_dir / "mixed")
    return runs_dir


def draw(runs: Path, out: Path, metric: str, main_tag: str | None, by: str | None) -> object:
    """`plots.plot`, saved to `out`, with any warning raised as an error; then laid out again at the PNG's
    resolution, to be measured as written (text is not drawn at exactly proportional sizes across resolutions)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from PIL import Image

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        figure = plots.plot(runs, metric, main_tag, by, out)
        FigureCanvasAgg(figure)
        with Image.open(out) as png:
            figure.set_dpi(round(png.info["dpi"][0]))
        figure.canvas.draw()
    return figure


def check_layout(figure: object) -> None:
    """Every legend inside the figure and off every axes' data area; every axes' decorations inside the figure,
    and no data area squeezed small."""
    renderer = figure.canvas.get_renderer()
    page = figure.bbox
    data_areas = [axes.get_window_extent(renderer) for axes in figure.axes]
    for axes, area in zip(figure.axes, data_areas, strict=True):
        assert area.width >= 3 * figure.dpi and area.height >= 2 * figure.dpi, "the data area was squeezed"
        decorated = axes.get_tightbbox(renderer, for_layout_only=False)  # title, labels, ticks and the legend
        assert page.x0 - 1 <= decorated.x0 and decorated.x1 <= page.x1 + 1, (decorated, page)
        assert page.y0 - 1 <= decorated.y0 and decorated.y1 <= page.y1 + 1, (decorated, page)
        legend = axes.get_legend()
        assert legend is not None
        box = legend.get_window_extent(renderer)
        assert page.x0 <= box.x0 and box.x1 <= page.x1 and page.y0 <= box.y0 and box.y1 <= page.y1
        for other in data_areas:
            assert not box.overlaps(other), "a legend covers a data area"
        lines = [line for text in [legend.get_title(), *legend.get_texts()] for line in text.get_text().split("\n")]
        assert max(len(line) for line in lines) <= LONGEST_LINE, lines


def panels(figure: object) -> dict[str, list[str]]:
    """{main tag: its legend's labels} per axes, from the titles `<metric> of main tag <tag>`."""
    found = {}
    for axes in figure.axes:
        tag = re.fullmatch(r".+ of main tag (\S+)", axes.get_title())
        assert tag is not None, axes.get_title()
        found[tag.group(1)] = [text.get_text() for text in axes.get_legend().get_texts()]
    return found


def swept(runs: Path, main_tag: str) -> list[str]:
    return records.swept_columns({str(run): folders.settings(run) for run in core_runs.run_dirs(runs, main_tag)})


CALLS = [  # (METRIC, --tag, --by): the README's calls, and each case the figure must survive
    ("val/loss", None, None),
    ("val/loss", None, "optim.lr"),
    ("val/acc", "sweep", None),
    ("val/loss", "sweep", "optim.lr"),
    ("train/loss", "sweep", "seed"),
    ("val/loss", "char-lm", None),
    ("val/loss", "varied", None),
    ("val/loss", "varied", "model.dropout"),
    ("val/loss", "mixed", None),
    ("val/bpc", None, None),
]


@pytest.mark.parametrize(("metric", "main_tag", "by"), CALLS)
def test_every_call_gives_a_figure_that_reads(
    runs: Path, tmp_path: Path, metric: str, main_tag: str | None, by: str | None
) -> None:
    out = tmp_path / "plot.png"
    figure = draw(runs, out, metric, main_tag, by)
    assert out.stat().st_size > 0
    check_layout(figure)
    found = panels(figure)
    logged = [
        tag
        for tag in core_runs.main_tags(runs)
        if any(metric in line for run in core_runs.run_dirs(runs, tag) for line in folders.lines(run))
    ]
    assert list(found) == ([main_tag] if main_tag else logged)  # one panel per main tag, never two on one axes
    for tag, labels in found.items():
        differ = swept(runs, tag)
        named = {name for label in labels for name in re.findall(r"([\w.]+)=", label)}
        assert named <= set(differ), f"{tag}: labels name settings that do not differ: {named - set(differ)}"


def test_labels_name_the_settings_that_differ_and_nothing_else(runs: Path, tmp_path: Path) -> None:
    found = panels(draw(runs, tmp_path / "all.png", "val/loss", None, None))
    assert sorted(found["sweep"]) == [f"optim.lr={lr}\n(mean, min–max over 2 seeds)" for lr in ("0.001", "0.003")]
    (lm_label,) = found["char-lm"]
    assert lm_label.replace("\n", "") == next((runs / "char-lm").iterdir()).name  # nothing differs: its name
    varied = " ".join(found["varied"]).replace("\n", " ")
    assert all(f"{name}=" in varied for name in swept(runs, "varied"))  # 8 settings and the seed: all of them
    assert len(swept(runs, "varied")) == 9
    lines = [line for label in found["varied"] for line in label.split("\n")]
    assert any("model.hidden_sizes=[32, 16]" in line for line in lines), lines  # a line breaks between settings
    assert sorted(found["mixed"]) == ["model._target_=CharTransformer", "model._target_=MLP"]  # one tells them apart
    figure = draw(runs, tmp_path / "mixed.png", "val/loss", "mixed", None)
    title = figure.axes[0].get_legend().get_title().get_text()
    hidden = len([name for name in swept(runs, "mixed") if name != "seed"]) - 1  # all but the model's class
    assert f"{hidden} more settings differ" in title and "collect --tag mixed" in title


def test_too_many_main_tags_for_one_figure_is_one_line(
    runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    many = tmp_path / "runs"
    run = core_runs.run_dirs(runs, "sweep")[0]
    for index in range(8):  # more main tags than panels one figure holds
        _copy_run(run, many / f"tag{index}")
    with pytest.raises(SystemExit) as exit_info, exit_on_error():
        plots.plot(many, "val/loss", None, None, None)
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert len(error.splitlines()) == 1 and "--tag" in error and "tag0" in error
    figure = draw(many, tmp_path / "one.png", "val/loss", "tag0", None)  # the hint's call works
    check_layout(figure)


def test_plot_of_every_main_tag_from_the_command_line_warns_of_nothing(runs: Path, tmp_path: Path) -> None:
    """The issue's call: `plot val/loss`, no --tag, in its own process as users run it."""
    out = tmp_path / "all.png"
    env = {**os.environ, "RUNS_DIR": str(runs)}
    done = subprocess.run(
        [sys.executable, "-m", PACKAGE, "plot", "val/loss", "--out", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.strip() == str(out) and out.stat().st_size > 0
