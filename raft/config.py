"""Configuration of the replicated metadata log (one controller voter).

Kafka's KRaft names where Kafka has one (``node.id``, ``controller.quorum.voters``,
``metadata.log.dir``, ``controller.quorum.election.timeout.ms``,
``controller.quorum.retry.backoff.ms``); kraftlog-specific names otherwise. The pysyncobj
timings are derived from these in :mod:`raft.syncobj_node`:

    raftMinTimeout        = election timeout
    raftMaxTimeout        = 2 x election timeout          (randomised in between, as Kafka)
    leaderFallbackTimeout = election timeout              (an isolated leader steps down)
    appendEntriesPeriod   = controller.quorum.append.interval.ms (heartbeat)
    connectionTimeout     = 2 x election timeout          (idle connections get keepalives)
    connectionRetryTime   = controller.quorum.retry.backoff.ms
    pre-vote lease        = 0.8 x election timeout        (kraftlog's, see raft.prevote)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from common.configdef import ConfigError, prop

VOTERS_KEY = "controller.quorum.voters"
RAFT_ADDRESS_KEY = "controller.quorum.raft.address"
MAX_VOTERS = 7


def parse_address(text: str, key: str) -> tuple[str, int]:
    """``"host:port"`` -> ``("host", port)``; ConfigError naming ``key`` otherwise."""
    host, colon, port_text = text.strip().rpartition(":")
    if not colon or not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ConfigError(f"{key}: expected host:port, got {text!r}")
    return host, int(port_text)


def parse_voters(text: str) -> dict[int, tuple[str, int]]:
    """``"1@host:port,2@host:port"`` -> ``{1: ("host", port), ...}``; ConfigError naming the key
    on bad syntax, duplicate ids or duplicate addresses."""
    voters: dict[int, tuple[str, int]] = {}
    seen: set[tuple[str, int]] = set()
    for raw in text.split(","):
        item = raw.strip()
        if not item:
            continue
        ident, sep, address = item.partition("@")
        host, colon, port_text = address.rpartition(":")
        if not sep or not colon or not host or not ident.strip().isdigit():
            raise ConfigError(f"{VOTERS_KEY}: expected id@host:port, got {item!r}")
        if not port_text.isdigit() or not 0 < int(port_text) < 65536:
            raise ConfigError(f"{VOTERS_KEY}: bad port in {item!r}")
        node_id, port = int(ident), int(port_text)
        if node_id in voters:
            raise ConfigError(f"{VOTERS_KEY}: voter id {node_id} appears twice")
        if (host, port) in seen:
            raise ConfigError(f"{VOTERS_KEY}: address {host}:{port} appears twice")
        voters[node_id] = (host, port)
        seen.add((host, port))
    return voters


@dataclass(frozen=True)
class RaftConfig:
    node_id: int = field(
        default=-1,
        metadata=prop("node.id", min=-1, doc="This node's id; must be one of the voters' ids."),
    )
    quorum_voters: str = field(
        default="",
        metadata=prop(
            VOTERS_KEY,
            doc="The controller quorum a new log starts with: comma-separated id@host:port of "
            "every voter (an odd number, 1 to 7; 3 or 5 in production). host:port is the "
            "voter's Raft listener. Once the log exists its own membership entries say who "
            "the voters are (kraftlog quorum add-controller / remove-controller); a "
            "controller that is not in this list starts as an observer and reaches the "
            "voters listed here.",
        ),
    )
    raft_address: str = field(
        default="",
        metadata=prop(
            RAFT_ADDRESS_KEY,
            doc="host:port of this controller's Raft listener. Defaults to this node's entry "
            "in controller.quorum.voters; required for a controller that is not in that "
            "list (one that joins a running quorum with kraftlog quorum add-controller).",
        ),
    )
    metadata_log_dir: str = field(
        default="",
        metadata=prop(
            "metadata.log.dir",
            doc="Directory of the Raft journal (raft-journal.log), its term/vote file "
            "(raft-meta.json) and the state dump (raft-dump.bin).",
        ),
    )
    quorum_secret: str | None = field(
        default=None,
        metadata=prop(
            "controller.quorum.secret",
            doc="Shared secret of the controller quorum. Every Raft message is encrypted and "
            "authenticated with a key derived from it (Fernet); a peer without it cannot talk "
            "to a voter. Required: a controller refuses to start without one.",
        ),
    )
    election_timeout_ms: int = field(
        default=1000,
        metadata=prop(
            "controller.quorum.election.timeout.ms",
            min=30,
            doc="A follower that hears nothing from the leader for a random time between this "
            "and twice this starts an election; a leader that hears from no majority for this "
            "long steps down.",
        ),
    )
    append_interval_ms: int = field(
        default=50,
        metadata=prop(
            "controller.quorum.append.interval.ms",
            min=1,
            doc="Leader heartbeat interval (empty AppendEntries). New entries are sent at once, "
            "not on this timer. Must be under a third of the election timeout.",
        ),
    )
    retry_backoff_ms: int = field(
        default=100,
        metadata=prop(
            "controller.quorum.retry.backoff.ms",
            min=1,
            doc="Wait between attempts to (re)connect to another voter.",
        ),
    )
    max_tail_records: int = field(
        default=10000,
        metadata=prop(
            "metadata.log.max.tail.records",
            min=2,
            doc="Committed entries kept in memory; beyond this the oldest half is folded into "
            "a snapshot by the metadata snapshot builder. Also the journal length (in Raft "
            "entries) after which the state is dumped to disk and the journal truncated.",
        ),
    )
    append_timeout_ms: int = field(
        default=5000,
        metadata=prop(
            "metadata.log.append.timeout.ms",
            min=1,
            doc="Upper bound on how long an append waits to commit (a caller's shorter "
            "timeout wins); then AppendTimeoutError, outcome unknown.",
        ),
    )
    max_batch_bytes: int = field(
        default=1024 * 1024,
        metadata=prop(
            "metadata.log.max.batch.bytes",
            min=1024,
            doc="Largest batch of records (sum of record sizes) one append may carry.",
        ),
    )

    def __post_init__(self) -> None:
        if self.quorum_voters:
            parse_voters(self.quorum_voters)
        if self.raft_address:
            parse_address(self.raft_address, RAFT_ADDRESS_KEY)

    @property
    def voters(self) -> dict[int, tuple[str, int]]:
        return parse_voters(self.quorum_voters)

    def validate_for_controller(self) -> None:
        """Everything a voter needs to start; ConfigError naming the key otherwise."""
        voters = self.voters
        if not voters:
            raise ConfigError(f"{VOTERS_KEY}: required for a controller")
        if len(voters) > MAX_VOTERS:
            raise ConfigError(f"{VOTERS_KEY}: at most {MAX_VOTERS} voters; got {len(voters)}")
        if self.node_id in voters:
            # The voters a new quorum starts with (a joining controller lists whichever
            # voters it can reach, which may be an even number mid-replacement).
            if len(voters) % 2 == 0:
                raise ConfigError(
                    f"{VOTERS_KEY}: needs an odd number of voters, 1 to {MAX_VOTERS}; "
                    f"got {len(voters)}"
                )
            if self.raft_address and (
                parse_address(self.raft_address, RAFT_ADDRESS_KEY) != voters[self.node_id]
            ):
                raise ConfigError(
                    f"{RAFT_ADDRESS_KEY}: {self.raft_address} differs from this node's entry "
                    f"in {VOTERS_KEY}"
                )
        elif not self.raft_address:
            raise ConfigError(
                f"node.id: {self.node_id} is not one of the voters in {VOTERS_KEY}; a "
                f"controller joining a running quorum needs {RAFT_ADDRESS_KEY}"
            )
        if not self.metadata_log_dir:
            raise ConfigError("metadata.log.dir: required for a controller")
        if not self.quorum_secret:
            raise ConfigError(
                "controller.quorum.secret: required for a controller (Raft traffic is pickle; "
                "without a shared secret anyone who reaches the port could run code)"
            )
        if self.append_interval_ms * 3 >= self.election_timeout_ms:
            raise ConfigError(
                "controller.quorum.append.interval.ms: must be under a third of "
                "controller.quorum.election.timeout.ms"
            )

    def address_of(self, node_id: int) -> str:
        host, port = self.voters[node_id]
        return f"{host}:{port}"

    @property
    def own_address(self) -> str:
        """host:port of this controller's Raft listener."""
        if self.raft_address:
            host, port = parse_address(self.raft_address, RAFT_ADDRESS_KEY)
            return f"{host}:{port}"
        return self.address_of(self.node_id)

    @property
    def initial_voters(self) -> dict[int, str]:
        """``controller.quorum.voters`` as voter id -> host:port."""
        return {i: f"{h}:{p}" for i, (h, p) in self.voters.items()}
