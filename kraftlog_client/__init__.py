"""kraftlog's Python client: a Kafka client (Producer, Consumer with groups, Admin) that speaks
the Kafka wire protocol to any Kafka-compatible cluster (see docs/client.md).

It depends only on the shared ``common`` package (the protocol codec, the RecordBatch format,
error codes, the client side of TLS and SASL), never on kraftlog's broker or controller code,
so it can be imported and shipped on its own: ``from kraftlog_client import Producer``.
"""

from common.topic_partition import TopicPartition
from kraftlog_client.admin import Admin, ClusterDescription, NewTopic, TopicOperationError
from kraftlog_client.config import AdminConfig, ConsumerConfig, ProducerConfig
from kraftlog_client.consumer import Consumer
from kraftlog_client.errors import (
    ClientClosedError,
    CommitFailedError,
    IllegalStateError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    NoOffsetForPartitionError,
    RecordTooLargeError,
    UnsupportedFeatureError,
)
from kraftlog_client.fetcher import OffsetOutOfRangeError
from kraftlog_client.futures import FutureRecordMetadata
from kraftlog_client.group_admin import GroupDescription, GroupListing, MemberDescription
from kraftlog_client.group_client import ConsumerRebalanceListener
from kraftlog_client.offsets import OffsetAndTimestamp
from kraftlog_client.partitioner import DefaultPartitioner, murmur2, partition_for_key
from kraftlog_client.producer import Producer, ProducerInterceptor
from kraftlog_client.quota_admin import (
    ClientQuotaAlteration,
    ClientQuotaEntity,
    ClientQuotaFilterComponent,
    ClientQuotaOp,
)
from kraftlog_client.reassignment_admin import PartitionReassignment
from kraftlog_client.record_types import ConsumerRecord, ProducerRecord, RecordMetadata
from kraftlog_client.transaction_manager import ConsumerGroupMetadata, PreparedTxnState

__all__ = [
    "Admin",
    "AdminConfig",
    "ClientClosedError",
    "ClientQuotaAlteration",
    "ClientQuotaEntity",
    "ClientQuotaFilterComponent",
    "ClientQuotaOp",
    "ClusterDescription",
    "CommitFailedError",
    "Consumer",
    "ConsumerConfig",
    "ConsumerGroupMetadata",
    "ConsumerRebalanceListener",
    "ConsumerRecord",
    "DefaultPartitioner",
    "FutureRecordMetadata",
    "GroupDescription",
    "GroupListing",
    "IllegalStateError",
    "KafkaConnectionError",
    "KafkaError",
    "KafkaTimeoutError",
    "MemberDescription",
    "NewTopic",
    "NoOffsetForPartitionError",
    "OffsetAndTimestamp",
    "OffsetOutOfRangeError",
    "PartitionReassignment",
    "PreparedTxnState",
    "Producer",
    "ProducerConfig",
    "ProducerInterceptor",
    "ProducerRecord",
    "RecordMetadata",
    "RecordTooLargeError",
    "TopicOperationError",
    "TopicPartition",
    "UnsupportedFeatureError",
    "murmur2",
    "partition_for_key",
]
