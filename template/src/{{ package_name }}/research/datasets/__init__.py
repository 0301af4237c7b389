"""Datasets: one small class per file, each built from a `configs/data/` option.

A dataset class gives the loop `train`, `val`, `batch_size` and `eval_batch_size`; see samebits.core.batches for
what each must be, and for how a training batch reaches `train`.
"""
