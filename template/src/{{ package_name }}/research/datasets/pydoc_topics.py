"""The English text that CPython ships as `pydoc_data.topics`: the pages `help()` shows, about 465,000
characters of prose and code examples over 79 topics, on every Python and with no download.

This module is torch-free, so that the config schemas can read facts about the text (its alphabet, the size of
its training split) while a config is composed. The text differs slightly between Python versions (3.11 has
465,000 characters and 103 symbols, 3.12 and 3.13 about 500,000 and 104): runs compare only on one Python.
"""

from __future__ import annotations

from functools import cache

MIN_SHARED_CHARS = 40  # shorter validation paragraphs (a heading, a "Note:") may recur in training


@cache
def topics() -> dict[str, str]:
    from pydoc_data.topics import topics as pages

    return dict(pages)


@cache
def split(val_every: int) -> tuple[str, str]:
    """The training and validation text; no validation paragraph of over 40 characters occurs in training."""
    train, val, _ = held_out_splits(val_every, 0)
    return train, val


def held_out_splits(val_every: int, test_every: int) -> tuple[str, str, str]:
    """The training, validation and test text; no held-out paragraph of over 40 characters occurs in training.

    Topics are taken in name order, once per distinct page (`if` and `else` show the same page), and every
    `val_every`-th page, starting with the first, is held out for validation, whole; with `test_every` > 0,
    every `test_every`-th of the other pages is held out for testing (0: no test text, and the training text is
    as without it). Many pages repeat sections of others (`compound` holds the `if` statement's page), so a
    training page drops each paragraph (text between blank lines) that occurs in the held-out text or holds a
    held-out paragraph.
    """
    pages = list(dict.fromkeys(topics()[name] for name in sorted(topics())))
    held_out = pages[::val_every]
    rest = [page for page in pages if page not in held_out]
    tested = rest[::test_every] if test_every else []
    val, test = "".join(held_out), "".join(tested)
    shared = [p for page in held_out + tested for p in page.split("\n\n") if len(p) > MIN_SHARED_CHARS]

    def unseen(paragraph: str) -> bool:
        return paragraph not in val and paragraph not in test and not any(part in paragraph for part in shared)

    kept = ("\n\n".join(filter(unseen, page.split("\n\n"))) for page in rest if page not in tested)
    return "".join(kept), val, test


@cache
def alphabet() -> str:
    """Every character of the text, sorted: character i of it is token i."""
    return "".join(sorted(set("".join(topics().values()))))


def windows(num_chars: int, context_length: int) -> int:
    """How many training windows of `context_length` (+1 target) characters an epoch has, whatever its offset."""
    return max(0, (num_chars - context_length) // context_length)
