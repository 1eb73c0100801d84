"""``[trusted_computing]``: the attestation server of the TrustedFilter.

Nova's names and defaults (the group existed in Newton and
Ocata, was deprecated in Pike and removed in Queens together with the
TrustedFilter).  Attestation is off unless ``attestation_server`` is set:
then every host's trust level is ``unknown``
(``scheduler.filters.attestation``).
"""

from oslo_config import cfg

from scheduler.conf import groups

trusted_group = cfg.OptGroup(
    name='trusted_computing', title='Trusted computing',
    help='The OpenAttestation (OAT) server that the TrustedFilter asks for '
         'the trust level of compute nodes.')

trusted_opts = [
    cfg.StrOpt('attestation_server',
               help='Host name or IP address of the attestation server.  '
                    'Unset (the default) turns attestation off: every '
                    'compute node is then of trust level ``unknown``, so '
                    'requests for ``trust:trusted_host=trusted`` find no '
                    'host.'),
    cfg.StrOpt('attestation_server_ca_file',
               help='CA certificate file (PEM) used to verify the '
                    'attestation server\'s HTTPS certificate.  Unset uses '
                    'the system\'s trusted CAs.'),
    cfg.PortOpt('attestation_port', default=8443,
                help='HTTPS port of the attestation server.'),
    cfg.StrOpt('attestation_api_url',
               default='/OpenAttestationWebServices/V1.0',
               help='Path of the attestation API on the server; '
                    '``/PollHosts`` is appended to it.'),
    cfg.StrOpt('attestation_auth_blob', secret=True,
               help='Authentication blob sent to the attestation server in '
                    'the ``x-auth-blob`` header.  Unset sends none.'),
    cfg.IntOpt('attestation_auth_timeout', default=60, min=0,
               help='Seconds a node\'s attestation result stays cached '
                    'before the server is asked again; also the timeout of '
                    'one request to the server (at least 1 second).  0 '
                    'asks the server every time.'),
    cfg.BoolOpt('attestation_insecure_ssl', default=False,
                help='Do not verify the attestation server\'s certificate '
                     '(testing only).'),
]


def register_opts(conf):
    groups.register_group(conf, trusted_group)
    conf.register_opts(trusted_opts, group=trusted_group)


def list_opts():
    return {trusted_group: trusted_opts}
