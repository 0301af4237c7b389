"""How every benchmark measures: contenders interleaved round by round, reported as medians with min and max.

These machines are noisy (other jobs, frequency scaling, page cache), so a contender is never timed in one block:
each round runs every contender once, in turn (A B C A B C ...), and the figures are medians over the rounds.
A ratio is taken between medians measured in the same run, never against a figure from another day.
"""

from __future__ import annotations

import os
import pty
import signal
import statistics
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Stats:
    median: float
    low: float
    high: float
    count: int

    @classmethod
    def of(cls, values: Sequence[float]) -> Stats:
        return cls(statistics.median(values), min(values), max(values), len(values))

    def as_dict(self) -> dict[str, float]:
        return {"median": self.median, "min": self.low, "max": self.high, "rounds": self.count}


def interleaved(contenders: Mapping[str, Callable[[], float]], rounds: int, log: Callable[[str], None]) -> dict:
    """Each contender's measurements, taken round by round in turn; a contender returns one figure per call.

    Every other round runs the contenders in reverse order. Whoever runs right after another pays or gains from
    what that one left (page cache, freed memory: a checkpoint loaded first took longer, whichever it was), so a
    fixed order favoured some contender in every round. The first round runs in the order given, so a contender
    may use what an earlier one wrote in it (a load after its save)."""
    found: dict[str, list[float]] = {name: [] for name in contenders}
    for number in range(1, rounds + 1):
        order = list(contenders.items())
        for name, measure in order if number % 2 else reversed(order):
            found[name].append(measure())
        log(f"  round {number}/{rounds}: " + ", ".join(f"{name} {values[-1]:.4g}" for name, values in found.items()))
    return found


def timed(work: Callable[[], object]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def run_on_a_terminal(command: Sequence[str], env: Mapping[str, str]) -> tuple[float, str]:
    """Run a command to its end with stderr on a pseudo-terminal, as in an interactive shell, so that progress bars
    that switch themselves off without a terminal (tqdm's default) are drawn and paid for. Returns the wall time
    and what the command printed on stdout."""
    leader, follower = pty.openpty()
    terminal: list[bytes] = []
    drained = threading.Thread(target=_drain, args=(leader, terminal), daemon=True)
    drained.start()
    start = time.perf_counter()
    try:
        done = subprocess.run(command, env=dict(env), stdout=subprocess.PIPE, stderr=follower, text=True)
    finally:
        os.close(follower)
    elapsed = time.perf_counter() - start
    drained.join(timeout=5)
    if done.returncode != 0:
        shown = b"".join(terminal).decode(errors="replace")
        raise RuntimeError(f"{' '.join(command)} exited with {done.returncode}:\n{(done.stdout + shown)[-2000:]}")
    return elapsed, done.stdout


def time_to_marker(command: Sequence[str], env: Mapping[str, str], marker: Path, timeout_s: float = 600) -> float:
    """Seconds from starting a process to the moment it creates `marker` (the end of its first step); the process
    is then killed, as nothing after that moment is measured."""
    marker.unlink(missing_ok=True)
    start = time.time()
    process = subprocess.Popen(command, env=dict(env), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        while not marker.exists():
            if process.poll() is not None:
                error = process.stderr.read().decode(errors="replace") if process.stderr else ""
                raise RuntimeError(f"{' '.join(command)} ended before its first step:\n{error[-2000:]}")
            if time.time() - start > timeout_s:
                raise TimeoutError(f"{' '.join(command)}: no first step in {timeout_s:.0f} s")
            time.sleep(0.002)
        return marker.stat().st_mtime - start
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
        process.wait()


def _drain(descriptor: int, kept: list[bytes]) -> None:
    """Read the terminal's output as it comes (a full terminal would block the process), keeping the last of it."""
    try:
        while chunk := os.read(descriptor, 65536):
            kept.append(chunk)
            del kept[:-4]
    except OSError:  # the follower side closed: the process is gone
        pass
    finally:
        os.close(descriptor)
