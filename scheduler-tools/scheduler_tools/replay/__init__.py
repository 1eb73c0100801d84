"""Trace replay: drive the real scheduler service with a real VM trace.

``scheduler-replay`` (``scheduler_tools.cmd.replay``) seeds a database
with a fleet of compute nodes, then replays a VM trace through the
service's own RPC path: every arrival is a ``select_destinations`` call
through ``SchedulerAPI``, and simulated compute agents record what the
scheduler chose, update the compute node rows and cast
``update_instance_info`` / ``delete_instance_info`` as Nova's compute
services would.  It measures decisions (latency, NoValidHost, per
flavor) and the fleet (hosts in use against the capacity lower bound,
utilisation, stranded capacity), so that scheduler settings given in the
usual configuration file can be compared on the same workload, and with
against simple reference policies (``--nocompare`` to leave them out).

Layout:

``fleet``
    Fleet CSVs and the homogeneous fleet generator; the fleet is seeded,
    and its services' heartbeats written, by ``scheduler_tools.seed``.
``trace``
    Trace CSVs (plain or ``.gz``), grouping a tenant's simultaneous VMs
    into multi-instance requests, and the time-ordered event queue.
``formats``, ``azure_flavor_seq``, ``alibaba_gpu``
    The trace formats: detected from the path; the Azure 2017 trace as
    a flavor sequence; the Alibaba GPU trace, its node list a fleet.
``gpus``, ``gpu_figures``
    GPUs as Nova schedules them (PCI passthrough devices: the alias,
    the RequestSpec's ``pci_requests``, PciPassthroughFilter), and a
    run's GPU figures.
``capacity``
    The fleet's capacity and resolved allocation ratios, the capacity
    lower bound, the trace's demand and flavor mix.
``loop``
    The event loop every run shares: arrivals, every departure (also
    after the last arrival), the departures between two arrivals taken
    together.
``agent``
    The simulated compute agents: Nova's resource-tracker arithmetic,
    the instance and compute node writes (one transaction per request
    and per batch of departures) and the instance casts.
``replayer``
    The service's run: RequestSpecs, ``select_destinations`` calls, the
    agents.
``policies``
    Reference policies (first-fit, best-fit) simulated in memory on the
    same trace and fleet.
``metrics``
    Decision, flavor and fleet figures and their time series.
``report``
    The output: rich tables, JSON and a matplotlib plot.
``broker``
    The embedded deployment's in-memory message broker.
``options``
    The replay's command-line options and the settings read from them,
    the generated fleet's size and shape.
``deployment``
    The embedded and external deployments: the database, the transport
    and the embedded service.
``runner``
    The run: the trace read, the fleet seeded, the heartbeat thread, the
    replay and its outputs; the module docstring says why placements are
    deterministic.
``planning``, ``planning_runs``, ``planning_report``
    Capacity planning (``--find-fleet``, ``--fill-until-failure``): the
    searches, one policy's run on one fleet, their tables, JSON and
    plots.
``glossary``
    The terms of the table and their definitions.
``data/``
    ``azure-v1-slice.csv.gz``, the first 3,000 VMs of the Azure 2017
    trace (CC BY 4.0; ``data/SOURCE.rst`` gives its source, attribution
    and how it was cut).
"""
