"""Keep isolated images on isolated hosts (and, optionally, only them).

Follows Nova's ``isolated_hosts_filter``.
"""

from scheduler.conf import CONF
from scheduler.filters import BaseHostFilter


class IsolatedHostsFilter(BaseHostFilter):
    """The isolation matrix between ``[filter_scheduler] isolated_images``
    (image UUIDs) and ``isolated_hosts`` (service host names).

    With ``restrict_isolated_hosts_to_isolated_images`` True (default):

    ================  ==============  =================
    image \\ host      isolated        not isolated
    ================  ==============  =================
    isolated          pass            fail
    not isolated      fail            pass
    ================  ==============  =================

    With it False, a non-isolated image may also go to an isolated host.
    When ``isolated_images`` is empty, only the restriction applies: an
    isolated host is rejected when the option is True.  A request without
    an image (boot from volume) counts as a non-isolated image.  Runs on
    rebuild (the new image must be allowed on the current host) and once
    per request, as in Nova.
    """

    HOST_LOCAL = True

    run_filter_once_per_request = True
    RUN_ON_REBUILD = True

    def host_passes(self, host_state, spec_obj):
        conf = CONF.filter_scheduler
        restrict = conf.restrict_isolated_hosts_to_isolated_images
        host_isolated = host_state.host in conf.isolated_hosts
        if not conf.isolated_images:
            return not (restrict and host_isolated)
        image_isolated = _image_id(spec_obj) in conf.isolated_images
        if restrict:
            return image_isolated == host_isolated
        return host_isolated or not image_isolated


def _image_id(spec_obj):
    image = spec_obj.get('image')
    return image.obj_get('id') if image is not None else None
