"""``kraftlog certs``: a development CA and node certificates.

    kraftlog certs create [--out DIR] [--name NAME ...] [--host HOST ...] [--days N]

Writes ``ca.pem`` / ``ca-key.pem`` (created once, reused afterwards) and ``NAME.pem`` (the
certificate chain) / ``NAME-key.pem`` per ``--name`` into ``--out`` (default ``certs``).
Defaults: names ``node-1``, ``node-2``, ``node-3`` and ``client``; hosts ``localhost`` and
``127.0.0.1``. A node's server.properties then needs::

    ssl.keystore.location=DIR/node-1.pem
    ssl.key.location=DIR/node-1-key.pem
    ssl.truststore.location=DIR/ca.pem

Layout and key types: data_plane.security.certs. For development only: the CA key sits next to
the certificates.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from data_plane.security.certs import DEFAULT_HOSTS, DEFAULT_VALIDITY_DAYS, create_dev_pki
from deploy.admin import fail, print_json
from deploy.command_group import add_command_group

DEFAULT_NAMES = ("node-1", "node-2", "node-3", "client")
DEFAULT_OUT_DIR = "certs"


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    _, certs_sub = add_command_group(sub, "certs", "create a development CA and certificates")
    p = certs_sub.add_parser("create", help="create the CA (once) and certificates")
    p.add_argument("--out", default=DEFAULT_OUT_DIR, help=f"directory (default {DEFAULT_OUT_DIR})")
    p.add_argument("--name", action="append", help="certificate name (repeatable)")
    p.add_argument("--host", action="append", help="subjectAltName DNS name or IP (repeatable)")
    p.add_argument("--days", type=int, default=DEFAULT_VALIDITY_DAYS, help="validity in days")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_create)


def _create(args: argparse.Namespace) -> int:
    if args.days < 1:
        return fail("--days must be at least 1")
    names = list(dict.fromkeys(args.name or DEFAULT_NAMES))
    for name in names:
        if not name or "/" in name or name.startswith("."):
            return fail(f"invalid certificate name {name!r}")
        if name in ("ca", "ca-key"):
            return fail(f"{name!r} is reserved for the CA")
    out = Path(args.out)
    try:
        issued = create_dev_pki(
            out, names, tuple(args.host or DEFAULT_HOSTS), validity_days=args.days
        )
    except (OSError, ValueError) as e:
        return fail(f"cannot create certificates in {out}: {e}")
    rows = {
        name: {"certificate": str(i.cert_path), "key": str(i.key_path)}
        for name, i in issued.items()
    }
    if args.json:
        print_json({"ca": str(out / "ca.pem"), "certificates": rows})
    else:
        print(f"CA: {out / 'ca.pem'}")
        for name, row in rows.items():
            print(f"{name}: {row['certificate']} (key {row['key']})")
    return 0
