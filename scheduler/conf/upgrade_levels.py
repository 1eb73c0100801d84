"""``[upgrade_levels]``: RPC version caps for rolling upgrades."""

from oslo_config import cfg

from scheduler.conf import groups

upgrade_group = cfg.OptGroup(
    name='upgrade_levels', title='Upgrade levels',
    help='RPC API version caps, so that new callers talk to old services '
         'during a rolling upgrade.')

upgrade_levels_opts = [
    cfg.StrOpt('scheduler',
               help='Highest scheduler RPC API version the client may '
                    'send: a version such as ``4.3`` or a Nova release '
                    'name (``newton``, ``ocata``, ``pike``, ``queens``).  '
                    'Unset sends the newest version, 4.5.'),
]


def register_opts(conf):
    groups.register_group(conf, upgrade_group)
    conf.register_opts(upgrade_levels_opts, group=upgrade_group)


def list_opts():
    return {upgrade_group: upgrade_levels_opts}
