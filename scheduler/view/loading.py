"""Which host manager a process builds: ``[scheduler] host_manager``."""

from typing import Any

from scheduler.conf import CONF
from scheduler.view.host_manager import HostManager
from scheduler.view.ironic_host_manager import IronicHostManager


def load_host_manager(context: Any) -> HostManager:
    """The host manager ``[scheduler] host_manager`` names, as Nova's
    ``HostManager``/``IronicHostManager`` choice: ``host_manager``
    (``scheduler.view.host_manager``, the default) or
    ``ironic_host_manager`` (``scheduler.view.ironic_host_manager``, one
    bare-metal node per host, consumed whole)."""
    if CONF.scheduler.host_manager == 'ironic_host_manager':
        return IronicHostManager(context)
    return HostManager(context)
