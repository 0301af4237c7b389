"""`<package> sample RUN_DIR`: text generated from a language-model run's latest checkpoint.

The run's own `config.yaml` rebuilds its data (for the alphabet) and its model; the weights come from the
newest valid checkpoint in `RUN_DIR/checkpoints/`. Characters are drawn one at a time from the model's
next-character distribution (divided by `temperature`), with a generator seeded by `seed` on the CPU with the
run's thread count: the same run, prompt and seed give the same text.
"""

from __future__ import annotations

from pathlib import Path

import torch
from hydra.utils import get_class, instantiate
from samebits import UsageError
from samebits.core.determinism import make_deterministic
from samebits.core.evaluation import saved_checkpoint, saved_config
from torch import Tensor, nn


def sample(run_dir: Path, chars: int, prompt: str, seed: int, temperature: float) -> str:
    """The prompt followed by `chars` generated characters."""
    cfg = saved_config(run_dir, needs=["data"])  # a run of another task is told so before anything else
    data_class = get_class(cfg.data._target_)
    if not (hasattr(data_class, "encode") and hasattr(data_class, "decode")):
        raise UsageError(
            f"{run_dir} is not a language-model run: its data ({cfg.data._target_}) does not encode text; "
            "sample a run of experiment=char_transformer"
        )
    cfg = saved_config(run_dir)  # with everything sampling reads
    _, state = saved_checkpoint(run_dir, cfg)
    make_deterministic(cfg.trainer.num_threads, "cpu")
    data = instantiate(cfg.data, root=cfg.paths.data_dir, _convert_="all")
    model = instantiate(cfg.model, _convert_="all")
    model.load_state_dict(state["model"])
    try:
        prompt_ids = data.encode(prompt)
    except ValueError as error:
        raise UsageError(f"the prompt cannot be encoded: {error}; use only characters of the training text") from None
    generator = torch.Generator().manual_seed(seed)
    return prompt + data.decode(generate(model, prompt_ids, chars, generator, temperature))


@torch.no_grad()
def generate(model: nn.Module, prompt: Tensor, count: int, generator: torch.Generator, temperature: float) -> Tensor:
    """`count` token ids drawn one after the other, each given the prompt and the ids drawn before it."""
    model.eval()
    ids = prompt[None]
    for _ in range(count):
        logits = model(ids[:, -model.context_length :])[:, -1] / temperature
        drawn = torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=generator)
        ids = torch.cat([ids, drawn], dim=1)
    return ids[0, len(prompt) :]
