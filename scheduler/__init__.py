"""A standalone, Nova-compatible compute scheduler service.

The package answers Nova's scheduler RPC API (topic ``scheduler``, version
4.5) over oslo.messaging and places instances on the compute nodes described
in a shared SQL database.  See ``README.rst`` for the layout.

Importing the package makes oslo.service default to its native-threading
backend (no eventlet), unless a backend was already chosen: oslo.messaging
picks its executor from that backend on import, so this has to happen
before anything imports oslo.messaging.  The deprecation banner futurist
prints when it probes for eventlet (never used here) is hidden.
"""

import warnings as _warnings

_warnings.filterwarnings('ignore', message=r'\s*Eventlet is deprecated')

from oslo_service import backend as _backend  # noqa: E402

_backend.register_backend_default_hook(
    lambda: _backend.BackendType.THREADING)
