from __future__ import annotations

from harness import Harness

from common.error_codes import ErrorCode
from metadata.controller_config import ControllerConfig
from metadata.messages import (
    AllocateProducerIdsRequest,
    AlterPartitionItem,
    AlterPartitionRequest,
    AlterPartitionTopic,
    ElectLeadersRequest,
    Endpoint,
    RegisterBrokerRequest,
)

SESSION_MS = ControllerConfig().broker_session_timeout_ms


def three() -> Harness:
    h = Harness(ControllerConfig(auto_leader_rebalance_enable=False))
    h.add_brokers([1, 2, 3])
    return h


def test_registration_starts_fenced_and_unfences_when_caught_up() -> None:
    h = Harness()
    reg = h.register(1)
    assert reg.error_code == 0 and reg.broker_epoch >= 0
    b = h.image.brokers[1]
    assert b.fenced and b.registered_offset == len(h.entries) - 1
    behind = h.heartbeat(1, offset=b.registered_offset - 1)
    assert behind.is_fenced and not behind.is_caught_up
    assert h.image.brokers[1].fenced
    caught_up = h.heartbeat(1, offset=b.registered_offset)
    assert not caught_up.is_fenced
    assert not h.image.brokers[1].fenced


def test_registration_is_idempotent_per_incarnation_and_epochs_grow() -> None:
    h = Harness()
    first = h.register(1, "a")
    again = h.register(1, "a")
    assert again.broker_epoch == first.broker_epoch
    h.heartbeat(1)
    dup = h.register(1, "b")  # live session, other incarnation
    assert dup.error_code == ErrorCode.DUPLICATE_BROKER_REGISTRATION
    h.tick(h.now + SESSION_MS + 1)  # session expires, broker fenced
    assert h.image.brokers[1].fenced
    second = h.register(1, "b")
    assert second.error_code == 0 and second.broker_epoch > first.broker_epoch


def test_bad_registrations() -> None:
    h = Harness()
    ep = [Endpoint("PLAINTEXT", "h", 1)]
    cases = [
        RegisterBrokerRequest(1, "i", ep, None, "other-cluster"),
        RegisterBrokerRequest(-1, "i", ep),
        RegisterBrokerRequest(1, "", ep),
        RegisterBrokerRequest(1, "i", []),
        RegisterBrokerRequest(1, "i", [Endpoint("PLAINTEXT", "h", 70000)]),
    ]
    before = len(h.entries)
    codes = [h.commit(h.c.register_broker(r, 0)).error_code for r in cases]
    assert codes == [ErrorCode.INCONSISTENT_CLUSTER_ID] + [ErrorCode.INVALID_REGISTRATION] * 4
    assert len(h.entries) == before


def test_heartbeat_errors() -> None:
    h = three()
    assert h.heartbeat(1, epoch=12345).error_code == ErrorCode.STALE_BROKER_EPOCH
    from metadata.messages import BrokerHeartbeatRequest

    resp = h.commit(h.c.broker_heartbeat(BrokerHeartbeatRequest(9, 0, 0), 0))
    assert resp.error_code == ErrorCode.BROKER_ID_NOT_REGISTERED


def test_fencing_after_session_timeout_moves_leadership_to_live_isr() -> None:
    h = three()
    h.create("t", 6, 3)
    led_by_1 = [pid for pid, p in h.image.topic("t").partitions.items() if p.leader == 1]
    assert led_by_1
    h.now = 1000
    h.heartbeat(2)
    h.heartbeat(3)
    h.tick(SESSION_MS - 1)
    assert not h.image.brokers[1].fenced
    h.now = SESSION_MS
    h.heartbeat(2)
    h.heartbeat(3)
    h.tick(1000 + SESSION_MS)
    assert h.image.brokers[1].fenced
    assert not h.image.brokers[2].fenced and not h.image.brokers[3].fenced
    for pid, p in h.image.topic("t").partitions.items():
        assert p.leader in (2, 3)
        assert 1 not in p.isr
        # first live ISR member in replica order
        assert p.leader == next(r for r in p.replicas if r != 1)
        if pid in led_by_1:
            assert p.leader_epoch == 1
        else:
            assert p.leader_epoch == 0
        assert p.partition_epoch == 1


