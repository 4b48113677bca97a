"""``kraftlog start --config F``: run one node in the foreground until SIGTERM / SIGINT.

Logs go to stderr. Exit codes: 0 after an orderly shutdown; 78 (EX_CONFIG) for a configuration
or storage-identity problem (one ``error: ...`` line, no traceback: restarting cannot help, and
the systemd unit's RestartPreventExitStatus says so); 1 when the node fails to start otherwise
(a port in use, a locked log directory); 2 for usage errors.
"""

from __future__ import annotations

import argparse
import logging
import os
import resource
import sys

from common.configdef import ConfigError
from data_plane.storage.errors import KafkaStorageError
from deploy.meta_properties import MetaPropertiesError, check_directories
from deploy.node import Component, Node, install_signal_handlers
from deploy.node_config import NodeSettings, load_node_config
from deploy.node_status import NodeStatusWriter

logger = logging.getLogger(__name__)

# Soft open-files limit asked for when the hard limit is unlimited.
OPEN_FILES_TARGET = 1_048_576
EXIT_CONFIG = 78  # sysexits.h EX_CONFIG
LOG_FORMAT = "%(asctime)s %(levelname)s [%(threadName)s] %(name)s: %(message)s"


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("start", help="run a node (broker, controller or both) in the foreground")
    p.add_argument("--config", "-c", required=True, help="the node's server.properties")
    p.add_argument(
        "--override",
        "-o",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set a config key, overriding the file (repeatable)",
    )
    p.add_argument("--status-file", help="write the node's status as JSON to this file")
    p.add_argument(
        "--log-level",
        default="INFO",
        choices=("DEBUG", "INFO", "WARNING", "ERROR"),
        help="log level on stderr (default INFO)",
    )
    p.set_defaults(func=run)


def parse_overrides(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--override {item!r}: expected KEY=VALUE")
        out[key.strip()] = value.strip()
    return out


def build_components(settings: NodeSettings, cluster_id: str) -> list[Component]:
    """The node's components in start order (controller before broker)."""
    # Imported here so `kraftlog --help` and the admin commands do not load grpc and storage.
    from data_plane.metrics.component import MetricsComponent

    components: list[Component] = [MetricsComponent(settings.props)]
    if settings.node.is_controller:
        from deploy.controller_component import ControllerComponent

        components.append(ControllerComponent(settings, cluster_id))
    if settings.node.is_broker:
        from deploy.broker_component import BrokerComponent
        from deploy.kafka_component import KafkaComponent

        broker = BrokerComponent(settings, cluster_id)
        components.append(broker)
        components.append(KafkaComponent(settings, cluster_id, broker))
    return components


def raise_open_files_limit() -> tuple[int, int]:
    """Raise the soft RLIMIT_NOFILE to the hard limit: a broker keeps a log file and two
    index files open per partition segment, so the common soft default of 1024 caps it at a
    few hundred partitions. Returns the (old soft, new soft) limits."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, OPEN_FILES_TARGET)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            return soft, target
        except (ValueError, OSError):
            pass
    return soft, soft


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=args.log_level, format=LOG_FORMAT, stream=sys.stderr)
    try:
        settings = load_node_config(args.config, parse_overrides(args.override))
        cluster_id = check_directories(settings.storage_dirs(), node_id=settings.node_id)
    except (ConfigError, MetaPropertiesError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_CONFIG
    roles = ",".join(settings.roles)
    old_soft, new_soft = raise_open_files_limit()
    if new_soft != old_soft:
        logger.info("raised the open files limit from %d to %d", old_soft, new_soft)
    else:
        logger.info("open files limit: %d", new_soft)
    status_writer = None
    if args.status_file:
        status_writer = NodeStatusWriter(
            args.status_file,
            {"node_id": settings.node_id, "roles": list(settings.roles), "cluster_id": cluster_id},
        )
    try:
        components = build_components(settings, cluster_id)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_CONFIG
    node = Node(settings.node_id, settings.roles, components, status_writer)
    install_signal_handlers(node)
    try:
        node.start()
    except (OSError, KafkaStorageError) as e:
        # A port in use, a locked or unwritable directory: an operator problem, not a bug.
        print(f"error: node {settings.node_id} cannot start: {e}", file=sys.stderr)
        return 1
    except Exception as e:
        logger.exception("node %d failed to start", settings.node_id)
        print(f"error: node {settings.node_id} cannot start: {e}", file=sys.stderr)
        return 1
    logger.info(
        "node %d started (process.roles=%s, cluster.id=%s, pid %d)",
        settings.node_id,
        roles,
        cluster_id,
        os.getpid(),
    )
    node.wait_for_stop_request()
    node.shutdown()
    logger.info("node %d stopped (exit code %d)", settings.node_id, node.exit_code)
    return node.exit_code
