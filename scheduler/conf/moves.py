"""``[DEFAULT]`` options about moving an existing instance.

``allow_resize_to_same_host`` keeps Nova's name and default.  In Nova the
compute API adds the instance's host to ``ignore_hosts`` unless it is
True; here ``scheduler.engine.moves`` applies the same rule to requests marked
as
a resize (see that module), so that callers which do not fill
``ignore_hosts`` get the same result.
"""

from oslo_config import cfg

moves_opts = [
    cfg.BoolOpt('allow_resize_to_same_host', default=False,
                help='Allow a resize to choose the host the instance is '
                     'already on.  When False the source host is removed '
                     'before the filters run for a request marked as a '
                     'resize (scheduler hint ``_nova_check_type=resize``, '
                     'or an instance already known on a host and sent '
                     'without a hint).  Cold and live migration and '
                     'evacuation always leave the source host.'),
]


def register_opts(conf):
    conf.register_opts(moves_opts)


def list_opts():
    return {'DEFAULT': moves_opts}
