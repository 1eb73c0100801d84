"""Console entry points of the service: ``scheduler-service`` and
``scheduler-manage`` (the tools' are in ``scheduler_tools.cmd``).

Importing this package (which every entry point does first) selects
oslo.service's native-threading backend before oslo.messaging is imported.
"""

from oslo_service import backend

backend.init_backend(backend.BackendType.THREADING)
