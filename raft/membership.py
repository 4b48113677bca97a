"""The controller quorum's voter set and its changes in the Raft log (sans-IO).

Membership lives in the Raft log, as Raft's single-server changes (Ongaro's thesis, 4.1): a
change adds or removes one voter and is an entry of pysyncobj's MEMBERSHIP command type. Every
node uses the voter set of the *latest* membership entry in its log, committed or not, from
the moment the entry is appended; a leader proposes a new change only once the previous one
has committed, so two voter sets in force at once always share a majority.

Encoding of a membership command (the journal stores the type byte followed by the body)::

    0x02 | pickle([op, address, address, node_id, [[voter id, voter address], ...]])

``op`` is ``"add"`` or ``"rem"``; ``address`` twice because pysyncobj reads element 1 as the
node's id and element 2 as the node; the last element is the whole voter set after the change,
so the latest entry alone says who the voters are, whatever set a reader started from. Bodies
are read with an unpickler that admits no classes (lists, strings and integers only).

:class:`MembershipHistory` follows one node's journal: a *base* voter set (from the state dump,
or ``controller.quorum.voters`` for a log that never had a membership entry) and the
membership entries the journal still holds, in index order. Truncating the journal's tail
drops the changes there; compacting its head folds them into the base.

Thread-safety: none; owned by the Raft tick thread (the journal calls it there).
"""

from __future__ import annotations

import io
import logging
import pickle
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger(__name__)

# pysyncobj's _COMMAND_TYPE.MEMBERSHIP: the first byte of a membership entry's command.
MEMBERSHIP_COMMAND_TYPE = 2
_MEMBERSHIP_PREFIX = bytes([MEMBERSHIP_COMMAND_TYPE])
OP_ADD = "add"
OP_REMOVE = "rem"
# Longest membership body accepted (a set of at most MAX_VOTERS host:port strings).
MAX_MEMBERSHIP_BODY_BYTES = 64 * 1024

VoterSet = Mapping[int, str]  # voter id -> host:port of its Raft listener


class MembershipError(ValueError):
    """A membership command that does not have the layout above."""


class _PlainUnpickler(pickle.Unpickler):
    """Loads built-in containers and scalars only: a membership body names no class."""

    def find_class(self, module: str, name: str) -> Any:
        raise MembershipError(f"membership body names a class ({module}.{name})")


@dataclass(frozen=True, slots=True)
class MembershipChange:
    """One voter added or removed, and the voter set that results."""

    op: str
    node_id: int
    address: str
    voters: tuple[tuple[int, str], ...]

    @classmethod
    def of(cls, op: str, node_id: int, address: str, voters: VoterSet) -> MembershipChange:
        return cls(op, node_id, address, tuple(sorted(voters.items())))

    @property
    def voter_set(self) -> dict[int, str]:
        return dict(self.voters)

    def body(self) -> bytes:
        """The command without its type byte (pysyncobj's ``_applyCommand`` prepends it)."""
        return pickle.dumps(
            [self.op, self.address, self.address, self.node_id, [list(v) for v in self.voters]],
            protocol=4,
        )

    def command(self) -> bytes:
        return _MEMBERSHIP_PREFIX + self.body()

    @classmethod
    def decode(cls, command: bytes) -> MembershipChange | None:
        """The change a journal command carries; None for a command of another type.
        Raises MembershipError for a membership command that is malformed."""
        if command[:1] != _MEMBERSHIP_PREFIX:
            return None
        body = command[1:]
        if len(body) > MAX_MEMBERSHIP_BODY_BYTES:
            raise MembershipError(f"membership body of {len(body)} bytes")
        try:
            fields = _PlainUnpickler(io.BytesIO(body)).load()
        except MembershipError:
            raise
        except Exception as e:  # pickle raises many unrelated types on garbage
            raise MembershipError(f"unreadable membership body: {e!r}") from None
        if (
            not isinstance(fields, list)
            or len(fields) != 5
            or fields[0] not in (OP_ADD, OP_REMOVE)
            or not isinstance(fields[1], str)
            or type(fields[3]) is not int
            or not isinstance(fields[4], list)
        ):
            raise MembershipError(f"not a kraftlog membership body: {fields!r}")
        voters = []
        for item in fields[4]:
            if (
                not isinstance(item, list)
                or len(item) != 2
                or type(item[0]) is not int
                or not isinstance(item[1], str)
            ):
                raise MembershipError(f"bad voter {item!r} in a membership body")
            voters.append((item[0], item[1]))
        return cls(fields[0], fields[3], fields[1], tuple(sorted(voters)))


def is_voter(voters: VoterSet, node_id: int, address: str) -> bool:
    """Whether ``node_id`` at Raft ``address`` is one of ``voters``."""
    return voters.get(node_id) == address


def voters_text(voters: VoterSet) -> str:
    """``id@host:port,...`` as in controller.quorum.voters."""
    return ",".join(f"{i}@{a}" for i, a in sorted(voters.items()))


class MembershipHistory:
    """The voter set in force on one node, following its journal (see the module docstring).

    ``version`` grows whenever :meth:`current` may have changed, so the tick thread can
    reconcile pysyncobj's peer set only when needed."""

    def __init__(self, base: VoterSet) -> None:
        self._base: dict[int, str] = dict(base)
        self._changes: list[tuple[int, dict[int, str]]] = []  # (raft index, voters after)
        self.version = 0

    def current(self) -> dict[int, str]:
        return dict(self._changes[-1][1] if self._changes else self._base)

    def as_of(self, raft_index: int) -> dict[int, str]:
        """The voter set after the entries up to and including ``raft_index``."""
        voters = self._base
        for idx, after in self._changes:
            if idx > raft_index:
                break
            voters = after
        return dict(voters)

    @property
    def latest_change_index(self) -> int | None:
        """Raft index of the newest membership entry in the journal (None: only the base)."""
        return self._changes[-1][0] if self._changes else None

    def on_append(self, command: bytes, raft_index: int) -> None:
        try:
            change = MembershipChange.decode(command)
        except MembershipError as e:
            # Every node reads the same bytes the same way, so ignoring it keeps them agreeing.
            logger.error("raft: ignoring membership entry %d: %s", raft_index, e)
            return
        if change is None:
            return
        if self._changes and raft_index <= self._changes[-1][0]:
            self.truncate_from(raft_index)
        self._changes.append((raft_index, change.voter_set))
        self.version += 1

    def truncate_from(self, raft_index: int) -> None:
        """The journal dropped every entry from ``raft_index`` on."""
        kept = [c for c in self._changes if c[0] < raft_index]
        if len(kept) != len(self._changes):
            self._changes = kept
            self.version += 1

    def compact_before(self, raft_index: int) -> None:
        """The journal dropped every entry before ``raft_index``: fold their changes."""
        while self._changes and self._changes[0][0] < raft_index:
            self._base = self._changes.pop(0)[1]

    def clear(self) -> None:
        """The journal was emptied (a dump is being installed; :meth:`set_base` follows)."""
        if self._changes:
            self._changes = []
            self.version += 1

    def set_base(self, voters: VoterSet, raft_index: int) -> None:
        """A dump covering the entries up to ``raft_index`` was loaded with ``voters``."""
        self._base = dict(voters)
        self._changes = [c for c in self._changes if c[0] > raft_index]
        self.version += 1
