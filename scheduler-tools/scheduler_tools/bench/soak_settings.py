"""The soak's settings: what to run, its warm-up and its output files."""

from __future__ import annotations

import dataclasses

SAMPLES_FILE = 'samples.jsonl'
PLOT_FILE = 'soak.png'
SUMMARY_FILE = 'summary.json'

# The warm-up: at most this long, at most a third of the run.
WARMUP_S = 600.0
WARMUP_SHARE = 1.0 / 3
# The staleness probe's cycles are at least this far apart (s).
PROBE_MIN_INTERVAL_S = 2.0


@dataclasses.dataclass
class SoakSettings:
    """What to run (times in seconds)."""

    hosts: int = 10000
    duration_s: float = 3600.0
    sample_interval_s: float = 60.0
    warmup_s: float | None = None
    callers: int = 8
    services: int = 1
    workers: int = 2
    instances: int = 1
    live_instances: int | None = None
    delete_share: float = 0.1
    transport_url: str | None = None
    database_connection: str | None = None
    admin_connection: str | None = None
    output_dir: str = 'soak-output'
    seed: int = 0
    call_timeout: int = 60
    server_timeout: float = 300.0
    drain_timeout_s: float = 60.0
    rss_growth_limit_pct: float = 5.0
    metrics: bool = True
    progress: bool = True
    # Seconds each heartbeat's stamp lies before its commit (a compute
    # clock behind the scheduler's, or a heartbeat committed late).
    heartbeat_lag_s: float = 0.0

    @property
    def warmup(self):
        return warmup_for(self.duration_s, self.warmup_s)

    @property
    def live_target(self):
        return self.live_instances or self.hosts

    @property
    def probe_interval_s(self):
        return max(PROBE_MIN_INTERVAL_S, self.sample_interval_s / 3.0)

    @property
    def processes(self):
        return self.services * self.workers


def warmup_for(duration_s, warmup_s=None):
    """The warm-up of a run of ``duration_s``: ``warmup_s`` when given,
    else ``WARMUP_S`` (10 minutes) or a third of a shorter run."""
    if warmup_s is not None:
        return max(0.0, min(float(warmup_s), float(duration_s)))
    return min(WARMUP_S, duration_s * WARMUP_SHARE)