def test_last_isr_member_keeps_isr_and_leaves_partition_leaderless() -> None:
    h = three()
    h.create("solo", 1, 1, replica_assignment=None)
    p = h.image.partition("solo", 0)
    lone = p.leader
    others = [b for b in (1, 2, 3) if b != lone]
    h.now = SESSION_MS
    for b in others:
        h.heartbeat(b)
    h.tick(SESSION_MS + 1)
    p = h.image.partition("solo", 0)
    assert (p.leader, p.isr, p.leader_epoch) == (-1, (lone,), 1)
    # It comes back: caught up, unfenced, elected again.
    h.heartbeat(lone)
    p = h.image.partition("solo", 0)
    assert (p.leader, p.isr, p.leader_epoch) == (lone, (lone,), 2)


def test_unclean_election_only_where_enabled() -> None:
    for unclean in (False, True):
        h = three()
        configs = {"unclean.leader.election.enable": "true"} if unclean else {}
        h.create("u", -1, -1, replica_assignment={0: [1, 2]}, configs=configs)
        topic = h.image.topic("u")
        item = AlterPartitionItem(0, 0, [1], 0)
        res = h.commit(
            h.c.alter_partition(
                AlterPartitionRequest(
                    1, h.image.brokers[1].epoch, [AlterPartitionTopic("u", [item], topic.topic_id)]
                )
            )
        )
        assert res.partitions[0].error_code == 0
        h.now = SESSION_MS
        h.heartbeat(2)
        h.heartbeat(3)
        h.tick(SESSION_MS + 1)  # broker 1, the only ISR member, is fenced
        p = h.image.partition("u", 0)
        if unclean:
            assert (p.leader, p.isr) == (2, (2,))
        else:
            assert (p.leader, p.isr) == (-1, (1,))


def test_controlled_shutdown_moves_leadership_first() -> None:
    h = three()
    h.create("t", 6, 3)
    first = h.heartbeat(1, want_shutdown=True)
    assert not first.should_shut_down
    assert h.image.brokers[1].in_controlled_shutdown and not h.image.brokers[1].fenced
    for p in h.image.topic("t").partitions.values():
        assert p.leader != 1 and 1 not in p.isr
    # Not yet caught up with the records that moved leadership away.
    early = h.heartbeat(1, offset=0, want_shutdown=True)
    assert not early.should_shut_down
    done = h.heartbeat(1, want_shutdown=True)
    assert done.should_shut_down and h.image.brokers[1].fenced
    # A broker in controlled shutdown gets no new replicas.
    assert h.create("after", 1, 3).error_code == ErrorCode.INVALID_REPLICATION_FACTOR


def test_reregistration_after_restart_gets_new_epoch_and_leaves_isr() -> None:
    h = three()
    h.create("t", 3, 3)
    old_epoch = h.image.brokers[2].epoch
    h.now = SESSION_MS
    h.heartbeat(1)
    h.heartbeat(3)
    h.tick(SESSION_MS + 1)
    new = h.register(2, "restarted")
    assert new.broker_epoch > old_epoch
    assert h.image.brokers[2].fenced
    h.heartbeat(2)
    assert not h.image.brokers[2].fenced
    assert all(2 not in p.isr for p in h.image.topic("t").partitions.values())


def _alter(h: Harness, broker: int, item: AlterPartitionItem, epoch: int | None = None):
    epoch = h.image.brokers[broker].epoch if epoch is None else epoch
    req = AlterPartitionRequest(broker, epoch, [AlterPartitionTopic("t", [item])])
    return h.commit(h.c.alter_partition(req))


