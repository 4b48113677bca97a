"""ControllerClient: calls the controller quorum's gRPC service from brokers and admin tools.

It keeps one gRPC channel per voter address, sends controller-only calls to the active
controller (learned from NOT_CONTROLLER answers, which name it, else found by trying the
bootstrap voters in turn), and retries retriable errors (envelope error codes with Kafka's
retriable flag, unreachable voters) with exponential backoff until ``timeout_s`` runs out.
Non-retriable envelope errors raise :class:`ControllerError`; per-item error codes (per topic,
per partition) are returned to the caller, except that ``create_topics`` / ``create_partitions``
resend items that came back THROTTLING_QUOTA_EXCEEDED (a request too big for one append).

Thread-safety: every method may be called from any thread concurrently.
"""

from __future__ import annotations

import dataclasses
import logging
import random
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

import grpc

from common.config_resources import RESOURCE_TOPIC
from common.error_codes import ErrorCode, error_name, is_retriable
from metadata import features
from metadata import messages as m
from metadata.messages import (
    AlterableConfig,
    AlterPartitionTopic,
    ClusterDescription,
    NewTopic,
    TopicResult,
)
from metadata.rpc import (
    FETCH_METADATA_MAX_WAIT_MS,
    MAX_REQUEST_BYTES,
    MAX_RESPONSE_BYTES,
    METHODS,
    decode_envelope,
    method_path,
    pack,
)
from metadata.wire import MessageError, from_wire
from raft.api import LogEntry, Snapshot

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

logger = logging.getLogger(__name__)
D = TypeVar("D", bound="DataclassInstance")
Item = TypeVar("Item")  # an item of a batched request (a topic to create, partitions to add)

RETRY_BACKOFF_MIN_S = 0.05
RETRY_BACKOFF_MAX_S = 1.0
# One attempt never waits longer than this for an answer (a long-poll adds its wait on top).
ATTEMPT_TIMEOUT_MAX_S = 10.0
# Longest one AddRaftVoter / RemoveRaftVoter attempt waits on the controller for its commit.
VOTER_CHANGE_ATTEMPT_S = 15.0
# Bound on attempts within one call, whatever the timeout.
MAX_ATTEMPTS = 1000


class ControllerError(Exception):
    """A controller call failed with a Kafka error code (or ran out of time)."""

    def __init__(self, error_code: int, message: str | None) -> None:
        super().__init__(f"{error_name(error_code)}: {message or ''}")
        self.error_code = int(error_code)
        self.message = message


class BrokerSessionCall:
    """An open broker session stream: :meth:`wait` blocks while the controller holds it,
    :meth:`cancel` ends it from this side (any thread)."""

    def __init__(self, call: Any, address: str) -> None:
        self._call = call
        self.address = address

    def wait(self) -> str:
        """Block until the stream ends; say how (the controller ended it, or the error)."""
        try:
            for _ in self._call:
                pass  # the controller sends nothing after its first message
        except grpc.RpcError as exc:
            code = exc.code() if hasattr(exc, "code") else None
            return f"{self.address}: {code}"
        return f"{self.address}: ended by the controller"

    def cancel(self) -> None:
        self._call.cancel()


class FetchMetadataResult(NamedTuple):
    """``snapshot`` (to load first) or None; committed ``records`` after it, raft control
    entries included (``is_control``) so the reader's position can advance past them;
    ``committed_offset`` of the answering voter."""

    snapshot: Snapshot | None
    records: list[LogEntry]
    committed_offset: int


def parse_bootstrap(bootstrap: str | Sequence[tuple[str, int]]) -> list[str]:
    """``"host:port,host:port"`` (optionally ``id@host:port`` as in controller.quorum.voters)
    or a list of (host, port) -> ["host:port", ...]."""
    if isinstance(bootstrap, str):
        out = []
        for item in bootstrap.split(","):
            item = item.strip()
            if not item:
                continue
            if "@" in item:
                item = item.split("@", 1)[1]
            host, sep, port = item.rpartition(":")
            if not sep or not host or not port.isdigit():
                raise ValueError(f"bad controller address {item!r}: expected host:port")
            out.append(f"{host}:{int(port)}")
    else:
        out = [f"{h}:{int(p)}" for h, p in bootstrap]
    if not out:
        raise ValueError("no controller addresses given")
    return out


