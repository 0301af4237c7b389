"""The bundled models: shapes, and the transformer's causality."""

from __future__ import annotations

from importlib import import_module

import pytest
import torch

from helpers.project import PACKAGE

char_transformer = import_module(f"{PACKAGE}.research.models.char_transformer")
mlp = import_module(f"{PACKAGE}.research.models.mlp")


def test_transformer_position_t_sees_only_positions_up_to_t() -> None:
    torch.manual_seed(0)
    model = char_transformer.CharTransformer(vocab_size=11, context_length=16, width=32, depth=2, heads=4, dropout=0.0)
    ids = torch.randint(11, (2, 16))
    changed = ids.clone()
    changed[:, 9] = (ids[:, 9] + 1) % 11
    before, after = model(ids), model(changed)
    assert before.shape == (2, 16, 11)
    assert torch.equal(before[:, :9], after[:, :9])
    assert not torch.allclose(before[:, 9:], after[:, 9:])


def test_transformer_takes_shorter_inputs_and_ties_its_head_to_the_embedding() -> None:
    model = char_transformer.CharTransformer(vocab_size=5, context_length=8, width=16, depth=1, heads=2, dropout=0.1)
    assert model(torch.zeros(1, 3, dtype=torch.long)).shape == (1, 3, 5)
    assert model.head.weight is model.tokens.weight
    with pytest.raises(ValueError, match="must be a multiple of model.heads"):
        char_transformer.CharTransformer(vocab_size=5, context_length=8, width=10, depth=1, heads=4, dropout=0.0)


def test_mlp_maps_features_to_class_logits() -> None:
    assert mlp.MLP(64, 10, [32, 16], 0.1)(torch.zeros(4, 64)).shape == (4, 10)
