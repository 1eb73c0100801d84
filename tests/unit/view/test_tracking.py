"""The trackers of scheduler.view.tracking: what a cast costs and what
stays in memory."""

import gc
import uuid
import weakref

from hypothesis import given
from hypothesis import strategies as st
from oslo_context import context as oslo_context

from scheduler import context as scheduler_context
from scheduler.objects import aggregate as aggregate_obj
from scheduler.objects import instance as instance_obj
from scheduler.view import tracking


def _agg(agg_id, hosts, **metadata):
    return aggregate_obj.Aggregate(id=agg_id, uuid=str(uuid.uuid4()),
                                   name='agg-%d' % agg_id, hosts=hosts,
                                   metadata=metadata)


def _tracker(hosts='abcx'):
    tracker = tracking.AggregateTracker()
    tracker.set_hosts(hosts)
    return tracker


def test_an_update_touches_the_old_and_new_members_only():
    tracker = _tracker()
    assert tracker.update(_agg(1, ['a', 'b'])) == {'a', 'b'}
    tracker.update(_agg(2, ['x']))
    assert tracker.update(_agg(1, ['b', 'c'])) == {'a', 'b', 'c'}
    assert tracker.host_aggregates_map == {'b': (1,), 'c': (1,), 'x': (2,)}
    assert tracker.delete(_agg(1, [])) == {'b', 'c'}
    assert tracker.host_aggregates_map == {'x': (2,)}
    assert tracker.aggregates_for('x')[0].id == 2
    assert tracker.aggregates_for('b') == []


def test_other_members_are_kept_apart_and_join_with_their_node():
    tracker = _tracker('ab')
    assert tracker.update(_agg(1, ['a', 'z', 'y'])) == {'a'}
    assert tracker.aggs_by_id[1].hosts == ['a']
    assert set(tracker.host_aggregates_map) == {'a'}
    assert tracker.members(1) == {'a', 'y', 'z'}
    tracker.set_hosts('abz')            # z got a compute node
    assert tracker.aggs_by_id[1].hosts == ['a', 'z']
    assert tracker.host_aggregates_map == {'a': (1,), 'z': (1,)}
    tracker.set_hosts('b')              # a and z lost theirs
    assert tracker.aggs_by_id[1].hosts == []
    assert tracker.host_aggregates_map == {}
    assert tracker.members(1) == {'a', 'y', 'z'}


def test_replaced_host_names_are_not_kept():
    """Aggregates updated again and again with unknown host names keep
    none of them as keys (issue: a flood of casts)."""
    tracker = _tracker('ab')
    for i in range(200):
        tracker.update([_agg(i % 5, ['a'] + ['h-%d-%d' % (i, j)
                                              for j in range(50)])])
    assert tracker.host_aggregates_map == {'a': (0, 1, 2, 3, 4)}
    assert len(tracker.aggs_by_id) == 5


HOSTS = st.sampled_from('abcdef')


@given(st.lists(st.one_of(
    st.tuples(st.just('update'), st.integers(0, 3), st.frozensets(HOSTS)),
    st.tuples(st.just('delete'), st.integers(0, 3), st.just(frozenset())),
    st.tuples(st.just('hosts'), st.just(0), st.frozensets(HOSTS))),
    max_size=30))
def test_the_host_map_is_the_inverse_of_the_memberships(casts):
    tracker = _tracker('abc')
    known = set('abc')
    members = {}
    for kind, agg_id, hosts in casts:
        if kind == 'hosts':
            tracker.set_hosts(hosts)
            known = set(hosts)
        elif kind == 'delete':
            tracker.delete(_agg(agg_id, []))
            members.pop(agg_id, None)
        else:
            tracker.update(_agg(agg_id, sorted(hosts)))
            members[agg_id] = hosts
    expected = {}
    for agg_id, hosts in sorted(members.items()):
        assert tracker.members(agg_id) == hosts
        assert tracker.aggs_by_id[agg_id].hosts == sorted(hosts & known)
        for host in hosts & known:
            expected[host] = expected.get(host, ()) + (agg_id,)
    assert tracker.host_aggregates_map == expected
    assert set(tracker.aggs_by_id) == set(members)


class _Source:
    """The two reads InstanceTracker.load makes, over no instance."""

    def __init__(self, hosts):
        self.hosts = hosts

    def compute_node_get_hosts(self, context):
        return set(self.hosts)

    def instance_get_all_by_hosts(self, context, hosts):
        return {}


def _cast(host, uuids, ctx):
    """An InstanceList as the RPC server hands it to a handler: built
    from its primitive with the message's context."""
    sent = instance_obj.InstanceList(objects=[
        instance_obj.Instance(uuid=u, host=host, node=host, memory_mb=512)
        for u in uuids])
    return instance_obj.InstanceList.obj_from_primitive(
        sent.obj_to_primitive(), context=ctx)


def test_instances_from_casts_keep_no_request_context():
    """A tracked instance outlives its cast; the cast's RequestContext
    (about 2 KB) must not: under churn none of them stays alive."""
    tracker = tracking.InstanceTracker(_Source(['h1', 'h2']), track=True)
    tracker.load(None)
    contexts = []
    live = []
    for n in range(300):
        host = 'h%d' % (n % 2 + 1)
        new = str(uuid.UUID(int=n))
        # (overwrite=False: not made the thread's current context)
        ctx = scheduler_context.RequestContext(
            user_id='u', project_id='p', roles=['member', 'reader'],
            overwrite=False)
        contexts.append(weakref.ref(ctx))
        tracker.update(ctx, host, _cast(host, [new], ctx))
        live.append((host, new))
        if len(live) > 20:          # deletes keep 20 live instances
            gone_host, gone = live.pop(0)
            tracker.delete(ctx, gone_host, gone)
        del ctx
    gc.collect()
    kept = sum(len(tracker.instances_of(h)) for h in ('h1', 'h2'))
    assert kept == 20
    assert all(i.uuid for h in ('h1', 'h2')
               for i in tracker.instances_of(h).values())
    # oslo.context keeps the thread's first context as its current one
    current = oslo_context.get_current()
    alive = [ref for ref in contexts
             if ref() is not None and ref() is not current]
    assert not alive, '%d of %d casts\' contexts still alive' % (
        len(alive), len(contexts))
