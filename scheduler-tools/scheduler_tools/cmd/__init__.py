"""Console entry points of the tools: ``scheduler-replay`` and
``scheduler-bench``.

Importing ``scheduler.cmd`` first selects oslo.service's
native-threading backend before oslo.messaging is imported, as for the
service's own entry points.
"""

from scheduler import cmd  # noqa: F401
