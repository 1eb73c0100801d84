"""Versioned objects exchanged with Nova, in Nova's wire format.

``register_all()`` imports every object module so that the registry can
deserialize any of them; the RPC layer calls it before serving.
"""

import importlib

_MODULES = ('aggregate', 'cell_mapping', 'compute_node', 'flavor',
            'image_meta', 'instance', 'instance_group', 'network', 'numa',
            'pci', 'request_group', 'request_spec', 'security_group',
            'selection')
# The payloads of versioned notifications (sent, never received).
_MODULES += ('notification',)


def register_all():
    for name in _MODULES:
        importlib.import_module('scheduler.objects.' + name)
