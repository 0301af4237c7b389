"""Run by test_forks.py in a forked process (or as a forked torchrun worker): records what it sees, then exits or
waits, as its arguments say."""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import time
from pathlib import Path

import numpy as np
import torch


def main() -> None:
    report = Path(os.environ["PROBE_REPORT"] + os.environ.get("RANK", ""))  # one report per torchrun worker
    print("to stdout")
    print("to stderr", file=sys.stderr)
    seen = {
        "pid": os.getpid(),
        "argv": sys.argv,
        "cwd": os.getcwd(),
        "hash": hash("samebits"),
        "draws": [random.random(), float(np.random.random()), torch.initial_seed()],
        "environment": dict(os.environ),
        "preloaded": "library.helpers.preloaded" in sys.modules,
    }
    report.write_text(json.dumps(seen))
    if sys.argv[1] == "exit":
        sys.exit(int(sys.argv[2]))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(75))
    Path(f"{report}.waiting").touch()
    while True:
        time.sleep(0.01)


if __name__ == "__main__":
    main()
