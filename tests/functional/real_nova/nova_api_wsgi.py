"""gunicorn's entry to Nova's compute API (``nova.wsgi.osapi_compute``).

Nova parses ``sys.argv`` as its own command line when its WSGI module is
imported; under gunicorn that is gunicorn's command line, which Nova's
options refuse.  Its configuration comes from ``OS_NOVA_CONFIG_DIR`` and
``OS_NOVA_CONFIG_FILES`` instead.
"""

import sys

sys.argv[1:] = []

from nova.wsgi.osapi_compute import application  # noqa: E402,F401
