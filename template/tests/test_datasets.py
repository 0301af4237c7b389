"""The bundled datasets: fixed held-out splits, and training batches that depend only on (seed, epoch, indices)."""

from __future__ import annotations

from importlib import import_module
from pathlib import Path

import pytest
import torch

from helpers.project import PACKAGE

batches = import_module("samebits.core.batches")
digits = import_module(f"{PACKAGE}.research.datasets.digits")
char_text = import_module(f"{PACKAGE}.research.datasets.char_text")
pydoc_topics = import_module(f"{PACKAGE}.research.datasets.pydoc_topics")
schemas = import_module(f"{PACKAGE}.research.schemas")


def request(epoch: int, indices: list[int], seed: int = 0) -> object:
    return batches.BatchRequest(seed, epoch, indices)


@pytest.fixture(scope="module")
def text() -> object:
    settings = schemas.PydocTextConfig()
    return char_text.PydocText("unused", 8, 16, settings.context_length, settings.val_every, settings.vocab_size)


def test_digits_split_matches_what_its_schema_announces(data_dir: Path) -> None:
    settings = schemas.DigitsConfig()
    data = digits.Digits(data_dir, 64, 512, 0.2, 0, 0.05, 1797, 64, 10)
    assert len(data.train) == settings.train_samples() == 1438 and len(data.val) == 359
    first, again = data.train.__getitems__(request(3, [0, 5])), data.train.__getitems__(request(3, [5, 0]))
    assert torch.equal(first[0][0], again[0][1])  # a sample's noise does not depend on its batch
    assert not torch.equal(first[0], data.train.__getitems__(request(4, [0, 5]))[0])  # but on the epoch


def test_pydoc_text_holds_out_whole_pages_and_no_training_text_repeats_them() -> None:
    train, val = pydoc_topics.split(10)
    pages = list(dict.fromkeys(pydoc_topics.topics()[name] for name in sorted(pydoc_topics.topics())))
    assert val == "".join(pages[::10]) and len(val) > 20_000 and len(train) > 400_000
    long_paragraphs = {p for page in pages[::10] for p in page.split("\n\n") if len(p) > 40}
    assert long_paragraphs and not any(paragraph in train for paragraph in long_paragraphs)
    assert pydoc_topics.topics()["if"] in val  # `else` shows the same page; `compound` repeats it


def test_pydoc_text_holds_out_test_pages_apart_from_validation_and_training() -> None:
    assert pydoc_topics.held_out_splits(10, 0)[2] == ""  # no test split (the default)
    train, val, test = pydoc_topics.held_out_splits(10, 10)
    assert len(train) < len(pydoc_topics.split(10)[0]) - len(test)  # its pages, and their repeats, left training
    pages = list(dict.fromkeys(pydoc_topics.topics()[name] for name in sorted(pydoc_topics.topics())))
    rest = [page for page in pages if page not in pages[::10]]
    assert val == pydoc_topics.split(10)[1] and test == "".join(rest[::10]) and len(test) > 20_000
    long_paragraphs = {p for page in rest[::10] for p in page.split("\n\n") if len(p) > 40}
    assert long_paragraphs and not any(paragraph in train for paragraph in long_paragraphs)
    assert not any(page in val for page in rest[::10])


def test_pydoc_text_windows_predict_the_next_character(text: object) -> None:
    assert len(text.alphabet) == schemas.PydocTextConfig().vocab_size == len(set("".join(pydoc_topics.split(10))))
    assert len(text.train) == schemas.PydocTextConfig().train_samples()
    inputs, targets = text.train.__getitems__(request(0, [0, 7, 3]))
    assert inputs.shape == targets.shape == (3, 64)
    assert torch.equal(inputs[:, 1:], targets[:, :-1])
    val_inputs, val_targets = text.val[0]
    assert torch.equal(val_inputs[1:], val_targets[:-1])
    train, val = pydoc_topics.split(10)
    assert text.decode(val_inputs) == val[:64]
    assert text.decode(inputs[0]) in train


def test_pydoc_text_cuts_each_epoch_at_other_places(text: object) -> None:
    offsets = set()
    for epoch in range(8):
        inputs, _ = text.train.__getitems__(request(epoch, [0]))
        train = pydoc_topics.split(10)[0]
        offsets.add(train.index(text.decode(inputs[0])))
        again, _ = text.train.__getitems__(request(epoch, [0]))
        assert torch.equal(inputs, again)
    assert len(offsets) > 1 and all(offset < 64 for offset in offsets)


def test_encode_and_decode_round_trip_and_refuse_unknown_characters(text: object) -> None:
    assert text.decode(text.encode("def f(x):\n    return x")) == "def f(x):\n    return x"
    with pytest.raises(ValueError, match="characters not in the text's alphabet: '€'"):
        text.encode("5 €")
