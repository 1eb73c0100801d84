"""The Placement resources and traits that a flavor's ``hw:``/``os:``
extra specs and an image's properties ask for, by Nova 34's rules.

A setting usually exists twice: as the flavor extra spec ``hw:NAME``
(``os:NAME``) and as the image property ``hw_NAME`` (``os_NAME``).  An
empty value counts as unset.

The CPU pinning part is ``scheduler.placement.cpu_pinning``, the other
features ``scheduler.placement.hardware_features``; this module holds
what they share: the request they build and the reading of a setting.

A refused request raises ``HardwareRequestError``, which names the
exception Nova raises in its ``nova_exception``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from scheduler import exception

ExtraSpecs = Mapping[str, str]
ImageProps = Mapping[str, Any]


class HardwareRequestError(exception.InvalidRequestSpec):
    """A refused request (an InvalidRequestSpec); ``nova_exception`` is
    the name of the class Nova raises for it (``FlavorImageConflict``,
    ``Invalid``...)."""

    def __init__(self, nova_exception: str, message: str) -> None:
        super().__init__(message)
        self.nova_exception = nova_exception


@dataclasses.dataclass
class HardwareRequest:
    """What the hw:/os: extra specs and image properties ask Placement for."""

    # PCPU amount for the unsuffixed group, None: no pinning translation
    pcpus: int | None = None
    # VCPU amount Nova sets explicitly (the 'mixed' policy), None: none
    vcpus: int | None = None
    resources: dict[str, int] = dataclasses.field(default_factory=dict)
    required_traits: set[str] = dataclasses.field(default_factory=set)
    forbidden_traits: set[str] = dataclasses.field(default_factory=set)
    cpu_pinning_requested: bool = False


def both(extra_specs: ExtraSpecs, image_props: ImageProps, name: str,
         prefix: str = 'hw') -> tuple[Any, Any]:
    """The flavor's and the image's value of a setting (None: unset)."""
    return (extra_specs.get('%s:%s' % (prefix, name)),
            image_props.get('%s_%s' % (prefix, name)))


def agreed(extra_specs: ExtraSpecs, image_props: ImageProps, name: str,
           prefix: str = 'hw') -> Any:
    """The flavor's value of a setting, else the image's; refused when
    both are set (not empty) and differ."""
    flavor, image = both(extra_specs, image_props, name, prefix)
    if flavor and image and flavor != image:
        raise HardwareRequestError(
            'FlavorImageConflict',
            'The flavor asks %s:%s=%s, the image %s_%s=%s.'
            % (prefix, name, flavor, prefix, name, image))
    return flavor or image


def check_choice(value: Any, allowed: Any, nova_exception: str,
                 what: str) -> None:
    """Refuse ``value`` (``what``) unless it is one of ``allowed``,
    raising ``nova_exception``."""
    if value not in allowed:
        raise HardwareRequestError(
            nova_exception, '%s %r is not one of %s.'
            % (what, value, ', '.join(allowed)))


def add_trait(request: HardwareRequest, trait: str,
              wish: str | None) -> None:
    """Require or forbid ``trait`` as ``wish`` says (None: neither)."""
    if wish == 'required':
        request.required_traits.add(trait)
    elif wish == 'forbidden':
        request.forbidden_traits.add(trait)

