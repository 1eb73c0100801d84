"""``ImageMeta`` (Nova v1.8) and ``ImageMetaProps`` (Nova v1.16, Ocata).

Only the image properties that scheduler filters and weighers read are
modelled; Nova's other properties in a primitive are ignored.  The legacy
property names (``architecture``, ``hypervisor_type``, ``vm_mode``,
``hypervisor_version_requires``) are mapped to the current ones in
``ImageMetaProps.from_dict``, as Nova does.
"""

from oslo_versionedobjects import fields

from scheduler.objects import base

LEGACY_PROPERTY_NAMES = {
    'architecture': 'hw_architecture',
    'hypervisor_type': 'img_hv_type',
    'vm_mode': 'hw_vm_mode',
    'hypervisor_version_requires': 'img_hv_requested_version',
}

_STRING_PROPERTIES = (
    'hw_architecture', 'img_hv_type', 'hw_vm_mode',
    'img_hv_requested_version', 'hw_cpu_policy', 'hw_cpu_thread_policy',
    'hw_mem_page_size', 'hw_numa_nodes', 'hw_machine_type', 'hw_disk_bus',
    'hw_video_model', 'hw_firmware_type', 'os_distro', 'os_type',
    'img_signature', 'trait_list',
)


@base.register
class ImageMetaProps(base.SchedulerObject):
    VERSION = '1.16'

    fields = dict(
        {name: fields.StringField(nullable=True)
         for name in _STRING_PROPERTIES},
        hw_maxphysaddr_bits=fields.IntegerField(nullable=True),
        img_config_drive=fields.StringField(nullable=True),
    )

    def get(self, name, default=None):
        """The property's value, or ``default`` when it is not set."""
        if name not in self.fields:
            return default
        return self.obj_get(name, default)

    def set_properties(self):
        """A dict of the properties that are set, name -> value."""
        unset = object()
        found = ((name, self.obj_get(name, unset)) for name in self.fields)
        return {name: value for name, value in found if value is not unset}

    @classmethod
    def from_dict(cls, image_props):
        """Build from a plain property dict, mapping legacy names.

        Unknown properties are ignored, as in Nova.
        """
        props = cls()
        image_props = image_props or {}
        # Legacy names first, so that a current name always wins (Nova).
        ordered = sorted(image_props.items(),
                         key=lambda item: item[0] not in LEGACY_PROPERTY_NAMES)
        for key, value in ordered:
            name = LEGACY_PROPERTY_NAMES.get(key, key)
            if name in cls.fields and value is not None:
                setattr(props, name, value)
        return props


@base.register
class ImageMeta(base.TimestampedObject, base.SchedulerObject):
    VERSION = '1.8'

    fields = dict(base.TimestampedObject.fields, **{
        'id': fields.UUIDField(),
        'name': fields.StringField(),
        'status': fields.StringField(),
        'visibility': fields.StringField(),
        'protected': fields.FlexibleBooleanField(),
        'checksum': fields.StringField(),
        'owner': fields.StringField(),
        'size': fields.IntegerField(),
        'virtual_size': fields.IntegerField(),
        'container_format': fields.StringField(),
        'disk_format': fields.StringField(),
        'tags': base.ListOfStringsField(),
        'direct_url': fields.StringField(),
        'min_ram': fields.IntegerField(),
        'min_disk': fields.IntegerField(),
        'properties': fields.ObjectField('ImageMetaProps'),
    })

    @classmethod
    def from_dict(cls, image_meta):
        """Build from a Glance-style dict; ``properties`` is a plain dict.

        Keys that are not fields are ignored; ``None`` values are skipped.
        """
        image_meta = dict(image_meta or {})
        props = image_meta.pop('properties', {}) or {}
        image = cls()
        for key, value in image_meta.items():
            if key in cls.fields and value is not None:
                setattr(image, key, value)
        image.properties = ImageMetaProps.from_dict(props)
        return image
