"""A node's config file (``server.properties``) mapped onto every subsystem's config dataclass.

One Java ``.properties`` file per node, with Kafka's property names. Each subsystem declares
what it reads as a frozen dataclass (:mod:`common.configdef`); this module

1. parses the file with :func:`common.configdef.load_properties`;
2. rejects any key that no subsystem declares (a typo would otherwise be silently ignored),
   naming the key and the closest known names;
3. builds :class:`NodeConfig` (the node-level keys deploy itself reads), and, by role,
   :class:`raft.config.RaftConfig` and
   :class:`metadata.controller_config.ControllerConfig` (controllers) and
   :class:`common.log_config.LogConfig` (brokers: the default topic config and ``log.dirs``);
4. checks the cross-key rules Kafka checks at startup (a controller's ``node.id`` among the
   voters, a CONTROLLER listener on controllers and none on brokers, ...), raising
   :class:`ConfigError` naming the key.

Kafka's defaulting rules kept: ``metadata.log.dir`` defaults to the first of ``log.dirs``;
``advertised.listeners`` defaults to the non-controller ``listeners``.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field

from common.configdef import ConfigError, from_props, known_keys, load_properties, prop
from common.log_config import LogConfig
from common.security.config import SecurityConfig
from data_plane.broker.config import BrokerConfig
from data_plane.metrics.config import MetricsConfig
from deploy.listeners import Listener, parse_listeners, parse_server_list
from metadata.controller_config import ControllerConfig
from raft.config import RaftConfig

ROLE_BROKER = "broker"
ROLE_CONTROLLER = "controller"


@dataclass(frozen=True, slots=True)
class NodeConfig:
    """Node-level settings read by deploy (the node process and its components)."""

    process_roles: tuple[str, ...] = field(
        default=(),
        metadata=prop(
            "process.roles",
            choices=(ROLE_BROKER, ROLE_CONTROLLER),
            doc="Roles of this node: broker, controller, or broker,controller (combined). "
            "Required.",
        ),
    )
    node_id: int = field(
        default=-1,
        metadata=prop(
            "node.id",
            min=-1,
            doc="Unique id of this node in the cluster (brokers and controllers share one id "
            "space). Required; must match the meta.properties written by `storage format`.",
        ),
    )
    listeners: tuple[str, ...] = field(
        default=("PLAINTEXT://:9092",),
        metadata=prop(
            "listeners",
            doc="NAME://host:port listeners this node binds. Brokers: the Kafka listener "
            "(PLAINTEXT). Controllers: the gRPC control-plane listener named in "
            "controller.listener.names (CONTROLLER). An empty host binds every interface.",
        ),
    )
    advertised_listeners: tuple[str, ...] | None = field(
        default=None,
        metadata=prop(
            "advertised.listeners",
            doc="Listeners a broker registers for clients to use, if not the ones it binds "
            "(e.g. behind NAT). Default: the non-controller listeners.",
        ),
    )
    quorum_bootstrap_servers: tuple[str, ...] = field(
        default=(),
        metadata=prop(
            "controller.quorum.bootstrap.servers",
            doc="host:port list of the controllers' CONTROLLER listeners, where brokers and "
            "admin tools reach the control plane (any voter redirects to the active one). "
            "Required on brokers; a combined node defaults to its own CONTROLLER listener.",
        ),
    )
    broker_rack: str | None = field(
        default=None,
        metadata=prop(
            "broker.rack",
            doc="Rack of this broker; replica placement spreads a partition across racks.",
        ),
    )
    controlled_shutdown_enable: bool = field(
        default=True,
        metadata=prop(
            "controlled.shutdown.enable",
            doc="On SIGTERM a broker first asks the controller to move its leaderships away "
            "and waits for that, then stops.",
        ),
    )
    controlled_shutdown_timeout_ms: int = field(
        default=30_000,
        metadata=prop(
            "controlled.shutdown.timeout.ms",
            min=0,
            doc="Longest a broker waits for its controlled shutdown before stopping anyway.",
        ),
    )
    controller_request_timeout_ms: int = field(
        default=5000,
        metadata=prop(
            "controller.quorum.request.timeout.ms",
            min=100,
            doc="Timeout of one request from a broker to the controllers (registration, "
            "heartbeat, metadata fetch).",
        ),
    )

    @property
    def is_broker(self) -> bool:
        return ROLE_BROKER in self.process_roles

    @property
    def is_controller(self) -> bool:
        return ROLE_CONTROLLER in self.process_roles


# Every dataclass whose keys may appear in a node's file, in the order of the reference docs.
CONFIG_CLASSES: tuple[type, ...] = (
    NodeConfig,
    RaftConfig,
    ControllerConfig,
    LogConfig,
    BrokerConfig,
    SecurityConfig,
    MetricsConfig,
)


def all_known_keys() -> set[str]:
    keys: set[str] = set()
    for cls in CONFIG_CLASSES:
        keys |= known_keys(cls)
    return keys


@dataclass(frozen=True, slots=True)
class NodeSettings:
    """Everything a node process needs from its file, validated."""

    source: str
    props: Mapping[str, str]
    node: NodeConfig
    listeners: tuple[Listener, ...]
    advertised_listeners: tuple[Listener, ...]
    controller_listener: Listener | None
    bootstrap_controllers: tuple[str, ...]
    log: LogConfig
    raft: RaftConfig | None
    controller: ControllerConfig

    @property
    def node_id(self) -> int:
        return self.node.node_id

    @property
    def roles(self) -> tuple[str, ...]:
        return self.node.process_roles

    def storage_dirs(self) -> list[str]:
        """Directories that `storage format` labels and `start` checks: log.dirs on brokers,
        metadata.log.dir on controllers (and both on combined nodes)."""
        dirs: list[str] = []
        if self.node.is_broker:
            dirs.extend(self.log.log_dirs)
        if self.raft is not None:
            dirs.append(self.raft.metadata_log_dir)
        return dirs


def load_node_config(path: str, overrides: Mapping[str, str] | None = None) -> NodeSettings:
    """Read and validate the node config at ``path`` (``overrides`` win over the file)."""
    try:
        props = load_properties(path)
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror}") from None
    if overrides:
        props.update(overrides)
    return node_settings_from_props(props, source=path)


def node_settings_from_props(props: Mapping[str, str], *, source: str) -> NodeSettings:
    _reject_unknown_keys(props, source)
    try:
        return _build(dict(props), source)
    except ConfigError as e:
        raise ConfigError(f"{source}: {e}") from None


def _reject_unknown_keys(props: Mapping[str, str], source: str) -> None:
    known = all_known_keys()
    unknown = sorted(set(props) - known)
    if not unknown:
        return
    parts = []
    for key in unknown:
        close = difflib.get_close_matches(key, known, n=1)
        parts.append(f"{key} (did you mean {close[0]}?)" if close else key)
    raise ConfigError(f"{source}: unknown config key(s): {', '.join(parts)}")


def _build(props: dict[str, str], source: str) -> NodeSettings:
    """Validate in a fixed order (node, controller, log, listeners, quorum, Raft), so a file
    with several mistakes always reports the same one first. Fills in ``metadata.log.dir``
    in ``props`` when it is missing, as Kafka does."""
    node = _node_config(props)
    controller_cfg = from_props(ControllerConfig, props)
    controller_names = {n.upper() for n in controller_cfg.controller_listener_names}
    if not controller_names:
        raise ConfigError("controller.listener.names: must name at least one listener")
    log_cfg = _log_config(props)
    listeners = parse_listeners(node.listeners, key="listeners")
    controller_listener = _controller_listener(node, listeners, controller_names)
    data_listeners = tuple(lis for lis in listeners if lis.name not in controller_names)
    if node.is_broker and not data_listeners:
        raise ConfigError("listeners: a broker needs a non-controller listener (PLAINTEXT://...)")
    advertised = _advertised_listeners(node, data_listeners, controller_names)
    bootstrap = _bootstrap_controllers(node, controller_listener)
    raft_cfg = _raft_config(node, props, controller_listener)
    return NodeSettings(
        source=source,
        props=props,
        node=node,
        listeners=listeners,
        advertised_listeners=advertised,
        controller_listener=controller_listener,
        bootstrap_controllers=bootstrap,
        log=log_cfg,
        raft=raft_cfg,
        controller=controller_cfg,
    )


def _node_config(props: Mapping[str, str]) -> NodeConfig:
    node = from_props(NodeConfig, props)
    if not node.process_roles:
        raise ConfigError("process.roles: required (broker, controller or broker,controller)")
    if len(set(node.process_roles)) != len(node.process_roles):
        raise ConfigError(f"process.roles: duplicate role in {','.join(node.process_roles)}")
    if node.node_id < 0:
        raise ConfigError("node.id: required (a non-negative integer)")
    return node


def _log_config(props: dict[str, str]) -> LogConfig:
    log_cfg = from_props(LogConfig, props)
    if not log_cfg.log_dirs:
        raise ConfigError("log.dirs: must name at least one directory")
    if "metadata.log.dir" not in props or not props["metadata.log.dir"].strip():
        props["metadata.log.dir"] = log_cfg.log_dirs[0]  # Kafka's default
    return log_cfg


def _advertised_listeners(
    node: NodeConfig, data_listeners: tuple[Listener, ...], controller_names: set[str]
) -> tuple[Listener, ...]:
    """advertised.listeners, or the data listeners when it is not set. Each must be
    dialable and not a controller listener; a broker advertises every data listener."""
    if node.advertised_listeners is None:
        advertised = data_listeners
    else:
        advertised = parse_listeners(node.advertised_listeners, key="advertised.listeners")
        for lis in advertised:
            if lis.name in controller_names:
                raise ConfigError(f"advertised.listeners: must not include {lis.name}")
            if lis.host in ("", "0.0.0.0", "::"):
                raise ConfigError(
                    f"advertised.listeners: {lis} has no routable host (clients cannot dial it)"
                )
    if node.is_broker:
        advertised_names = {lis.name for lis in advertised}
        for lis in data_listeners:
            if lis.name not in advertised_names:
                raise ConfigError(f"advertised.listeners: no entry for listener {lis.name}")
    return advertised


def _bootstrap_controllers(
    node: NodeConfig, controller_listener: Listener | None
) -> tuple[str, ...]:
    """controller.quorum.bootstrap.servers; a controller without it dials its own
    CONTROLLER listener, a broker must have it."""
    bootstrap = parse_server_list(
        node.quorum_bootstrap_servers, key="controller.quorum.bootstrap.servers"
    )
    if not bootstrap and node.is_controller and controller_listener is not None:
        bootstrap = (_dialable(controller_listener),)
    if node.is_broker and not bootstrap:
        raise ConfigError(
            "controller.quorum.bootstrap.servers: required on a broker (host:port of the "
            "controllers' CONTROLLER listeners)"
        )
    return bootstrap


def _raft_config(
    node: NodeConfig, props: Mapping[str, str], controller_listener: Listener | None
) -> RaftConfig | None:
    """The Raft settings of a controller (None on a broker-only node); its Raft port must
    differ from its CONTROLLER listener port."""
    if not node.is_controller:
        return None
    raft_cfg = from_props(RaftConfig, props)
    if raft_cfg.node_id != node.node_id:  # pragma: no cover - both read node.id
        raise ConfigError("node.id: read differently by raft and deploy")
    raft_cfg.validate_for_controller()
    host, _, port = raft_cfg.own_address.rpartition(":")
    if (
        controller_listener is not None
        and int(port) == controller_listener.port
        and host in (controller_listener.host, "")
    ):
        raise ConfigError(
            "controller.quorum.voters: the Raft port of this node equals its "
            "CONTROLLER listener port; they need two different ports"
        )
    return raft_cfg


def _controller_listener(
    node: NodeConfig, listeners: tuple[Listener, ...], controller_names: set[str]
) -> Listener | None:
    found = [lis for lis in listeners if lis.name in controller_names]
    if node.is_controller:
        if not found:
            raise ConfigError(
                f"listeners: a controller needs a listener named in controller.listener.names "
                f"({', '.join(sorted(controller_names))}), e.g. CONTROLLER://host:9093"
            )
        return found[0]
    if found:
        raise ConfigError(
            f"listeners: {found[0]} is a controller listener, but process.roles has no controller"
        )
    return None


def _dialable(listener: Listener) -> str:
    host = listener.host or "127.0.0.1"
    if host in ("0.0.0.0", "::"):
        host = "127.0.0.1"
    return f"[{host}]:{listener.port}" if ":" in host else f"{host}:{listener.port}"
