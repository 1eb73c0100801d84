"""The chance scheduler: a random enabled, live compute node.

Nova's ChanceScheduler: no filters, weighers, resources,
forced hosts or retry list; ``ignore_hosts`` is honoured (exact,
case-sensitive host names).  Following its Queens form, distinct nodes are
drawn when there are at least as many nodes as instances, else each
instance draws independently (so a node may repeat).  Nothing is consumed
and no notification is sent.  Raises NoValidHost("Is the appropriate
service running?") when no compute service is up, and NoValidHost("Could
not find another compute") when every live host is ignored.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING
from typing import Any

from scheduler import exception
from scheduler.conf import CONF
from scheduler.drivers import base
from scheduler.objects import selection as selection_obj

if TYPE_CHECKING:
    from scheduler.objects.request_spec import RequestSpec
    from scheduler.view.host_state import HostState


class ChanceScheduler(base.Scheduler):
    """Random placement among live compute nodes."""

    def select_destinations(self, context: Any, spec_obj: RequestSpec,
                            instance_uuids: Sequence[str] | None = None,
                            return_alternates: bool = False
                            ) -> list[list[selection_obj.Selection]]:
        """Return one list of Selection per instance (chosen node first,
        then alternates up to ``max_attempts`` nodes when asked)."""
        states = self.hosts_up(
            context, self.host_manager.get_all_host_states(context))
        if not states:
            raise exception.NoValidHost(
                reason='Is the appropriate service running?')
        ignore = set(spec_obj.get('ignore_hosts', []))
        states = [s for s in states if s.host not in ignore]
        if not states:
            raise exception.NoValidHost(
                reason='Could not find another compute')
        num = self.num_instances(spec_obj, instance_uuids)
        chosen = self._draw(states, num)
        return [self._with_alternates(state, states, return_alternates)
                for state in chosen]

    def _draw(self, states: list[HostState], num: int) -> list[HostState]:
        if len(states) >= num:
            return self.random.sample(states, num)
        return [self.random.choice(states) for _ in range(num)]

    def _with_alternates(self, state: HostState, states: list[HostState],
                         return_alternates: bool
                         ) -> list[selection_obj.Selection]:
        picks = [state]
        if return_alternates:
            others = [s for s in states if s is not state]
            count = min(CONF.scheduler.max_attempts - 1, len(others))
            picks += self.random.sample(others, count)
        return [selection_obj.Selection.from_host_state(s, limits={})
                for s in picks]
