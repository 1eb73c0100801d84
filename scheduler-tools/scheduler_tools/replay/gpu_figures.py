"""A run's GPU figures: what its instances asked, got and used, and
what Nova cannot express of GPU sharing.

``add_figures`` puts them under ``'gpus'`` of a run's summary (the
service's, ``runner``, or a reference policy's, ``policies``) when the
fleet or the trace has GPUs:

``total``, ``requested``, ``placed``, ``refused``
    the fleet's GPUs, and the whole GPUs the instances asked for, got
    and did not get (NoValidHost or another error);
``in_use``
    GPUs held over trace time (the ledger's ``gpus_used`` samples): the
    peak, the mean over the arrival window (``metrics.time_weights``)
    and at the end;
``sharing`` (with the trace's VMs)
    ``sharing``'s figures.
"""

from scheduler_tools.replay import metrics
from scheduler_tools.replay.trace import WHOLE_GPU_MILLI


def figures(ledger):
    """The GPU figures of a ``metrics.Ledger`` (see the module), None
    when neither the fleet nor an instance has GPUs."""
    flavors = ledger.flavors.summary()
    asked = sum(flavor.get('gpus', 0) * flavor['instances_requested']
                for flavor in flavors)
    total = ledger.capacity.gpus
    if not asked and not total:
        return None
    placed = sum(flavor.get('gpus', 0) * flavor['instances_placed']
                 for flavor in flavors)
    series = ledger.series.arrays()
    in_use = series['gpus_used']
    found = {'total': total, 'requested': asked, 'placed': placed,
             'refused': asked - placed,
             'in_use': {'peak': 0, 'mean': 0.0, 'end': 0}}
    if len(in_use):
        weights = metrics.time_weights(series['time_s'], ledger.window)
        found['in_use'] = {'peak': int(in_use.max()),
                           'mean': metrics.weighted_mean(in_use, weights),
                           'end': int(in_use[-1])}
    return found


def add_figures(summary, ledger, vms=None):
    """Add ``'gpus'`` (``figures``, and ``sharing`` of the trace's
    ``vms`` when given) to a run's ``summary``, when there are GPUs."""
    found = figures(ledger)
    if found is None:
        return summary
    if vms is not None:
        found['sharing'] = sharing(vms)
    summary['gpus'] = found
    return summary


def sharing(vms):
    """What Nova cannot express of the GPU-sharing VMs of ``vms``.

    Returns ``{'gpu_vms', 'gpus_asked', 'shared_vms',
    'shared_gpu_milli_wanted', 'gpu_milli_overstated',
    'overstated_fraction'}``: VMs with GPUs and the whole GPUs they ask;
    the VMs whose source wanted part of one GPU and the thousandths they
    wanted; the thousandths asked beyond that (each asks 1000); and
    those as a fraction of every GPU thousandth asked.
    """
    gpu_vms = gpus = shared = wanted = 0
    for vm in vms:
        if vm.gpus:
            gpu_vms += 1
            gpus += vm.gpus
        if vm.shares_gpu:
            shared += 1
            wanted += vm.gpu_milli
    overstated = shared * WHOLE_GPU_MILLI - wanted
    asked = gpus * WHOLE_GPU_MILLI
    return {'gpu_vms': gpu_vms, 'gpus_asked': gpus, 'shared_vms': shared,
            'shared_gpu_milli_wanted': wanted,
            'gpu_milli_overstated': overstated,
            'overstated_fraction': overstated / asked if asked else 0.0}
