"""Option groups registered so that each ``ConfigOpts`` owns its options.

oslo.config's ``ConfigOpts.register_group`` keeps a shallow copy of the
``OptGroup`` it is given, and that copy shares the group's dict of
options, overrides and defaults with every other ``ConfigOpts`` that
registered the same object.  A ``set_override`` on one configuration
would then show in all of them, and the options keystoneauth adds for the
auth plugin it loads (``[placement] endpoint``, ...) would meet another
plugin's in a second configuration.  ``register_group`` here registers a
new group of the same name, title and help instead.
"""

from oslo_config import cfg


def register_group(conf: cfg.ConfigOpts, group: cfg.OptGroup) -> None:
    """Register a group equal to ``group`` whose options are ``conf``'s own.

    A no-op, as in oslo.config, when ``conf`` has a group of that name.
    """
    conf.register_group(cfg.OptGroup(
        group.name, title=group.title, help=group.help,
        dynamic_group_owner=group.dynamic_group_owner,
        driver_option=group.driver_option))
