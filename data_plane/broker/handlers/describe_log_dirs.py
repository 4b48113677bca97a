"""DescribeLogDirs (35): every log directory of this broker with the size
of each partition log in it (``kafka-log-dirs.sh --describe``). An offline directory (it
failed: storage/log_dir_failure.py) answers KAFKA_STORAGE_ERROR and no partitions; v4 adds each
directory's total and usable bytes (-1 when offline). ``topics`` null means every partition.
The request needs Describe on the cluster (:func:`authorize`; refused: v3+ answer
CLUSTER_AUTHORIZATION_FAILED, older versions an empty list, as Kafka).
"""

from __future__ import annotations

from collections.abc import Callable

from common.error_codes import ErrorCode
from common.protocol.messages.describe_log_dirs import (
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
    DescribeLogDirsResponsePartition,
    DescribeLogDirsResponseResult,
    DescribeLogDirsResponseTopic,
)
from common.security.acl import AclOperation, ResourceType
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.security.request_authz import CLUSTER_DENIED, RequestAuthorizer, Session, Verdict


def handle(apis: KafkaApis, request: Request) -> DescribeLogDirsResponse:
    body = request.body
    if not isinstance(body, DescribeLogDirsRequest):
        raise TypeError(f"DescribeLogDirs handler given {type(body).__name__}")
    wanted: Callable[[str, int], bool] | None = None
    if body.topics is not None:
        selected = {(t.topic, p) for t in body.topics for p in t.partitions}

        def wanted(topic: str, partition: int) -> bool:
            return (topic, partition) in selected

    results = []
    for d in apis.replica_manager.log_manager.describe_dirs(wanted):
        by_topic: dict[str, list[DescribeLogDirsResponsePartition]] = {}
        for log in d.logs:
            by_topic.setdefault(log.topic, []).append(
                DescribeLogDirsResponsePartition(
                    partition_index=log.partition,
                    partition_size=log.size_bytes,
                    offset_lag=log.offset_lag,
                    is_future_key=False,
                )
            )
        results.append(
            DescribeLogDirsResponseResult(
                error_code=ErrorCode.NO_ERROR
                if d.offline_reason is None
                else ErrorCode.KAFKA_STORAGE_ERROR,
                log_dir=d.path,
                topics=[
                    DescribeLogDirsResponseTopic(
                        name=name, partitions=sorted(parts, key=lambda p: p.partition_index)
                    )
                    for name, parts in sorted(by_topic.items())
                ],
                total_bytes=d.total_bytes,
                usable_bytes=d.usable_bytes,
            )
        )
    return DescribeLogDirsResponse(
        throttle_time_ms=0, error_code=ErrorCode.NO_ERROR, results=results
    )


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: Body) -> Verdict:
    """Describe on the cluster (refused: no log dirs, with CLUSTER_AUTHORIZATION_FAILED from
    v3, which has the top-level error)."""
    if not isinstance(body, DescribeLogDirsRequest):
        raise TypeError(f"DescribeLogDirs rule given {type(body).__name__}")
    if authz.cluster(s, AclOperation.DESCRIBE):
        return Verdict(body)
    error = CLUSTER_DENIED if version >= 3 else ErrorCode.NO_ERROR
    refusal = DescribeLogDirsResponse(throttle_time_ms=0, error_code=error, results=[])
    return Verdict.refused(body, refusal, ResourceType.CLUSTER)
