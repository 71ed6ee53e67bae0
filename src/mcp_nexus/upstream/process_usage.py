"""Resident memory and CPU time of a process by pid (stdio children, the gateway itself), via psutil.

`psutil.Process` objects are kept per pid so CPU times are read from the same handle; a pid
whose process is gone (or was reused by another one) is dropped and reported as None.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import psutil


@dataclass(frozen=True, slots=True)
class ProcessUsage:
    rss_bytes: int
    cpu_seconds: float
    threads: int


class ProcessUsageReader:
    def __init__(self) -> None:
        self._processes: dict[int, psutil.Process] = {}

    def read(self, pid: int | None) -> ProcessUsage | None:
        if pid is None:
            return None
        process = self._processes.get(pid)
        try:
            if process is None or not process.is_running():  # is_running also catches a reused pid
                process = self._processes[pid] = psutil.Process(pid)
            with process.oneshot():
                memory = process.memory_info()
                times = process.cpu_times()
                return ProcessUsage(memory.rss, times.user + times.system, process.num_threads())
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            self._processes.pop(pid, None)
            return None

    def forget_others(self, live: set[int]) -> None:
        """Drop handles of pids no longer in use (called after each full read)."""
        for pid in [p for p in self._processes if p not in live and p != os.getpid()]:
            del self._processes[pid]

    def own(self) -> ProcessUsage | None:
        return self.read(os.getpid())
