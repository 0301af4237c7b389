"""`<package> search SPACE`: an Optuna study whose every trial is an ordinary named, idempotent run.

SPACE is a YAML file (configs/search/digits.yaml): the metric and its direction, how many completed trials to
end with, the sampler's seed, the overrides every trial shares, and one Optuna distribution per setting.

- The study lives in `<runs folder>/<main_tag>/optuna.db` (sqlite), beside the runs it made, named after SPACE
  (or --study).
- A trial's parameters become overrides, and the run goes through `launch` (launch/command.py): named as
  training names it, planned, and submitted on the chosen backend. A finished run is never trained again.
- The search polls its trials' run folders: a finished run's metric (summary.json) is told to the study; a
  failed run is told as failed; a lost or preempted one is launched again, and resumes from its checkpoint. A run
  whose records are damaged stops the search in one line naming the file (waiting on it would wait forever).
- Stopped (Ctrl-C, a closed terminal, kill) and started again with the same command, it carries on: the trials
  it had asked but not told are still RUNNING in the study, and their runs are waited for (and launched again if
  they stopped) before any new trial is asked. No trial is run twice.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import optuna
import yaml
from optuna.trial import FrozenTrial, TrialState

from ..core.errors import Interrupted, UsageError
from ..core.run_files import RunFiles
from ..core.runs import runs_root
from ..core.states import BUSY, RESUMABLE
from ..project import current
from . import local
from .command import launch
from .observe import Backends, observe
from .specs import RunSpec, expand

WAITING = BUSY | {"new"}
MAX_RELAUNCHES = 3  # per trial and search: a run that keeps stopping is told as failed


@dataclass(frozen=True)
class Space:
    metric: str
    direction: str
    trials: int
    seed: int
    overrides: list[str]
    params: dict[str, dict[str, Any]]


def search(space_file: Path, study_name: str | None, backend: str, parallel: int, poll_s: float) -> None:
    space = read_space(space_file)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    distributions = {key: distribution(key, spec) for key, spec in space.params.items()}
    main_tag = expand(space.overrides)[0].main_tag
    storage = runs_root(current().root).resolve() / main_tag / "optuna.db"
    storage.parent.mkdir(parents=True, exist_ok=True)
    study = optuna.create_study(
        study_name=study_name or space_file.stem,
        storage=f"sqlite:///{storage}",
        load_if_exists=True,
        direction=space.direction,
        sampler=optuna.samplers.TPESampler(seed=space.seed),
    )
    if started := len(study.trials):
        # A sampler seeded as before would draw the first trials' parameters again (TPE starts with random
        # draws): after a stop, its seed moves on by the trials the study holds, still the same for the same study.
        study.sampler = optuna.samplers.TPESampler(seed=space.seed + started)
    print(f"study {study.study_name} in {storage}: {space.trials} trials of {space.metric} ({space.direction})")
    relaunches: dict[int, int] = {}
    specs: dict[int, RunSpec] = {}
    try:
        while True:
            trials = study.get_trials(deepcopy=False)
            done = [t for t in trials if t.state == TrialState.COMPLETE]
            open_ = [t for t in trials if t.state == TrialState.RUNNING]
            failed = [t for t in trials if t.state == TrialState.FAIL]
            repeats = [t for t in trials if t.state == TrialState.PRUNED]
            if len(done) >= space.trials and not open_:
                break
            if len(failed) > space.trials:
                raise UsageError(
                    f"{len(failed)} trials failed (see their runs' status.json): fix the cause, then search again"
                )
            if len(repeats) > 10 * space.trials:
                too_few = f"the space is too small for {space.trials} distinct trials: widen it, or lower trials"
                raise UsageError(f"the sampler repeated earlier trials {len(repeats)} times; {too_few}")
            tried = {tuple(overrides_of(t.params)) for t in trials if t.state != TrialState.PRUNED}
            for _ in range(min(space.trials - len(done) - len(open_), parallel - len(open_))):
                trial = study.ask(distributions)
                if tuple(overrides_of(trial.params)) in tried:  # the same run: it would add no new trial
                    study.tell(trial, state=TrialState.PRUNED)
                    print(f"trial {trial.number} repeats an earlier trial's parameters: dropped", flush=True)
                    continue
                tried.add(tuple(overrides_of(trial.params)))
                print(f"trial {trial.number}: {' '.join(overrides_of(trial.params))}", flush=True)
                relaunches[trial.number] = 0
                launch_trial(space, trial.params, backend, parallel)
            for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
                if trial.number not in specs:  # composed once per trial, not at every poll: composing is slow
                    specs[trial.number] = expand([*space.overrides, *overrides_of(trial.params)])[0]
                settle(study, space, trial, specs[trial.number], backend, parallel, relaunches)
            local.advance(runs_root(current().root))  # a job killed before it could start the next queued run
            time.sleep(poll_s)
    except KeyboardInterrupt:
        raise Interrupted("run the same command again to carry on (trials still running are waited for then)") from None
    best = study.best_trial
    print(f"best: trial {best.number}, {space.metric}={best.value:.6g}: {' '.join(overrides_of(best.params))}")


def settle(
    study: optuna.Study,
    space: Space,
    trial: FrozenTrial,
    spec: RunSpec,
    backend: str,
    parallel: int,
    relaunches: dict[int, int],
) -> None:
    """Tell the study how an open trial's run ended, launch it (again) if it is not going, or leave it be."""
    seen = observe(spec.run_dir, Backends()) if spec.run_dir.is_dir() else None
    state = seen.state if seen else "new"
    if state == "finished":
        summary = json.loads(RunFiles(spec.run_dir).summary.read_text())
        value = summary["metrics"].get(space.metric)
        if value is None:
            raise UsageError(
                f"{spec.label} reports no {space.metric} (it has {', '.join(summary['metrics'])}): fix metric"
            )
        study.tell(trial.number, value)
        print(f"trial {trial.number} finished: {space.metric}={value:.6g} ({spec.label})", flush=True)
    elif state == "unreadable":  # never guessed: it may be running, or finished
        raise UsageError(f"trial {trial.number} ({spec.label}): {seen.reason if seen else state}; then search again")
    elif state == "failed" or relaunches.get(trial.number, 0) >= MAX_RELAUNCHES:
        study.tell(trial.number, state=TrialState.FAIL)
        print(f"trial {trial.number} failed: {seen.reason if seen else state} ({spec.label})", flush=True)
    elif state in RESUMABLE or (state == "new" and trial.number not in relaunches):
        relaunches[trial.number] = relaunches.get(trial.number, 0) + (state != "new")
        print(f"trial {trial.number}: {state}, launched again ({spec.label})", flush=True)
        launch_trial(space, trial.params, backend, parallel)