class ControllerClient:
    def __init__(
        self,
        bootstrap: str | Sequence[tuple[str, int]],
        timeout_s: float = 10.0,
        *,
        credentials: grpc.ChannelCredentials | None = None,
    ) -> None:
        self._bootstrap = parse_bootstrap(bootstrap)
        # Mutual TLS when set (data_plane.security.grpc_tls.channel_credentials).
        self._credentials = credentials
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self._channels: dict[str, grpc.Channel] = {}
        self._controller: str | None = None
        self._next_bootstrap = random.randrange(len(self._bootstrap))
        self._closed = False

    # --- plumbing -------------------------------------------------------------------------------

    def close(self) -> None:
        with self._lock:
            self._closed = True
            channels, self._channels = list(self._channels.values()), {}
        for ch in channels:
            ch.close()

    def __enter__(self) -> ControllerClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _channel(self, address: str) -> grpc.Channel:
        with self._lock:
            if self._closed:
                raise ControllerError(ErrorCode.UNKNOWN_SERVER_ERROR, "client closed")
            ch = self._channels.get(address)
            if ch is None:
                options = [
                    ("grpc.max_send_message_length", MAX_REQUEST_BYTES),
                    ("grpc.max_receive_message_length", MAX_RESPONSE_BYTES),
                    ("grpc.enable_retries", 0),
                ]
                if self._credentials is not None:
                    ch = grpc.secure_channel(address, self._credentials, options=options)
                else:
                    ch = grpc.insecure_channel(address, options=options)
                self._channels[address] = ch
            return ch

    def _pick(self) -> str:
        with self._lock:
            if self._controller is not None:
                return self._controller
            address = self._bootstrap[self._next_bootstrap % len(self._bootstrap)]
            self._next_bootstrap += 1
            return address

    def _forget(self, address: str) -> None:
        with self._lock:
            if self._controller == address:
                self._controller = None

    def _remember(self, address: str | None) -> None:
        with self._lock:
            self._controller = address

    def call(
        self,
        method: str,
        request: DataclassInstance,
        response_cls: type[D],
        *,
        timeout_s: float | None = None,
        extra_attempt_s: float = 0.0,
        address: str | None = None,
    ) -> D:
        """Send ``request`` to ``method`` and return the decoded response body, a
        ``response_cls`` (which must be the class METHODS names for ``method``)."""
        _, expected_cls, controller_only = METHODS[method]
        if response_cls is not expected_cls:
            raise TypeError(
                f"{method} answers {expected_cls.__name__}, not {response_cls.__name__}"
            )
        payload = pack(request)
        deadline = time.monotonic() + (self.timeout_s if timeout_s is None else timeout_s)
        backoff = RETRY_BACKOFF_MIN_S
        last_error: tuple[int, str | None] = (ErrorCode.REQUEST_TIMED_OUT, "no attempt made")
        for _ in range(MAX_ATTEMPTS):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            target = address or self._pick()
            attempt_s = min(remaining, ATTEMPT_TIMEOUT_MAX_S + extra_attempt_s)
            try:
                # No (de)serializers: the payload and the answer stay bytes.
                stub: grpc.UnaryUnaryMultiCallable[bytes, bytes] = self._channel(
                    target
                ).unary_unary(method_path(method))
                raw = stub(payload, timeout=attempt_s)
                env = decode_envelope(raw)
            except grpc.RpcError as exc:
                code = exc.code() if hasattr(exc, "code") else None
                details = exc.details() if hasattr(exc, "details") else ""
                last_error = (ErrorCode.NETWORK_EXCEPTION, f"{target}: {code} {details}")
                self._forget(target)
                if code == grpc.StatusCode.UNIMPLEMENTED:
                    raise ControllerError(ErrorCode.UNKNOWN_SERVER_ERROR, str(exc)) from None
                # Anything else (unreachable, deadline, server busy) may pass: try again.
            except MessageError as exc:
                raise ControllerError(ErrorCode.UNKNOWN_SERVER_ERROR, str(exc)) from None
            else:
                if env.error_code == 0:
                    if controller_only and address is None:
                        self._remember(target)
                    return from_wire(response_cls, env.body)
                last_error = (env.error_code, env.error_message)
                if env.error_code == ErrorCode.NOT_CONTROLLER:
                    self._remember(env.controller_address)
                    if env.controller_address is not None and env.controller_address != target:
                        continue  # go straight to the named controller
                elif not is_retriable(env.error_code):
                    raise ControllerError(env.error_code, env.error_message)
            time.sleep(min(backoff, max(0.0, deadline - time.monotonic())))
            backoff = min(backoff * 2, RETRY_BACKOFF_MAX_S)
        raise ControllerError(
            ErrorCode.REQUEST_TIMED_OUT,
            f"{method} did not succeed in time; last error "
            f"{error_name(last_error[0])}: {last_error[1]}",
        )

    def _with_item_retries(
        self,
        method: str,
        response_cls: type[m.CreateTopicsResponse] | type[m.CreatePartitionsResponse],
        items: list[Item],
        make: Callable[[list[Item]], DataclassInstance],
        key: Callable[[Item], str],
        timeout_s: float | None,
    ) -> list[TopicResult]:
        """Call ``method`` and resend items answered THROTTLING_QUOTA_EXCEEDED."""
        deadline = time.monotonic() + (self.timeout_s if timeout_s is None else timeout_s)
        results: dict[str, TopicResult] = {}
        pending = items
        backoff = RETRY_BACKOFF_MIN_S
        for _ in range(MAX_ATTEMPTS):
            response = self.call(
                method,
                make(pending),
                response_cls,
                timeout_s=max(0.001, deadline - time.monotonic()),
            )
            retry = []
            for item, res in zip(pending, response.topics, strict=False):
                results[key(item)] = res
                if res.error_code == ErrorCode.THROTTLING_QUOTA_EXCEEDED:
                    retry.append(item)
            if not retry or time.monotonic() >= deadline:
                break
            if len(retry) == len(pending):
                time.sleep(backoff)
                backoff = min(backoff * 2, RETRY_BACKOFF_MAX_S)
            pending = retry
        return [results[key(i)] for i in items if key(i) in results]

    # --- admin ----------------------------------------------------------------------------------

    def create_topics(
        self,
        topics: Sequence[NewTopic],
        validate_only: bool = False,
        timeout_s: float | None = None,
    ) -> list[TopicResult]:
        return self._with_item_retries(
            "CreateTopics",
            m.CreateTopicsResponse,
            list(topics),
            lambda items: m.CreateTopicsRequest(items, validate_only),
            lambda t: t.name,
            timeout_s,
        )

    def delete_topics(
        self, names: Sequence[str], topic_ids: Mapping[str, uuid.UUID] | None = None
    ) -> list[TopicResult]:
        """Delete ``names``; those in ``topic_ids`` only while they still have that id."""
        request = m.DeleteTopicsRequest(list(names), None if topic_ids is None else dict(topic_ids))
        return self.call("DeleteTopics", request, m.DeleteTopicsResponse).topics

    def create_partitions(
        self,
        new_totals: Mapping[str, int],
        assignments: Mapping[str, list[list[int]]] | None = None,
        validate_only: bool = False,
    ) -> list[TopicResult]:
        items = [
            m.NewPartitions(name, count, (assignments or {}).get(name))
            for name, count in new_totals.items()
        ]
        return self._with_item_retries(
            "CreatePartitions",
            m.CreatePartitionsResponse,
            items,
            lambda xs: m.CreatePartitionsRequest(xs, validate_only),
            lambda x: x.name,
            None,
        )

    def alter_configs(
        self, configs: Mapping[str, Mapping[str, str]], validate_only: bool = False
    ) -> list[m.ConfigResourceResult]:
        """Legacy AlterConfigs: topic -> its complete set of overrides (others are removed)."""
        resources = [
            m.AlterConfigsResource(RESOURCE_TOPIC, name, dict(values))
            for name, values in configs.items()
        ]
        return self.call(
            "AlterConfigs", m.AlterConfigsRequest(resources, validate_only), m.AlterConfigsResponse
        ).resources

    def incremental_alter_configs(
        self, ops: Mapping[str, Sequence[AlterableConfig]], validate_only: bool = False
    ) -> list[m.ConfigResourceResult]:
        """topic -> operations (SET / DELETE / APPEND / SUBTRACT)."""
        resources = [
            m.IncrementalAlterConfigsResource(RESOURCE_TOPIC, name, list(items))
            for name, items in ops.items()
        ]
        request = m.IncrementalAlterConfigsRequest(resources, validate_only)
        return self.call("IncrementalAlterConfigs", request, m.AlterConfigsResponse).resources

    def describe_configs(self, topics: Sequence[str]) -> dict[str, m.DescribeConfigsResult]:
        request = m.DescribeConfigsRequest(
            [m.DescribeConfigsResource(RESOURCE_TOPIC, name) for name in topics]
        )
        response = self.call("DescribeConfigs", request, m.DescribeConfigsResponse)
        return {r.resource_name: r for r in response.resources}

    def describe_cluster(self) -> ClusterDescription:
        return self.call("DescribeCluster", m.DescribeClusterRequest(), m.ClusterDescription)

    def describe_quorum(self) -> m.QuorumDescription:
        """The active controller's view of the quorum (voters, observers, endpoints)."""
        return self.call("DescribeQuorum", m.DescribeQuorumRequest(), m.QuorumDescription)

    def describe_features(self) -> m.DescribeFeaturesResponse:
        return self.call(
            "DescribeFeatures", m.DescribeFeaturesRequest(), m.DescribeFeaturesResponse
        )

    def update_features(
        self, feature: str, level: int, validate_only: bool = False
    ) -> m.UpdateFeaturesResponse:
        """Raise ``feature`` to ``level`` (the response carries the per-request error)."""
        request = m.UpdateFeaturesRequest(feature, level, validate_only)
        return self.call("UpdateFeatures", request, m.UpdateFeaturesResponse)

    def add_raft_voter(
        self, voter_id: int, raft_address: str, timeout_s: float = 60.0
    ) -> dict[int, str]:
        """Make the observing controller ``voter_id`` a voter; returns the new voter set.
        Waits (up to ``timeout_s``) while it is not caught up or another change commits;
        ControllerError otherwise (DUPLICATE_VOTER, REQUEST_TIMED_OUT, ...)."""
        return self._change_voters(m.AddRaftVoterRequest(voter_id, raft_address), timeout_s)

    def remove_raft_voter(self, voter_id: int, timeout_s: float = 60.0) -> dict[int, str]:
        """Take voter ``voter_id`` out of the quorum; returns the new voter set (see
        :meth:`add_raft_voter` for the waiting and the errors)."""
        return self._change_voters(m.RemoveRaftVoterRequest(voter_id), timeout_s)

    def _change_voters(
        self, request: m.AddRaftVoterRequest | m.RemoveRaftVoterRequest, timeout_s: float
    ) -> dict[int, str]:
        method = "AddRaftVoter" if isinstance(request, m.AddRaftVoterRequest) else "RemoveRaftVoter"
        deadline = time.monotonic() + timeout_s
        backoff = RETRY_BACKOFF_MIN_S
        while True:
            remaining = deadline - time.monotonic()
            attempt_ms = int(1000 * max(0.1, min(remaining, VOTER_CHANGE_ATTEMPT_S)))
            response = self.call(
                method,
                dataclasses.replace(request, timeout_ms=attempt_ms),
                m.RaftVoterResponse,
                timeout_s=max(0.1, remaining),
                extra_attempt_s=attempt_ms / 1000,
            )
            if response.error_code == 0 and response.voters is not None:
                return dict(response.voters)
            if response.error_code != ErrorCode.REQUEST_TIMED_OUT or remaining <= backoff:
                raise ControllerError(response.error_code, response.error_message)
            time.sleep(backoff)
            backoff = min(backoff * 2, RETRY_BACKOFF_MAX_S)

    def quorum_status(self, address: str | None = None) -> dict[str, Any]:
        """MetadataLog.status() of the voter that answers (``address``, else any voter)."""
        return self.call(
            "QuorumStatus", m.QuorumStatusRequest(), m.QuorumStatusResponse, address=address
        ).status

    def elect_leaders(
        self, preferred: bool = True, partitions: Mapping[str, list[int]] | None = None
    ) -> list[m.ElectionResult]:
        election = m.ELECTION_PREFERRED if preferred else m.ELECTION_UNCLEAN
        request = m.ElectLeadersRequest(election, dict(partitions) if partitions else None)
        return self.call("ElectLeaders", request, m.ElectLeadersResponse).results

    def alter_partition_reassignments(
        self,
        targets: Mapping[tuple[str, int], Sequence[int] | None],
        allow_replication_factor_change: bool = True,
        timeout_s: float | None = None,
    ) -> list[m.ReassignablePartitionResult]:
        """Start (or replace) the reassignment of each (topic, partition) to its target replicas;
        a target of None cancels that partition's reassignment. Per-partition error codes.
        Without ``allow_replication_factor_change`` a target of another size than the
        partition's replication factor is refused (INVALID_REPLICATION_FACTOR)."""
        by_topic: dict[str, list[m.ReassignablePartition]] = {}
        for (name, pid), target in targets.items():
            replicas = None if target is None else list(target)
            by_topic.setdefault(name, []).append(m.ReassignablePartition(pid, replicas))
        request = m.AlterPartitionReassignmentsRequest(
            [m.ReassignableTopic(name, parts) for name, parts in by_topic.items()],
            allow_replication_factor_change,
        )
        return self.alter_reassignments(request, timeout_s)

    def alter_reassignments(
        self, request: m.AlterPartitionReassignmentsRequest, timeout_s: float | None = None
    ) -> list[m.ReassignablePartitionResult]:
        """AlterPartitionReassignments as it stands: one result per partition of ``request``,
        in its order (a partition named twice is answered twice)."""
        return self.call(
            "AlterPartitionReassignments",
            request,
            m.AlterPartitionReassignmentsResponse,
            timeout_s=timeout_s,
        ).results

    def list_partition_reassignments(
        self,
        partitions: Mapping[str, Sequence[int]] | None = None,
        timeout_s: float | None = None,
    ) -> list[m.OngoingPartitionReassignment]:
        """Reassignments in progress (of ``partitions``: topic -> ids, or of every partition)."""
        wanted = None if partitions is None else {k: list(v) for k, v in partitions.items()}
        request = m.ListPartitionReassignmentsRequest(wanted)
        return self.call(
            "ListPartitionReassignments",
            request,
            m.ListPartitionReassignmentsResponse,
            timeout_s=timeout_s,
        ).reassignments

    # --- brokers --------------------------------------------------------------------------------

    def fetch_metadata(
        self, from_offset: int, max_wait_ms: int = 0, max_records: int = 50_000
    ) -> FetchMetadataResult:
        wait_ms = max(0, min(max_wait_ms, FETCH_METADATA_MAX_WAIT_MS))
        response: m.FetchMetadataResponse = self.call(
            "FetchMetadata",
            m.FetchMetadataRequest(from_offset, wait_ms, max_records),
            m.FetchMetadataResponse,
            timeout_s=self.timeout_s + wait_ms / 1000,
            extra_attempt_s=wait_ms / 1000,
        )
        snapshot = None
        if response.snapshot is not None:
            snapshot = Snapshot(
                response.snapshot_offset, response.snapshot_epoch, response.snapshot
            )
        records = [LogEntry(o, e, r, c) for o, e, r, c in response.entries]
        return FetchMetadataResult(snapshot, records, response.committed_offset)

    def register_broker(
        self,
        broker_id: int,
        incarnation_id: str,
        listeners: Mapping[str, tuple[str, int]],
        rack: str | None = None,
        cluster_id: str | None = None,
        timeout_s: float | None = None,
        clean_shutdown: bool = False,
    ) -> m.RegisterBrokerResponse:
        endpoints = [m.Endpoint(name, host, port) for name, (host, port) in listeners.items()]
        request = m.RegisterBrokerRequest(
            broker_id,
            incarnation_id,
            endpoints,
            rack,
            cluster_id,
            clean_shutdown,
            features.SUPPORTED.min_level,
            features.SUPPORTED.max_level,
        )
        return self.call("RegisterBroker", request, m.RegisterBrokerResponse, timeout_s=timeout_s)

    def broker_heartbeat(
        self,
        broker_id: int,
        broker_epoch: int,
        current_metadata_offset: int,
        want_fence: bool = False,
        want_shutdown: bool = False,
        timeout_s: float | None = None,
        replica_log_ends: Sequence[m.ReplicaLogEnd] = (),
        offline_log_dirs: Sequence[str] = (),
        offline_replicas: Sequence[m.OfflineReplica] = (),
    ) -> m.BrokerHeartbeatResponse:
        request = m.BrokerHeartbeatRequest(
            broker_id,
            broker_epoch,
            current_metadata_offset,
            want_fence,
            want_shutdown,
            list(replica_log_ends),
            features.SUPPORTED.min_level,
            features.SUPPORTED.max_level,
            list(offline_log_dirs),
            list(offline_replicas),
        )
        return self.call("BrokerHeartbeat", request, m.BrokerHeartbeatResponse, timeout_s=timeout_s)

    def open_broker_session(
        self,
        broker_id: int,
        broker_epoch: int,
        timeout_s: float,
        stop: threading.Event,
        on_attempt: Callable[[BrokerSessionCall], None],
    ) -> BrokerSessionCall:
        """Open this broker's session stream on the active controller (following
        NOT_CONTROLLER) and return it once the controller holds it. Each attempt's call is
        given to ``on_attempt`` first, so that another thread may cancel it; ``stop`` ends the
        attempts. Raises ControllerError when the controller refuses the session
        (STALE_BROKER_EPOCH, ...), or none holds it within ``timeout_s`` or before ``stop``."""
        payload = pack(m.BrokerSessionRequest(broker_id, broker_epoch))
        deadline = time.monotonic() + timeout_s
        backoff = RETRY_BACKOFF_MIN_S
        last = "no attempt made"
        while (remaining := deadline - time.monotonic()) > 0 and not stop.is_set():
            target = self._pick()
            open_session: grpc.UnaryStreamMultiCallable[bytes, bytes] = self._channel(
                target
            ).unary_stream(method_path("BrokerSession"))
            call = open_session(payload)
            session = BrokerSessionCall(call, target)
            on_attempt(session)
            # No per-message deadline in gRPC's iterator: cancel the call if the first
            # message does not come in time.
            timer = threading.Timer(min(remaining, ATTEMPT_TIMEOUT_MAX_S), call.cancel)
            timer.start()
            try:
                env = decode_envelope(next(call))
            except (grpc.RpcError, StopIteration, MessageError) as exc:
                last = f"{target}: {exc}"
                self._forget(target)
                call.cancel()
            else:
                if env.error_code == ErrorCode.NOT_CONTROLLER:
                    self._remember(env.controller_address)
                    call.cancel()
                    last = f"{target}: not the active controller"
                    if env.controller_address not in (None, target):
                        continue
                elif env.error_code != 0:
                    call.cancel()
                    raise ControllerError(env.error_code, env.error_message)
                else:
                    body = from_wire(m.BrokerSessionResponse, env.body)
                    if body.error_code != 0:
                        call.cancel()
                        raise ControllerError(body.error_code, body.error_message)
                    self._remember(target)
                    return session
            finally:
                timer.cancel()
            stop.wait(min(backoff, max(0.0, deadline - time.monotonic())))
            backoff = min(backoff * 2, RETRY_BACKOFF_MAX_S)
        raise ControllerError(ErrorCode.REQUEST_TIMED_OUT, f"BrokerSession: {last}")

    def alter_partition(
        self, broker_id: int, broker_epoch: int, topics: Sequence[AlterPartitionTopic]
    ) -> m.AlterPartitionResponse:
        request = m.AlterPartitionRequest(broker_id, broker_epoch, list(topics))
        return self.call("AlterPartition", request, m.AlterPartitionResponse)

    def allocate_producer_ids(
        self, broker_id: int, broker_epoch: int
    ) -> m.AllocateProducerIdsResponse:
        request = m.AllocateProducerIdsRequest(broker_id, broker_epoch)
        return self.call("AllocateProducerIds", request, m.AllocateProducerIdsResponse)
