"""A server speaking Toxiproxy's HTTP API and toxics, for link faults in the chaos suite.

No toxiproxy-server binary is installable here, so this package provides one with the same
API (see api.py) and toxic semantics (see toxics.py); the suite talks to it only through the
toxiproxy-python client, so a real toxiproxy-server works in its place.
"""

from chaos.toxiproxy.server import DEFAULT_HOST, DEFAULT_PORT, ToxiproxyServer, serve

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "ToxiproxyServer", "serve"]
