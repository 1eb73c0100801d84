"""``ImageMeta`` (Nova v1.8) and ``ImageMetaProps`` (Nova v1.44, Nova
34.0.0).

Every image property of Nova 34's ImageMetaProps is modelled, so that the
filters (AggregateImagePropertiesIsolation reads any of them) and the
Placement-only checks see what Nova sends; properties Nova does not know
are ignored, as in Nova.  Nova's enum properties are plain strings here
(the value is kept as sent); ``hw_numa_nodes`` stays a string, as filters
read it.  The legacy property names (``architecture``,
``hypervisor_type``, ``vm_mode``, ``hypervisor_version_requires``) are
mapped to the current ones in ``ImageMetaProps.from_dict``, as Nova does.
"""

from oslo_versionedobjects import fields

from scheduler.objects import base

LEGACY_PROPERTY_NAMES = {
    'architecture': 'hw_architecture',
    'hypervisor_type': 'img_hv_type',
    'vm_mode': 'hw_vm_mode',
    'hypervisor_version_requires': 'img_hv_requested_version',
}

# Property name -> (oslo field class, version that added it).
_S = fields.StringField
_B = fields.FlexibleBooleanField
_I = fields.IntegerField
_U = fields.UUIDField
_DICTS = fields.ListOfDictOfNullableStringsField
_PROPERTIES = {
    # 1.0 (Liberty)
    'hw_architecture': (_S, (1, 0)), 'hw_auto_disk_config': (_S, (1, 0)),
    'hw_boot_menu': (_B, (1, 0)), 'hw_cdrom_bus': (_S, (1, 0)),
    'hw_cpu_cores': (_I, (1, 0)), 'hw_cpu_max_cores': (_I, (1, 0)),
    'hw_cpu_max_sockets': (_I, (1, 0)), 'hw_cpu_max_threads': (_I, (1, 0)),
    'hw_cpu_policy': (_S, (1, 0)), 'hw_cpu_sockets': (_I, (1, 0)),
    'hw_cpu_threads': (_I, (1, 0)), 'hw_device_id': (_I, (1, 0)),
    'hw_disk_bus': (_S, (1, 0)), 'hw_disk_type': (_S, (1, 0)),
    'hw_floppy_bus': (_S, (1, 0)), 'hw_ipxe_boot': (_B, (1, 0)),
    'hw_machine_type': (_S, (1, 0)), 'hw_mem_page_size': (_S, (1, 0)),
    'hw_numa_nodes': (_S, (1, 0)),
    'hw_numa_cpus': (fields.ListOfSetsOfIntegersField, (1, 0)),
    'hw_numa_mem': (fields.ListOfIntegersField, (1, 0)),
    'hw_qemu_guest_agent': (_B, (1, 0)), 'hw_rng_model': (_S, (1, 0)),
    'hw_scsi_model': (_S, (1, 0)), 'hw_serial_port_count': (_I, (1, 0)),
    'hw_video_model': (_S, (1, 0)), 'hw_video_ram': (_I, (1, 0)),
    'hw_vif_model': (_S, (1, 0)), 'hw_vm_mode': (_S, (1, 0)),
    'hw_watchdog_action': (_S, (1, 0)), 'img_bdm_v2': (_B, (1, 0)),
    'img_bittorrent': (_B, (1, 0)), 'img_block_device_mapping': (_DICTS,
                                                                 (1, 0)),
    'img_cache_in_nova': (_B, (1, 0)), 'img_compression_level': (_I, (1, 0)),
    'img_linked_clone': (_B, (1, 0)), 'img_mappings': (_DICTS, (1, 0)),
    'img_owner_id': (_S, (1, 0)), 'img_root_device_name': (_S, (1, 0)),
    'img_use_agent': (_B, (1, 0)), 'img_version': (_I, (1, 0)),
    'os_command_line': (_S, (1, 0)), 'os_distro': (_S, (1, 0)),
    'os_skip_agent_inject_files_at_boot': (_B, (1, 0)),
    'os_skip_agent_inject_ssh': (_B, (1, 0)), 'os_type': (_S, (1, 0)),
    # Liberty to Newton
    'os_require_quiesce': (_B, (1, 1)), 'img_hv_type': (_S, (1, 2)),
    'img_hv_requested_version': (_S, (1, 2)),
    'hw_vif_multiqueue_enabled': (_B, (1, 4)),
    'os_admin_user': (_S, (1, 5)), 'img_config_drive': (_S, (1, 7)),
    'hw_cpu_thread_policy': (_S, (1, 9)),
    'hw_cpu_realtime_mask': (_S, (1, 10)),
    'hw_firmware_type': (_S, (1, 11)),
    'img_signature': (_S, (1, 12)), 'img_signature_hash_method': (_S,
                                                                  (1, 12)),
    'img_signature_certificate_uuid': (_U, (1, 12)),
    'img_signature_key_type': (_S, (1, 12)),
    'os_secure_boot': (_S, (1, 13)), 'hw_pointer_model': (_S, (1, 14)),
    'hw_rescue_bus': (_S, (1, 15)), 'hw_rescue_device': (_S, (1, 15)),
    # Queens and later
    'img_hide_hypervisor_id': (_B, (1, 19)),
    'traits_required': (base.ListOfStringsField, (1, 20)),
    'hw_time_hpet': (_B, (1, 21)), 'hw_pmu': (_B, (1, 23)),
    'hw_mem_encryption': (_B, (1, 24)),
    'hw_pci_numa_affinity_policy': (_S, (1, 25)),
    'hw_tpm_model': (_S, (1, 27)), 'hw_tpm_version': (_S, (1, 27)),
    'hw_input_bus': (_S, (1, 29)), 'hw_emulation_architecture': (_S, (1, 31)),
    'hw_ephemeral_encryption': (_B, (1, 32)),
    'hw_ephemeral_encryption_format': (_S, (1, 32)),
    'hw_locked_memory': (_B, (1, 33)), 'hw_viommu_model': (_S, (1, 34)),
    'hw_virtio_packed_ring': (_B, (1, 35)),
    'hw_maxphysaddr_mode': (_S, (1, 36)), 'hw_maxphysaddr_bits': (_I,
                                                                  (1, 36)),
    'hw_ephemeral_encryption_secret_uuid': (_U, (1, 37)),
    'hw_firmware_stateless': (_B, (1, 38)), 'hw_sound_model': (_S, (1, 40)),
    'hw_usb_model': (_S, (1, 41)), 'hw_redirected_usb_ports': (_I, (1, 41)),
    'hw_mem_encryption_model': (_S, (1, 42)),
}


