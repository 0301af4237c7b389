"""Your research code: models, datasets, objectives and schedules, each one small file that a config in
`configs/` builds with `hydra.utils.instantiate`. You own this folder; `copier update` leaves your edits alone.

To add a component, write its class in the folder of its kind, describe its settings in `schemas.py`, and add a
YAML file to the config group of the same kind (`configs/model/`, `configs/data/`, ...). The loop (the
samebits library, external/samebits) does not change.
"""
