"""``python -m chaos.toxiproxy [--host H] [--port P] [--config proxies.json] [--seed N]``:
run the Toxiproxy-compatible server in the foreground until SIGINT or SIGTERM."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import signal
import sys

from chaos.toxiproxy.http import Request
from chaos.toxiproxy.server import DEFAULT_HOST, DEFAULT_PORT, ToxiproxyServer


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m chaos.toxiproxy", description="Toxiproxy-compatible TCP fault proxy"
    )
    parser.add_argument("--host", default=DEFAULT_HOST, help="API address (default %(default)s)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="API port (default 8474)")
    parser.add_argument(
        "--config", help="JSON array of proxies to create at start (as POST /populate)"
    )
    parser.add_argument("--seed", type=int, help="seed for toxicity draws and jitter")
    return parser.parse_args(argv)


async def _main(args: argparse.Namespace) -> int:
    server = ToxiproxyServer(args.host, args.port, seed=args.seed)
    await server.start_async()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, server.request_stop)
    if args.config:
        with open(args.config, encoding="utf-8") as f:
            body = f.read().encode()
        response = await server.api.handle(Request("POST", "/populate", {}, body))
        if response.status != 201:
            print(
                f"populate from {args.config} failed: {json.dumps(response.body)}", file=sys.stderr
            )
            await server.close_async()
            return 1
    print(f"toxiproxy API listening on {server.url}", flush=True)
    await server.run_until_stopped()
    return 0


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    return asyncio.run(_main(_parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
