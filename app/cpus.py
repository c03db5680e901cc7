"""How many CPUs this process may use: its CPU set, and a container's cgroup quota.

Its own module, without numpy or Streamlit, so that `bertscope` can size the math libraries' threads from it
before any of them is imported (they read OMP_NUM_THREADS once, when loaded).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

CGROUP = Path("/sys/fs/cgroup")


def cpu_quota() -> float | None:
    """The CPUs a cgroup quota allows this process (`docker run --cpus`, Compose's `cpus:`), or None without
    one. Why read it: the CPU set (sched_getaffinity) of a container limited by a quota is still every core of
    the host, so the forward limit and torch's threads would be sized for 32 cores on a 2-CPU share."""
    try:  # cgroup v2: "max 100000" (no quota) or "200000 100000"
        quota, period = (CGROUP / "cpu.max").read_text().split()[:2]
        if quota != "max" and int(period) > 0:
            return int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:  # cgroup v1: -1 for no quota
        quota = int((CGROUP / "cpu" / "cpu.cfs_quota_us").read_text())
        period = int((CGROUP / "cpu" / "cpu.cfs_period_us").read_text())
        if quota > 0 and period > 0:
            return quota / period
    except (OSError, ValueError):
        pass
    return None


def cores() -> int:
    """The cores this process may use: its CPU set (a container's cpuset, not the host's count), and no more
    than a cgroup quota allows (rounded up)."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    quota = cpu_quota()
    return max(1, min(n, math.ceil(quota))) if quota else n
