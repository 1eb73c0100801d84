"""Host filters: the plug-in contract, the handler and the loader.

A filter is a ``BaseHostFilter`` subclass implementing
``host_passes(host_state, spec_obj) -> bool`` (Nova's contract, unchanged
so that third-party filters keep working).  Filters are registered by
class name in the ``scheduler.filters`` entry-point namespace, one filter
family per module as Nova has them, and enabled by name in
``[filter_scheduler] enabled_filters``.

The handler runs the enabled filters in order over the surviving hosts
(reference 3.6): a filter with ``run_filter_once_per_request`` runs only
for the first instance of a request; when a filter leaves no host, the
per-filter history is logged and the result is empty.
"""

from oslo_log import log as logging

from scheduler import exception
from scheduler import loadables

LOG = logging.getLogger(__name__)

NAMESPACE = 'scheduler.filters'


class BaseHostFilter:
    """Base class for host filters."""

    # Run only for the first instance of a multi-instance request.
    run_filter_once_per_request = False
    # Run on a rebuild with a new image (``_nova_check_type`` hint).
    RUN_ON_REBUILD = False

    def host_passes(self, host_state, spec_obj):
        """Return True when ``host_state`` can take ``spec_obj``."""
        raise NotImplementedError()

    def run_filter_for_index(self, index):
        """Whether to run for instance ``index`` (0-based) of a request."""
        return not (self.run_filter_once_per_request and index > 0)

    def _filter_one(self, host_state, spec_obj):
        if not self.RUN_ON_REBUILD and _is_rebuild(spec_obj):
            return True
        return self.host_passes(host_state, spec_obj)

    def filter_all(self, host_states, spec_obj):
        """Yield the hosts that pass this filter."""
        for host_state in host_states:
            if self._filter_one(host_state, spec_obj):
                yield host_state


def _is_rebuild(spec_obj):
    check_type = spec_obj.get_scheduler_hint('_nova_check_type')
    return check_type == 'rebuild'


class HostFilterHandler:
    """Runs a list of filter instances over hosts (Nova's handler)."""

    def get_filtered_objects(self, filters, hosts, spec_obj, index=0):
        """Return the list of hosts that pass every filter.

        ``filters`` are instances, applied in order; ``index`` is the
        instance ordinal within the request.  Logs the per-filter counts
        when a filter removes every host.
        """
        hosts = list(hosts)
        history = []
        for host_filter in filters:
            if not host_filter.run_filter_for_index(index):
                continue
            name = type(host_filter).__name__
            before = len(hosts)
            # A filter returning None (Nova's contract) stops filtering.
            hosts = list(host_filter.filter_all(hosts, spec_obj) or [])
            history.append((name, before, len(hosts)))
            LOG.debug('Filter %s returned %d host(s)', name, len(hosts))
            if not hosts:
                LOG.info('Filter %s returned 0 hosts', name)
                LOG.info("Filtering removed all hosts for the request with "
                         "instance ID '%s'. Filter results: %s",
                         spec_obj.obj_get('instance_uuid'),
                         ['%s: (start: %d, end: %d)' % h for h in history])
                break
        return hosts


def all_filters():
    """Every filter class registered in the ``scheduler.filters``
    namespace (the default of ``available_filters``)."""
    return list(loadables.entry_point_classes(NAMESPACE).values())


def load_filters(available_filters, enabled_filters):
    """Instantiate the enabled filters, once each, in configured order.

    ``available_filters``: names or dotted paths (classes or functions
    returning classes).  ``enabled_filters``: class names.  Raises
    SchedulerHostFilterNotFound naming every enabled filter that is not
    available.
    """
    classes = loadables.resolve(available_filters, NAMESPACE, BaseHostFilter)
    by_name = {cls.__name__: cls for cls in classes
               if not cls.__name__.startswith('_')}
    missing = [name for name in enabled_filters if name not in by_name]
    if missing:
        raise exception.SchedulerHostFilterNotFound(
            filter_name=', '.join(missing))
    return [by_name[name]() for name in enabled_filters]
