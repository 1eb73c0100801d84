"""Console entry points of the service: ``scheduler-service``,
``scheduler-manage`` and ``scheduler-status`` (the tools' are in
``scheduler_tools.cmd``).

Importing this package (which every entry point does first) makes
oslo.service's native-threading backend the one selected when oslo.service
or oslo.messaging first asks for a backend (oslo.messaging does at import),
instead of eventlet's.  Registering the choice imports nothing else, so
that what needs no RPC (``scheduler-manage --help``, ``scheduler-status
--help``) starts without oslo.messaging and eventlet.
"""

from oslo_service import backend


def _threading() -> backend.BackendType:
    return backend.BackendType.THREADING


backend.register_backend_default_hook(_threading)