def test_alter_partition_checks() -> None:
    h = three()
    h.create("t", -1, -1, replica_assignment={0: [1, 2, 3]})
    ok = _alter(h, 1, AlterPartitionItem(0, 0, [1, 2], 0))
    r = ok.partitions[0]
    assert (r.error_code, r.isr, r.partition_epoch, r.leader_epoch) == (0, [1, 2], 1, 0)
    assert h.image.partition("t", 0).isr == (1, 2)
    cases = [
        (2, AlterPartitionItem(0, 0, [1, 2], 1), ErrorCode.NOT_LEADER_OR_FOLLOWER),
        (1, AlterPartitionItem(0, -1, [1, 2], 1), ErrorCode.FENCED_LEADER_EPOCH),
        (1, AlterPartitionItem(0, 5, [1, 2], 1), ErrorCode.UNKNOWN_LEADER_EPOCH),
        (1, AlterPartitionItem(0, 0, [1, 2, 3], 0), ErrorCode.INVALID_UPDATE_VERSION),
        (1, AlterPartitionItem(0, 0, [2, 3], 1), ErrorCode.INVALID_REQUEST),
        (1, AlterPartitionItem(0, 0, [1, 4], 1), ErrorCode.INVALID_REQUEST),
        (1, AlterPartitionItem(0, 0, [], 1), ErrorCode.INVALID_REQUEST),
        (1, AlterPartitionItem(0, 0, [1, 1], 1), ErrorCode.INVALID_REQUEST),
        (1, AlterPartitionItem(7, 0, [1], 1), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    ]
    for broker, item, code in cases:
        res = _alter(h, broker, item)
        assert res.partitions[0].error_code == code, (item, res)
    assert _alter(h, 1, AlterPartitionItem(0, 0, [1], 1), epoch=999).error_code == (
        ErrorCode.STALE_BROKER_EPOCH
    )
    assert h.image.partition("t", 0).isr == (1, 2)
    # Adding a fenced broker back is refused; an unfenced one is fine.
    h.now = SESSION_MS
    h.heartbeat(1)
    h.heartbeat(2)
    h.tick(SESSION_MS + 1)
    res = _alter(h, 1, AlterPartitionItem(0, 0, [1, 2, 3], 1))
    assert res.partitions[0].error_code == ErrorCode.INELIGIBLE_REPLICA
    h.heartbeat(3)
    res = _alter(h, 1, AlterPartitionItem(0, 0, [1, 2, 3], 1))
    assert res.partitions[0].error_code == 0 and h.image.partition("t", 0).isr == (1, 2, 3)


def test_preferred_leader_election() -> None:
    h = three()
    h.create("t", -1, -1, replica_assignment={0: [1, 2, 3], 1: [2, 3, 1]})
    h.now = SESSION_MS
    h.heartbeat(2)
    h.heartbeat(3)
    h.tick(SESSION_MS + 1)
    assert h.image.partition("t", 0).leader == 2
    h.register(1, "again")
    h.heartbeat(1)
    # back in the ISR (the leader asks), then preferred election moves leadership back
    p = h.image.partition("t", 0)
    req = AlterPartitionRequest(
        2,
        h.image.brokers[2].epoch,
        [
            AlterPartitionTopic(
                "t", [AlterPartitionItem(0, p.leader_epoch, [2, 3, 1], p.partition_epoch)]
            )
        ],
    )
    assert h.commit(h.c.alter_partition(req)).partitions[0].error_code == 0
    res = h.commit(h.c.elect_leaders(ElectLeadersRequest(0, {"t": [0, 1, 9]})))
    codes = {(r.name, r.partition_index): r.error_code for r in res.results}
    assert codes == {
        ("t", 0): 0,
        ("t", 1): ErrorCode.ELECTION_NOT_NEEDED,
        ("t", 9): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
    assert h.image.partition("t", 0).leader == 1


def test_automatic_rebalance_on_tick() -> None:
    h = Harness(ControllerConfig(leader_imbalance_check_interval_seconds=1))
    h.add_brokers([1, 2])
    h.create("t", -1, -1, replica_assignment={0: [1, 2]})
    h.now = SESSION_MS
    h.heartbeat(2)
    h.tick(SESSION_MS)  # broker 1 fenced
    assert h.image.partition("t", 0).leader == 2
    h.register(1, "b")
    h.heartbeat(1)
    p = h.image.partition("t", 0)
    item = AlterPartitionItem(0, p.leader_epoch, [2, 1], p.partition_epoch)
    req = AlterPartitionRequest(2, h.image.brokers[2].epoch, [AlterPartitionTopic("t", [item])])
    h.commit(h.c.alter_partition(req))
    h.now = SESSION_MS + 2000
    h.heartbeat(1)
    h.heartbeat(2)
    h.tick(SESSION_MS + 2000)
    assert h.image.partition("t", 0).leader == 1


def test_new_controller_gives_grace() -> None:
    h = three()
    h.c.activate(2, 50 * SESSION_MS)
    h.tick(50 * SESSION_MS + SESSION_MS - 1)
    assert not any(b.fenced for b in h.image.brokers.values())
    h.tick(51 * SESSION_MS)
    assert all(b.fenced for b in h.image.brokers.values())


def test_producer_id_blocks() -> None:
    h = three()
    a = h.commit(h.c.allocate_producer_ids(AllocateProducerIdsRequest(1, h.image.brokers[1].epoch)))
    b = h.commit(h.c.allocate_producer_ids(AllocateProducerIdsRequest(2, h.image.brokers[2].epoch)))
    assert (a.producer_id_start, a.producer_id_len) == (0, 1000)
    assert b.producer_id_start == 1000
    assert h.image.next_producer_id == 2000
    stale = h.commit(h.c.allocate_producer_ids(AllocateProducerIdsRequest(1, 424242)))
    assert stale.error_code == ErrorCode.STALE_BROKER_EPOCH


def test_fencing_too_big_for_one_append_is_finished_by_cleanup() -> None:
    h = Harness(ControllerConfig(auto_leader_rebalance_enable=False), max_append_bytes=2000)
    h.add_brokers([1, 2, 3])
    for i in range(6):
        assert h.create(f"t{i}", 20, 3).error_code == 0
    h.now = SESSION_MS
    h.heartbeat(2)
    h.heartbeat(3)
    first = h.c.tick(SESSION_MS + 1)
    assert first is not None and sum(len(e) for e in first.encoded) <= 2000
    h.commit(first)
    assert h.image.brokers[1].fenced
    assert any(p.leader == 1 for _, _, p in h.image.iter_partitions())  # not done yet
    h.tick(SESSION_MS + 2)
    for _ in range(20):
        result = h.c.tick(SESSION_MS + 3)
        if result is None:
            break
        h.commit(result)
    for _, _, p in h.image.iter_partitions():
        assert p.leader in (2, 3) and 1 not in p.isr


def test_activation_finishes_half_done_fencing() -> None:
    h = three()
    h.create("t", 3, 3)
    # A previous controller wrote the fence record but crashed before the elections.
    from metadata.records import BrokerRegistrationChangeRecord
    from metadata.result import ControllerResult

    h.commit(
        ControllerResult.of(
            [BrokerRegistrationChangeRecord(1, h.image.brokers[1].epoch, True, None)], None
        )
    )
    assert any(p.leader == 1 for _, _, p in h.image.iter_partitions())
    h.c.activate(2, h.now)
    h.tick(h.now + 1)
    assert all(p.leader != 1 and 1 not in p.isr for _, _, p in h.image.iter_partitions())


def test_fences_and_unfences_are_logged_with_the_leaders_they_move(caplog) -> None:
    import logging

    caplog.set_level(logging.INFO, logger="metadata.elections")
    h = three()
    h.create("t", 6, 3)
    led_by_1 = sorted(pid for pid, p in h.image.topic("t").partitions.items() if p.leader == 1)
    caplog.clear()
    h.now = SESSION_MS
    h.heartbeat(2)
    h.heartbeat(3)
    h.tick(1000 + SESSION_MS)
    (line,) = [r.getMessage() for r in caplog.records if r.getMessage().startswith("fencing")]
    assert line.startswith(
        f"fencing broker 1 (no heartbeat within broker.session.timeout.ms): "
        f"{len(led_by_1)} leader election(s): t-{led_by_1[0]} 1->"
    )
    assert f"{6 - len(led_by_1)} other partition change(s) (ISR or replicas, same leader)" in line


def test_leader_moves_line_names_partitions_and_counts_the_rest(caplog) -> None:
    import logging

    from metadata.election_log import LOGGED_PARTITIONS, log_leader_moves
    from metadata.records import NO_LEADER_CHANGE, PartitionChangeRecord

    h = three()
    h.create("t", LOGGED_PARTITIONS + 3, 3)
    topic = h.image.topic("t")
    changes = [
        PartitionChangeRecord(pid, topic.topic_id, None, reg.replicas[1], None)
        for pid, reg in sorted(topic.partitions.items())
    ]
    changes.append(PartitionChangeRecord(0, topic.topic_id, (1, 2), NO_LEADER_CHANGE, None))
    caplog.set_level(logging.INFO, logger="metadata.elections")
    log_leader_moves(h.image, "preferred-leader rebalancing", changes)
    (line,) = [r.getMessage() for r in caplog.records]
    reg0 = topic.partitions[0]
    assert line.startswith(
        f"preferred-leader rebalancing: {LOGGED_PARTITIONS + 3} leader election(s): "
        f"t-0 {reg0.leader}->{reg0.replicas[1]}, "
    )
    assert line.endswith(" and 3 more, 1 other partition change(s) (ISR or replicas, same leader)")
