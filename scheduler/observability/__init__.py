"""What the service tells its operators about itself.

``metrics`` defines the Prometheus metrics and records them;
``server`` serves them, added up over the workers, from the parent
process (docs/metrics.rst), with ``/healthz`` and ``/readyz`` beside
them (``routes``: the paths; ``health``: the readiness probes of
RabbitMQ, the databases and Placement; docs/operators.rst).
"""