# Glance properties naming a trait the image requires: trait:<NAME>.
TRAIT_PREFIX = 'trait:'


@base.register
class ImageMetaProps(base.SchedulerObject):
    """An image's properties.  Versions follow Nova's history: each minor
    added a property (``FIELDS_ADDED``) or an enum value
    (``VALUES_ADDED``); ``obj_make_compatible`` drops or refuses them for
    an older target, as Nova does (a ``hw_watchdog_action`` of
    ``disabled`` is dropped before 1.16)."""

    VERSION = '1.44'

    fields = {name: field(nullable=True)
              for name, (field, _added) in _PROPERTIES.items()}

    FIELDS_ADDED = {name: added for name, (_field, added)
                    in _PROPERTIES.items() if added > (1, 0)}
    VALUES_ADDED = {
        'hw_disk_bus': {'lxc': (1, 6), 'uml': (1, 6)},
        'img_hv_type': {'lxd': (1, 8)},
        'hw_vif_model': {'lan9118': (1, 17), 'igb': (1, 39)},
        'hw_video_model': {'gop': (1, 22), 'virtio': (1, 22),
                           'none': (1, 22), 'bochs': (1, 30)},
        'hw_cpu_policy': {'mixed': (1, 26)},
        'hw_pci_numa_affinity_policy': {'socket': (1, 28)},
        'hw_mem_encryption_model': {'amd-sev-snp': (1, 43),
                                    'intel-tdx': (1, 44)},
    }

    def obj_make_compatible(self, primitive, target_version):
        if (base.version_tuple(target_version) < (1, 16) and
                primitive.get('hw_watchdog_action') == 'disabled'):
            del primitive['hw_watchdog_action']
        super().obj_make_compatible(primitive, target_version)

    def get(self, name, default=None):
        """The property's value, or ``default`` when it is not set."""
        if name not in self.fields:
            return default
        return self.obj_get(name, default)

    def set_properties(self):
        """A dict of the properties that are set, name -> value."""
        return self.obj_set_values()

    @classmethod
    def from_dict(cls, image_props):
        """Build from a plain property dict, mapping legacy names.

        Values may be primitives (lists for sets, strings for numbers, as
        in a legacy RPC 4.0 message); unknown properties are ignored, as in
        Nova.  ``traits_required`` is read, as Nova reads it, from the
        Glance properties ``trait:<NAME> = required`` (a property named
        ``traits_required`` is ignored).  A value of the wrong type raises
        ValueError.
        """
        props = cls()
        image_props = image_props or {}
        # Legacy names first, so that a current name always wins (Nova).
        ordered = sorted(image_props.items(),
                         key=lambda item: item[0] not in LEGACY_PROPERTY_NAMES)
        for key, value in ordered:
            name = LEGACY_PROPERTY_NAMES.get(key, key)
            if (name in cls.fields and name != 'traits_required' and
                    value is not None):
                setattr(props, name,
                        cls.fields[name].from_primitive(props, name, value))
        traits = [str(key)[len(TRAIT_PREFIX):]
                  for key, value in image_props.items()
                  if str(key).startswith(TRAIT_PREFIX) and
                  str(value) == 'required']
        if traits:
            props.traits_required = traits
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
