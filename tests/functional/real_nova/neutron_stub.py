"""A stand-in for Neutron's API, for a Nova whose servers have no ports.

Servers booted with ``"networks": "none"`` need no port, but Nova still
asks Neutron about them: extensions, the ports of an instance (by
``device_id``), quotas.  Every ``GET`` of a collection answers an empty
list, a quota is unlimited, anything else is a 404 in Neutron's shape.
Every request is printed (its log).

``python neutron_stub.py PORT``: serves on 127.0.0.1:PORT until killed.
"""

import http.server
import json
import sys

VERSIONS = {'versions': [{'id': 'v2.0', 'status': 'CURRENT',
                          'links': [{'rel': 'self', 'href': '/v2.0/'}]}]}


def answer(method, path):
    """``(status, body)`` for a request."""
    parts = [p for p in path.split('?')[0].split('/') if p]
    if method != 'GET':
        return 404, {'NeutronError': {'type': 'NotFound',
                                      'message': 'stand-in: no such thing',
                                      'detail': ''}}
    if not parts:
        return 200, VERSIONS
    name = parts[-1].removesuffix('.json')
    if len(parts) >= 3 and parts[-2] == 'quotas':
        return 200, {'quota': {'port': -1, 'network': -1}}
    if len(parts) == 2:
        return 200, {name: []}
    return 404, {'NeutronError': {'type': 'NotFound',
                                  'message': 'stand-in: %s not found' % name,
                                  'detail': ''}}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def _reply(self):
        length = int(self.headers.get('Content-Length') or 0)
        if length:
            self.rfile.read(length)
        status, body = answer(self.command, self.path)
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_DELETE = _reply

    def log_message(self, fmt, *args):
        print(fmt % args, flush=True)


def main():
    server = http.server.ThreadingHTTPServer(('127.0.0.1', int(sys.argv[1])),
                                             Handler)
    server.serve_forever()


if __name__ == '__main__':
    main()
