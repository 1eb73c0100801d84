"""Trace replay: drive the real scheduler service with a real VM trace.

``scheduler-replay`` (``scheduler.cmd.replay``) seeds a database with a
fleet of compute nodes, then replays a VM trace through the service's own
RPC path: every arrival is a ``select_destinations`` call through
``SchedulerAPI``, and simulated compute agents record what the scheduler
chose, update the compute node rows and cast ``update_instance_info`` /
``delete_instance_info`` as Nova's compute services would.  It measures
decisions (latency, NoValidHost) and the fleet (hosts in use,
utilisation, stranded capacity), so that scheduler settings given in the
usual configuration file can be compared on the same workload.

Layout:

``fleet``
    Fleet CSVs, the homogeneous fleet generator, seeding compute nodes,
    services and aggregates, and the services' heartbeats.
``trace``
    Trace CSVs (plain or ``.gz``), grouping a tenant's simultaneous VMs
    into multi-instance requests, and the time-ordered event queue.
``agent``
    The simulated compute agents: Nova's resource-tracker arithmetic,
    the instance and compute node writes and the instance casts.
``metrics``
    Decision and fleet figures, their time series, and the output: a
    rich table, JSON and a matplotlib plot.
``runner``
    The replay's options, the embedded and external deployments, the
    heartbeat thread and the event loop; the module docstring says why
    placements are deterministic.
``data/``
    ``azure-v1-slice.csv.gz``, the first 3,000 VMs of the Azure 2017
    trace (CC BY 4.0; ``data/SOURCE.rst`` gives its source, attribution
    and how it was cut).
"""
