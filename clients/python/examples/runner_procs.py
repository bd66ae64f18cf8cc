"""The local processes of one job run (batch_runner.py): started with the admission in their
environment, each in a process group of its own (so a stop reaches whatever it spawned, and the
terminal's Ctrl-C reaches the runner only), stopped with SIGTERM and, after a grace period,
SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from typing import Dict, Iterable, List, Mapping, Tuple


class ProcessGroup:
    """index -> the running process; the exit statuses of those that ended by themselves."""

    def __init__(self) -> None:
        self.live: Dict[int, subprocess.Popen] = {}
        self.exits: Dict[int, int] = {}

    def start(self, index: int, command: List[str], env: Mapping[str, str]) -> int:
        """Starts process ``index``; its pid."""
        p = subprocess.Popen(command, env={**os.environ, **env}, start_new_session=True)
        self.live[index] = p
        return p.pid

    def started(self, index: int) -> bool:
        return index in self.live or index in self.exits

    def poll(self) -> List[Tuple[int, int]]:
        """The processes that exited since the last poll: (index, status)."""
        done = [(i, p.returncode) for i, p in self.live.items() if p.poll() is not None]
        for i, status in done:
            del self.live[i]
            self.exits[i] = status
        return done

    def all_exited(self) -> bool:
        return not self.live and bool(self.exits)

    def stop(self, indices: Iterable[int], grace: float) -> List[int]:
        """Stops these processes (SIGTERM; SIGKILL after ``grace`` seconds) and forgets them:
        what a process stopped on purpose exits with says nothing about the job. The indices of
        those that needed SIGKILL."""
        indices = list(indices)
        procs = {i: self.live.pop(i) for i in indices if i in self.live}
        for i in indices:
            self.exits.pop(i, None)
        for p in procs.values():
            _signal_group(p, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and any(p.poll() is None for p in procs.values()):
            time.sleep(0.02)
        killed = [i for i, p in procs.items() if p.poll() is None]
        for i in killed:
            _signal_group(procs[i], signal.SIGKILL)
            procs[i].wait()
        return killed

    def stop_all(self, grace: float) -> List[int]:
        """Stops every process, and forgets the exits too: the next run starts afresh."""
        killed = self.stop(list(self.live), grace)
        self.exits.clear()
        return killed


def _signal_group(p: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(p.pid, sig)  # the process leads its own group (start_new_session)
    except ProcessLookupError:
        pass


def describe(exits: Mapping[int, int]) -> str:
    """``all 3 processes exited 0`` or ``process 1 exited with status 3; process 2 was killed by
    SIGKILL``: the message the Workload finishes with."""
    bad = []
    for i, status in sorted(exits.items()):
        if status < 0:
            bad.append("process %d was killed by %s" % (i, signal.Signals(-status).name))
        elif status > 0:
            bad.append("process %d exited with status %d" % (i, status))
    if not bad:
        return "all %d processes exited 0" % len(exits)
    return "; ".join(bad)