def launch_trial(space: Space, params: dict[str, Any], backend: str, parallel: int) -> None:
    launch([*space.overrides, *overrides_of(params)], backend, max_concurrent=parallel)


def overrides_of(params: dict[str, Any]) -> list[str]:
    return [f"{key}={value!r}" if isinstance(value, float) else f"{key}={value}" for key, value in params.items()]


def distribution(key: str, spec: dict[str, Any]) -> optuna.distributions.BaseDistribution:
    if "choices" in spec:
        return optuna.distributions.CategoricalDistribution(spec["choices"])
    low, high = spec.get("low"), spec.get("high")
    if not isinstance(low, int | float) or not isinstance(high, int | float) or not low < high:
        example = "{low: 1.0e-4, high: 1.0e-2}"
        raise UsageError(f"params.{key} needs numbers low < high, or choices: [...], e.g. {example}")
    if isinstance(low, int) and isinstance(high, int) and not spec.get("log"):
        return optuna.distributions.IntDistribution(low, high, step=spec.get("step", 1))
    return optuna.distributions.FloatDistribution(low, high, log=bool(spec.get("log")), step=spec.get("step"))


def read_space(path: Path) -> Space:
    if not path.is_file():
        raise UsageError(f"{path} is not a file: pass a search space, e.g. configs/search/digits.yaml")
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as error:
        raise UsageError(f"{path} is not valid YAML: {str(error).splitlines()[0]}") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("params"), dict) or not raw["params"]:
        raise UsageError(f"{path} needs `params:`, one distribution per setting (see configs/search/digits.yaml)")
    space = Space(
        metric=str(raw.get("metric", "")),
        direction=str(raw.get("direction", "")),
        trials=raw.get("trials", 0),
        seed=raw.get("seed", 0),
        overrides=[str(item) for item in raw.get("overrides") or []],
        params=raw["params"],
    )
    mistakes = []
    if not space.metric:
        mistakes.append(f"{path}: metric is missing, e.g. metric: val/acc")
    if space.direction not in ("maximize", "minimize"):
        mistakes.append(f"{path}: direction must be maximize or minimize, not {space.direction or 'missing'}")
    if not isinstance(space.trials, int) or space.trials < 1:
        mistakes.append(f"{path}: trials must be a whole number >= 1, not {space.trials}")
    for key in sorted(_fixed_keys(space) & set(space.params)):
        mistakes.append(f"{path}: {key} is both a fixed override and a searched parameter: keep one")
    if mistakes:
        raise UsageError(*mistakes)
    return space


def _fixed_keys(space: Space) -> set[str]:
    return {item.partition("=")[0].lstrip("+~") for item in space.overrides}
