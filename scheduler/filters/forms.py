"""Which fast forms of a filter the handler may use, and row-set helpers.

A filter's vectorised or cached forms (``host_mask``, ``memo_key`` with
``memo_scope``, ``passes_all``) and its ``HOST_LOCAL`` declaration count
only when declared by the class that defines how it filters, or a
subclass of it (``loadables.fast_form_applies``): a plug-in overriding
``host_passes`` of a built-in filter gets its own ``host_passes``
called.  ``forms`` answers that once per filter class, as the handler
asks for every filter and every instance of a request
(docs/fast-forms.rst).
"""

import typing

import numpy as np
import numpy.typing as npt

from scheduler import loadables

# The per-host methods a fast form must stand for.
REFERENCE = ('host_passes', 'filter_all', '_filter_one')
# ... and ``HOST_LOCAL``, which speaks for the fast forms too.
LOCAL_REFERENCE = REFERENCE + ('host_mask', 'memo_key', 'memo_scope')


class Forms(typing.NamedTuple):
    """Which of a filter class's fast forms stand for its per-host
    methods."""

    host_mask: bool
    memo_key: bool
    memo_scope: bool
    passes_all: bool
    host_local: bool


# Filter class -> its Forms.
_FORMS: dict[type, Forms] = {}


def forms(host_filter: typing.Any) -> Forms:
    """The ``Forms`` of ``host_filter``'s class (found once per class)."""
    found = _FORMS.get(type(host_filter))
    if found is None:
        def applies(name: str) -> bool:
            return bool(loadables.fast_form_applies(host_filter, name,
                                                    REFERENCE))

        found = _FORMS[type(host_filter)] = Forms(
            applies('host_mask'), applies('memo_key'), applies('memo_scope'),
            applies('passes_all'), bool(loadables.fast_form_applies(
                host_filter, 'HOST_LOCAL', LOCAL_REFERENCE)))
    return found


def member(rows: npt.NDArray[np.intp], among: npt.NDArray[np.intp],
           size: int) -> npt.NDArray[np.bool_]:
    """bool array: which of ``rows`` are in ``among`` (rows of a table of
    ``size`` rows)."""
    present = np.zeros(size, dtype=bool)
    present[among] = True
    return present[rows]


def without(rows: npt.NDArray[np.intp],
            failed: list[npt.NDArray[np.intp]]) -> npt.NDArray[np.intp]:
    """``rows`` without those of the ``failed`` arrays, order kept."""
    if not failed:
        return rows
    return rows[~np.isin(rows, np.concatenate(failed))]
