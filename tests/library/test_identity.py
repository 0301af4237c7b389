"""A run's identity is one function: training, naming, the launcher, the trackers and the analysis agree on it,
also where a setting holds its neutral default (a value that computes what runs computed before it existed)."""

from __future__ import annotations

from importlib import import_module

from omegaconf import OmegaConf

from library.helpers.compose import composed

config = import_module("samebits.core.config")
hashing = import_module("samebits.core.hashing")
specs = import_module("samebits.launch.specs")
sweep = import_module("samebits.core.sweep")
records = import_module("samebits.analysis.records")

# trainer.precision=32 and data.test_fraction=0.0 are neutral defaults: they leave a run's identity as it was.
SWEEP = ["trainer.precision=32,bf16", "data.test_fraction=0.0,0.1", "optim.lr=1e-3"]


def test_training_naming_launch_and_analysis_agree_on_each_run_of_a_sweep() -> None:
    launched = [spec.name for spec in specs.expand(SWEEP)]
    points = sweep.points(SWEEP)
    assert len(launched) == len(points) == 4
    for point, name in zip(points, launched, strict=True):
        cfg = composed(*point)
        settings = config.identity(cfg)  # what training claims its run folder with and hashes
        assert cfg.run_name == name
        assert name.endswith(hashing.config_sha256(settings)[:8])
        saved = OmegaConf.to_container(cfg, resolve=True)  # config.yaml, as the analysis reads it
        assert records.identity_settings(saved) == config.flatten(settings)


def test_a_neutral_default_names_the_same_run_as_leaving_it_out() -> None:
    plain, neutral = composed("optim.lr=1e-3"), composed("optim.lr=1e-3", "trainer.precision=32")
    assert plain.run_name == neutral.run_name
    flat = records.identity_settings(OmegaConf.to_container(neutral, resolve=True))
    assert "trainer.precision" not in flat and flat == config.flatten(config.identity(plain))
