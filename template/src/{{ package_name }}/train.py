"""`python -m <package>.train [overrides]`: this project's configs/ and research/ in the samebits loop.

The loop and the machinery are read from the pinned library, external/samebits/src/samebits/ (its train.py and
entry.py).
"""

from samebits import entry

if __name__ == "__main__":
    entry.train(__package__ or "")
