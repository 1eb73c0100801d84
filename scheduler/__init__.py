"""A standalone, Nova-compatible compute scheduler service.

The package answers Nova's scheduler RPC API (topic ``scheduler``, version
4.5) over oslo.messaging and places instances on the compute nodes described
in a shared SQL database.  See ``README.rst`` for the layout.

Importing the package makes oslo.service default to its native-threading
backend (no eventlet), unless a backend was already chosen: oslo.messaging
picks its executor from that backend on import, so this has to happen
before anything imports oslo.messaging.
"""

from oslo_service import backend as _backend

_backend.register_backend_default_hook(
    lambda: _backend.BackendType.THREADING)
