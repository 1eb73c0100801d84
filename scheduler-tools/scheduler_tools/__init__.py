"""Tools and test infrastructure around the scheduler service, in a
distribution of their own (``openstack-standalone-scheduler-tools``;
from a checkout ``python3 -m pip install -e . -e ./scheduler-tools``),
never imported by the service itself (``scheduler``).

``replay``
    ``scheduler-replay``: drive the service with a VM trace and measure
    its packing (``replay/data/`` holds the shipped trace).
``bench``
    ``scheduler-bench``: how fast the service decides, in-process and
    against given RabbitMQ and PostgreSQL servers.
``cmd``
    Their console scripts.
``seed``
    The one fleet seeder: compute nodes, services and aggregates written
    into a database, for the replay, the benchmark and the tests.
``writers``
    The writes of compute services and the API the service only reads
    (compute nodes, services, aggregates, instances, server groups), and
    ``reset_engine``, which points ``scheduler.db.api`` at a database.
``databases``
    Throwaway databases on an existing PostgreSQL or MySQL server.

Their plotting, table and progress libraries (matplotlib, rich, tqdm)
are this distribution's requirements, not the service's.
"""
