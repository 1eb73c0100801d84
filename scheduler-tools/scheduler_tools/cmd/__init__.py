"""Console entry points of the tools: ``scheduler-replay``,
``scheduler-bench`` and ``scheduler-soak``.

Importing ``scheduler.cmd`` first makes oslo.service's native-threading
backend the one oslo.messaging selects when it is imported, as for the
service's own entry points.  Each script answers ``--version`` (the
oslo.config ``version`` of ``scheduler.config.parse_args``).
"""

from scheduler import cmd  # noqa: F401
