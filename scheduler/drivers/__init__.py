"""Scheduler drivers, loaded by name from the ``scheduler.driver``
entry-point namespace (``[scheduler] driver``)."""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any
from typing import cast

import stevedore

from scheduler import exception
from scheduler import loadables
from scheduler.conf import CONF

if TYPE_CHECKING:
    from scheduler.drivers.base import Scheduler

NAMESPACE = 'scheduler.driver'


def names() -> list[str]:
    """The sorted names of the installed drivers that load."""
    return sorted(loadables.entry_point_classes(NAMESPACE))


def load_driver(context: Any, notifier: Any = None,
                name: str | None = None) -> Scheduler:
    """Instantiate the configured driver.

    Raises SchedulerDriverNotFound when no driver has that name.
    """
    name = name or CONF.scheduler.driver
    manager: stevedore.DriverManager[Scheduler]
    try:
        manager = stevedore.DriverManager(
            NAMESPACE, name, invoke_on_load=True,
            invoke_args=(context,), invoke_kwds={'notifier': notifier})
    except stevedore.exception.NoMatches as exc:
        raise exception.SchedulerDriverNotFound(driver_name=name) from exc
    # Loaded with ``invoke_on_load``: the driver instance, not its class.
    return cast('Scheduler', manager.driver)
