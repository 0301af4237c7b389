"""scikit-learn's bundled 8x8 handwritten digits (1,797 images, 10 classes): no download needed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from samebits import ArrayDataset, BatchRequest, write_atomic
from torch import Tensor


class Digits:
    """Images as 64 grey levels in [0, 1], labels 0-9; fixed validation and (optional) test splits that depend on
    `split_seed` only. With `test_fraction=0` there is no test split, and the others are as they were before it.

    The arrays are cached as `digits.npz` under `root` on first use, so later runs skip importing
    scikit-learn, which is slow (external/samebits/BENCHMARKS.md has the figure).
    """

    def __init__(
        self,
        root: str | Path,
        batch_size: int,
        eval_batch_size: int,
        val_fraction: float,
        split_seed: int,
        noise_std: float,
        num_samples: int,
        num_features: int,
        num_classes: int,
        test_fraction: float = 0.0,
    ) -> None:
        inputs, labels = _cached_digits(Path(root) / "digits.npz")
        if inputs.shape != (num_samples, num_features) or int(labels.max()) + 1 != num_classes:
            raise ValueError(f"digits data has shape {tuple(inputs.shape)}, not ({num_samples}, {num_features})")
        order = torch.randperm(num_samples, generator=torch.Generator().manual_seed(split_seed))
        num_val, num_test = round(num_samples * val_fraction), round(num_samples * test_fraction)
        val, test, train = order[:num_val], order[num_val : num_val + num_test], order[num_val + num_test :]
        self.batch_size, self.eval_batch_size = batch_size, eval_batch_size
        self.train = NoisyImages(inputs[train], labels[train], noise_std)
        self.val = ArrayDataset(inputs[val], labels[val])
        self.test = ArrayDataset(inputs[test], labels[test]) if num_test else None  # for `<package> eval --split test`


class NoisyImages(ArrayDataset):
    """Training images with Gaussian input noise that depends only on `(seed, epoch, index)`.

    Each epoch's noise is drawn once for the whole set, and sample `index` takes row `index`.
    """

    def __init__(self, inputs: Tensor, labels: Tensor, noise_std: float) -> None:
        super().__init__(inputs, labels)
        self.noise_std = noise_std
        self._noise_key, self._noise = (-1, -1), torch.empty(0)

    def __getitems__(self, request: BatchRequest) -> tuple[Tensor, ...]:  # type: ignore[override]
        inputs, labels = super().__getitems__(request.indices)
        if self.noise_std == 0:
            return inputs, labels
        if self._noise_key != (request.seed, request.epoch):
            self._noise_key = (request.seed, request.epoch)
            self._noise = torch.randn(self.tensors[0].shape, generator=request.generator("noise"))
        return inputs + self.noise_std * self._noise[torch.as_tensor(request.indices)], labels


def _cached_digits(path: Path) -> tuple[Tensor, Tensor]:
    if not path.exists():
        from sklearn.datasets import load_digits  # slow import, paid once per data folder

        digits = load_digits()
        inputs, labels = (digits.data / 16.0).astype(np.float32), digits.target.astype(np.int64)
        write_atomic(path, lambda out: np.savez(out, inputs=inputs, labels=labels))  # safe against concurrent runs
    with np.load(path) as arrays:
        return torch.from_numpy(arrays["inputs"]), torch.from_numpy(arrays["labels"])
