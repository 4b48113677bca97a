"""The controller's gRPC surface: method names, message-size limits and the response envelope.

No protoc: every method is a unary call whose request and response are msgpack bytes.
Request = a message dataclass encoded with :func:`metadata.wire.to_wire`. Response = the
envelope map::

    {"error_code": int, "error_message": str|nil,
     "controller_id": int|nil, "controller_address": "host:port"|nil, "body": map|nil}

A non-zero envelope ``error_code`` concerns the whole call (NOT_CONTROLLER with the active
controller's id and address when known, INVALID_REQUEST for an undecodable request,
REQUEST_TIMED_OUT, UNKNOWN_SERVER_ERROR); per-item Kafka error codes live inside ``body``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import msgpack

from metadata import messages as m
from metadata import security_messages as sm
from metadata.wire import MessageError, from_wire, to_wire

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

D = TypeVar("D", bound="DataclassInstance")

SERVICE_NAME = "kraftlog.controller.v1.Controller"

# Bounds on gRPC messages. Requests are small except CreateTopics with manual assignments;
# responses carry up to a snapshot plus a batch of records.
MAX_REQUEST_BYTES = 16 * 1024 * 1024
MAX_RESPONSE_BYTES = 64 * 1024 * 1024
# FetchMetadata: most record bytes per response (the snapshot, if any, comes on top), and the
# longest long-poll a server honours.
FETCH_METADATA_MAX_BYTES = 16 * 1024 * 1024
FETCH_METADATA_MAX_WAIT_MS = 5000

# method name -> (request type, response body type, served only by the active controller)
METHODS: dict[str, tuple[type[DataclassInstance], type[DataclassInstance], bool]] = {
    "RegisterBroker": (m.RegisterBrokerRequest, m.RegisterBrokerResponse, True),
    "BrokerHeartbeat": (m.BrokerHeartbeatRequest, m.BrokerHeartbeatResponse, True),
    "CreateTopics": (m.CreateTopicsRequest, m.CreateTopicsResponse, True),
    "DeleteTopics": (m.DeleteTopicsRequest, m.DeleteTopicsResponse, True),
    "CreatePartitions": (m.CreatePartitionsRequest, m.CreatePartitionsResponse, True),
    "AlterPartition": (m.AlterPartitionRequest, m.AlterPartitionResponse, True),
    "ElectLeaders": (m.ElectLeadersRequest, m.ElectLeadersResponse, True),
    "AlterPartitionReassignments": (
        m.AlterPartitionReassignmentsRequest,
        m.AlterPartitionReassignmentsResponse,
        True,
    ),
    "ListPartitionReassignments": (
        m.ListPartitionReassignmentsRequest,
        m.ListPartitionReassignmentsResponse,
        True,
    ),
    "AllocateProducerIds": (m.AllocateProducerIdsRequest, m.AllocateProducerIdsResponse, True),
    "AlterConfigs": (m.AlterConfigsRequest, m.AlterConfigsResponse, True),
    "IncrementalAlterConfigs": (m.IncrementalAlterConfigsRequest, m.AlterConfigsResponse, True),
    "DescribeConfigs": (m.DescribeConfigsRequest, m.DescribeConfigsResponse, True),
    "DescribeCluster": (m.DescribeClusterRequest, m.ClusterDescription, True),
    "QuorumStatus": (m.QuorumStatusRequest, m.QuorumStatusResponse, False),
    "AddRaftVoter": (m.AddRaftVoterRequest, m.RaftVoterResponse, True),
    "RemoveRaftVoter": (m.RemoveRaftVoterRequest, m.RaftVoterResponse, True),
    "UpdateFeatures": (m.UpdateFeaturesRequest, m.UpdateFeaturesResponse, True),
    "DescribeFeatures": (m.DescribeFeaturesRequest, m.DescribeFeaturesResponse, True),
    "DescribeQuorum": (m.DescribeQuorumRequest, m.QuorumDescription, True),
    "FetchMetadata": (m.FetchMetadataRequest, m.FetchMetadataResponse, False),
    # Security state (metadata.security_control, docs/security.md).
    "AlterUserScramCredentials": (
        sm.AlterUserScramCredentialsRequest,
        sm.AlterUserScramCredentialsResponse,
        True,
    ),
    "DescribeUserScramCredentials": (
        sm.DescribeUserScramCredentialsRequest,
        sm.DescribeUserScramCredentialsResponse,
        True,
    ),
    "CreateAcls": (sm.CreateAclsRequest, sm.CreateAclsResponse, True),
    "DescribeAcls": (sm.DescribeAclsRequest, sm.DescribeAclsResponse, True),
    "DeleteAcls": (sm.DeleteAclsRequest, sm.DeleteAclsResponse, True),
    "AlterClientQuotas": (sm.AlterClientQuotasRequest, sm.AlterClientQuotasResponse, True),
    "DescribeClientQuotas": (sm.DescribeClientQuotasRequest, sm.DescribeClientQuotasResponse, True),
}


def method_path(name: str) -> str:
    return f"/{SERVICE_NAME}/{name}"


@dataclass(frozen=True, slots=True)
class Envelope:
    error_code: int = 0
    error_message: str | None = None
    controller_id: int | None = None
    controller_address: str | None = None
    body: Any = None


def pack(obj: Any) -> bytes:
    return msgpack.packb(to_wire(obj), use_bin_type=True)


def unpack(data: bytes) -> Any:
    """msgpack bytes -> structure; MessageError on garbage."""
    try:
        return msgpack.unpackb(data, raw=False, strict_map_key=False)
    except Exception as exc:  # msgpack raises several unrelated types on garbage
        raise MessageError(f"not a msgpack message: {exc}") from None


def decode_request(cls: type[D], data: bytes) -> D:
    return from_wire(cls, unpack(data))


def encode_envelope(env: Envelope) -> bytes:
    return pack(env)


def decode_envelope(data: bytes) -> Envelope:
    return from_wire(Envelope, unpack(data))
