"""Nova 34.0.0's own request filters (``nova.scheduler.request_filter``)
that read nothing but the flavor, the image and the options, as a JSON
filter for ``tests/functional/test_request_filters_nova.py``.

Run with the python of a virtualenv holding Nova (``python -I``), never
with this repository on ``sys.path``.  Reads one JSON list of cases on
stdin and writes one JSON list of answers on stdout, in order.  A case
is a request case of ``cases.py`` (``flavor``, ``image_properties``,
``is_bfv``) with the image's ``disk_format`` and ``options``
(``[scheduler]`` option name: value).  The filters of ``RUN`` are run
in the order of Nova's ``ALL_REQUEST_FILTERS``; the others need Nova's
database or Neutron.  An answer is ``{"root_required": [...],
"root_forbidden": [...]}`` (sorted) or ``{"error": the exception's
class name}``.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cases  # noqa: E402
import nova.conf  # noqa: E402
from nova import exception  # noqa: E402
from nova import objects  # noqa: E402
from nova.scheduler import request_filter  # noqa: E402

CONF = nova.conf.CONF

RUN = ('require_image_type_support', 'compute_status_filter',
       'transform_image_metadata', 'accelerators_filter',
       'packed_virtqueue_filter', 'ephemeral_encryption_filter',
       'virtio_sound_filter', 'tpm_secret_security_filter')


def filters():
    """Nova's filters named in ``RUN``, in Nova's order; fails when Nova
    lacks one of them."""
    found = [function for function in request_filter.ALL_REQUEST_FILTERS
             if function.__name__ in RUN]
    missing = set(RUN) - {function.__name__ for function in found}
    if missing:
        raise SystemExit('Nova has no request filter %s' % sorted(missing))
    return found


def run(case, functions):
    for name, value in case['options'].items():
        CONF.set_override(name, value, group='scheduler')
    spec = cases.request_spec(case, objects)
    spec.image.disk_format = case['disk_format']
    try:
        for function in functions:
            function(None, spec)
    except (exception.NovaException, ValueError) as error:
        return {'error': type(error).__name__}
    return {'root_required': sorted(spec.root_required),
            'root_forbidden': sorted(spec.root_forbidden)}


def main():
    CONF([], project='nova', default_config_files=[],
         default_config_dirs=[])
    objects.register_all()
    functions = filters()
    json.dump([run(case, functions) for case in json.load(sys.stdin)],
              sys.stdout)


if __name__ == '__main__':
    main()
