"""kraftlog's native Kafka client: Producer, Consumer and Admin (see docs/client.md)."""

from common.topic_partition import TopicPartition
from data_plane.client.admin import Admin, ClusterDescription, NewTopic, TopicOperationError
from data_plane.client.config import AdminConfig, ConsumerConfig, ProducerConfig
from data_plane.client.consumer import Consumer
from data_plane.client.errors import (
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
from data_plane.client.fetcher import OffsetOutOfRangeError
from data_plane.client.futures import FutureRecordMetadata
from data_plane.client.group_admin import GroupDescription, GroupListing, MemberDescription
from data_plane.client.group_client import ConsumerRebalanceListener
from data_plane.client.offsets import OffsetAndTimestamp
from data_plane.client.partitioner import DefaultPartitioner, murmur2, partition_for_key
from data_plane.client.producer import Producer, ProducerInterceptor
from data_plane.client.record_types import ConsumerRecord, ProducerRecord, RecordMetadata
from data_plane.client.transaction_manager import ConsumerGroupMetadata, PreparedTxnState

__all__ = [
    "Admin",
    "AdminConfig",
    "ClientClosedError",
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
