"""Console entry points: ``scheduler-service``, ``scheduler-manage`` and
``scheduler-replay``.

Importing this package (which every entry point does first) selects
oslo.service's native-threading backend before oslo.messaging is imported.
"""

from oslo_service import backend

backend.init_backend(backend.BackendType.THREADING)
