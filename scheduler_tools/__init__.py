"""Tools and test infrastructure around the scheduler service, shipped in
the same distribution as its optional part (``pip install
'openstack-standalone-scheduler[tools]'``, or ``-e '.[tools]'`` from a
checkout), never imported by the service itself (``scheduler``).

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
come with the ``tools`` extra.
"""
