"""The request context that travels with every RPC message.

It is oslo.context's ``RequestContext`` made into an oslo.db enginefacade
transaction provider, so that ``scheduler.db.api`` functions can open reader
and writer sessions on it (``context_manager.reader.using(context)``), as
Nova's and Placement's contexts do.
"""

from oslo_context import context
from oslo_db.sqlalchemy import enginefacade


@enginefacade.transaction_context_provider
class RequestContext(context.RequestContext):
    """A security context plus an oslo.db transaction slot."""

    def elevated(self):
        """Return an admin copy of this context (Nova's ``elevated()``)."""
        ctx = self.from_dict(self.to_dict())
        ctx.is_admin = True
        if 'admin' not in ctx.roles:
            ctx.roles = list(ctx.roles) + ['admin']
        return ctx


def get_admin_context():
    """Return a new admin context, as services use for their own work."""
    return RequestContext(is_admin=True, roles=['admin'], overwrite=False)
