"""Scheduler drivers, loaded by name from the ``scheduler.driver``
entry-point namespace (``[scheduler] driver``)."""

import stevedore

from scheduler import exception
from scheduler import loadables
from scheduler.conf import CONF

NAMESPACE = 'scheduler.driver'


def names():
    """The sorted names of the installed drivers that load."""
    return sorted(loadables.entry_point_classes(NAMESPACE))


def load_driver(context, notifier=None, name=None):
    """Instantiate the configured driver.

    Raises SchedulerDriverNotFound when no driver has that name.
    """
    name = name or CONF.scheduler.driver
    try:
        manager = stevedore.DriverManager(
            NAMESPACE, name, invoke_on_load=True,
            invoke_args=(context,), invoke_kwds={'notifier': notifier})
    except stevedore.exception.NoMatches as exc:
        raise exception.SchedulerDriverNotFound(driver_name=name) from exc
    return manager.driver
