"""One TCP connection to one broker: pipelined requests matched by correlation id.

Lifecycle (``state``): the sans-IO :class:`~kraftlog_client.connection_state.ConnectionState`
(CONNECTING, [TLS_HANDSHAKING], NEGOTIATING, [AUTHENTICATING], READY, CLOSED) keeps the state,
the negotiated versions, the in-flight requests and the deadlines; this class owns the socket,
TLS and SASL exchanges and turns socket events into its inputs.

The bracketed states happen only with a :class:`ClientSecurity` (``security.protocol`` SSL,
SASL_PLAINTEXT or SASL_SSL). TLS: after the TCP connect the socket is wrapped (server name =
the broker's host, so ``ssl.endpoint.identification.algorithm=https`` checks it) and the
handshake is driven by the selector's read/write events (:attr:`has_pending_writes` is true
while OpenSSL wants to write), bounded by the connect timeout. SASL follows Kafka's clients:
ApiVersions first (allowed before authentication), then SaslHandshake v1 and the mechanism's
tokens in SaslAuthenticate; only then is the connection READY for other APIs. A refused
mechanism or credential, or an untrusted broker certificate, closes the connection with
:class:`AuthenticationFailedError` (not retriable; :attr:`BrokerConnection.auth_failed`).

On connect the client sends ApiVersions v2 (the highest non-flexible version); a broker that
does not know it answers in the v0 format with UNSUPPORTED_VERSION and its full API list,
which is all we need. For every API the client uses, the connection then picks the highest
version both sides support (:data:`CLIENT_VERSIONS`); an API with no common version is
reported when first used.

Requests are written in order and may be pipelined (up to the caller's in-flight bound); Kafka
answers in order on a connection, so responses are matched to the oldest in-flight request
and a correlation id mismatch closes the connection. A request that expects no answer (Produce
with acks=0) completes as soon as it is fully written.

Not thread-safe: a connection belongs to one :class:`NetworkClient`, used by one thread.
"""

from __future__ import annotations

import errno
import socket
import ssl
from collections import deque
from collections.abc import Callable
from typing import Any

from common.error_codes import ErrorCode
from common.protocol.api_keys import ApiKey
from common.protocol.codec import decode_response, encode_request
from common.protocol.errors import ProtocolError
from common.protocol.framing import FrameReader
from common.protocol.message_base import Message
from common.protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from common.protocol.recv import SCRATCH_BYTES, recv_chunk
from common.security.errors import IllegalSaslStateError, SaslAuthenticationError
from common.security.tls_socket import MAX_JOIN_BYTES, MAX_RECV_BYTES, TlsSocket
from common.version import KRAFTLOG_VERSION
from kraftlog_client.client_security import (
    AuthenticationFailedError,
    ClientSecurity,
    SaslClientAuthenticator,
)
from kraftlog_client.connection_state import (
    AUTHENTICATING,
    CLOSED,
    CONNECTING,
    NEGOTIATING,
    READY,
    TLS_HANDSHAKING,
    ConnectionState,
    CorrelationMismatchError,
    InFlightRequest,
    ResponseCallback,
)
from kraftlog_client.errors import KafkaConnectionError, KafkaError, KafkaTimeoutError
from kraftlog_client.large_frame import LargeFrame, find_large_frame

# The versions this client can speak, per API (docs/protocol.md lists them beside the broker's).
# Lower bounds: record format v2 needs Produce 3 / Fetch 4; ListOffsets 1 and Metadata 1 are the
# first versions with the fields we read.
# Each API up to its first flexible version (KIP-482: compact encodings, tagged fields), whose
# fields are those of the version before; LeaveGroup stops at 2 (v3 takes a list of members)
# and SaslHandshake has no flexible version.
CLIENT_VERSIONS: dict[int, tuple[int, int]] = {
    ApiKey.PRODUCE: (3, 9),
    ApiKey.FETCH: (4, 12),
    ApiKey.LIST_OFFSETS: (1, 6),
    ApiKey.METADATA: (1, 9),
    # v3: flexible, names the client's software (kraftlog-python and its version).
    ApiKey.API_VERSIONS: (0, 3),
    ApiKey.CREATE_TOPICS: (0, 5),
    ApiKey.DELETE_TOPICS: (0, 4),
    ApiKey.DESCRIBE_CONFIGS: (0, 4),
    ApiKey.CREATE_PARTITIONS: (0, 2),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (0, 1),
    ApiKey.INIT_PRODUCER_ID: (0, 2),
    # Transactions (FindCoordinator 1 is the first with key_type).
    ApiKey.ADD_PARTITIONS_TO_TXN: (0, 3),
    ApiKey.ADD_OFFSETS_TO_TXN: (0, 3),
    ApiKey.END_TXN: (0, 3),
    ApiKey.TXN_OFFSET_COMMIT: (0, 3),
    # Transaction tools (Admin): flexible-only APIs, and the marker an abort writes.
    ApiKey.LIST_TRANSACTIONS: (0, 2),
    ApiKey.DESCRIBE_TRANSACTIONS: (0, 0),
    ApiKey.DESCRIBE_PRODUCERS: (0, 0),
    ApiKey.WRITE_TXN_MARKERS: (0, 1),
    # Consumer groups. JoinGroup 1 is the first with a rebalance timeout, OffsetCommit 2 the
    # first without a per-partition timestamp, OffsetFetch 2 the first with "all topics" and
    # 7 the first with require_stable (KIP-447: read_committed members wait for offsets a
    # transaction is still committing; 8 batches several groups, which nothing here needs).
    ApiKey.FIND_COORDINATOR: (0, 3),
    ApiKey.JOIN_GROUP: (1, 6),
    ApiKey.SYNC_GROUP: (0, 4),
    ApiKey.HEARTBEAT: (0, 4),
    ApiKey.LEAVE_GROUP: (0, 2),
    ApiKey.OFFSET_COMMIT: (2, 8),
    ApiKey.OFFSET_FETCH: (2, 7),
    ApiKey.LIST_GROUPS: (0, 3),
    ApiKey.DESCRIBE_GROUPS: (0, 5),
    ApiKey.DELETE_GROUPS: (0, 2),
    # KIP-848 group description (Admin.describe_groups; flexible only).
    ApiKey.CONSUMER_GROUP_DESCRIBE: (0, 0),
    # ACLs (Admin.create_acls / describe_acls / delete_acls): v1 is the first with the
    # pattern type, and the first Kafka 4 serves.
    ApiKey.DESCRIBE_ACLS: (1, 3),
    ApiKey.CREATE_ACLS: (1, 3),
    ApiKey.DELETE_ACLS: (1, 3),
    # Client quotas (Admin.describe_client_quotas / alter_client_quotas); v1 is flexible.
    ApiKey.DESCRIBE_CLIENT_QUOTAS: (0, 1),
    ApiKey.ALTER_CLIENT_QUOTAS: (0, 1),
    # Partition reassignment (Admin.alter_partition_reassignments / list_...): flexible only;
    # AlterPartitionReassignments v1 carries allow_replication_factor_change (KIP-860).
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: (0, 1),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: (0, 0),
    # SASL: handshake v1 = tokens wrapped in SaslAuthenticate (v0 sent bare tokens).
    ApiKey.SASL_HANDSHAKE: (1, 1),
    ApiKey.SASL_AUTHENTICATE: (0, 2),
}
API_VERSIONS_PROBE = 3
CLIENT_SOFTWARE_NAME = "kraftlog-python"
# What the probe says about us (a broker without v3 answers in the v0 format, which lists its
# versions all the same: no second probe is needed).
_PROBE_BODY = ApiVersionsRequest(
    client_software_name=CLIENT_SOFTWARE_NAME, client_software_version=KRAFTLOG_VERSION
)

# A response bigger than this is refused (fetch.max.bytes is 50 MiB by default; Kafka lets a
# first oversized batch through, hence the margin).
DEFAULT_MAX_RESPONSE_BYTES = 256 * 1024 * 1024
_MIN_READ_BYTES = 256 * 1024
_MAX_READS_PER_EVENT = 64

__all__ = [
    "AUTHENTICATING",
    "CLOSED",
    "CONNECTING",
    "NEGOTIATING",
    "READY",
    "TLS_HANDSHAKING",
    "BrokerConnection",
    "InFlightRequest",
]


class BrokerConnection:
    """See the module docstring. ``node_id`` is negative for bootstrap addresses."""

    def __init__(
        self,
        node_id: int,
        host: str,
        port: int,
        *,
        client_id: str,
        request_timeout_ms: int,
        connect_timeout_ms: int,
        send_buffer_bytes: int = -1,
        receive_buffer_bytes: int = -1,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        security: ClientSecurity | None = None,
    ) -> None:
        self.node_id = node_id
        self.host = host
        self.port = port
        self._lifecycle = ConnectionState(request_timeout_ms / 1000.0, connect_timeout_ms / 1000.0)
        self.error: Exception | None = None
        self._client_id = client_id
        self._send_buffer_bytes = send_buffer_bytes
        self._receive_buffer_bytes = receive_buffer_bytes
        self._reader = FrameReader(max_response_bytes)
        # A large response being received into its own buffer (plaintext only; see
        # kraftlog_client.large_frame); the reader is empty meanwhile.
        self._large: LargeFrame | None = None
        self._out: deque[memoryview] = deque()
        self._unwritten_no_response: deque[tuple[int, ResponseCallback]] = deque()
        self._written_bytes = 0
        self._queued_bytes = 0
        # The latest clock reading seen (connect, check_timeouts): the deadline base of the
        # SASL requests, which are sent from response callbacks that get no clock.
        self._last_now_s = 0.0
        # ``sock`` is the handle the owner registers with its selector and never changes once
        # connected. A TLS wrap detaches it (fileno() becomes -1; selectors then find it by
        # identity, as for a closed socket); reads and writes go through ``_io``: the socket
        # itself, or a TlsSocket over the SSLSocket that took its descriptor.
        self.sock: socket.socket | None = None
        self._io: socket.socket | TlsSocket | None = None
        self._security = security
        self._tls: ssl.SSLSocket | None = None
        self._tls_wants_write = False
        self._sasl: SaslClientAuthenticator | None = None
        self.on_ready: Callable[[BrokerConnection], None] | None = None

    @property
    def state(self) -> str:
        return self._lifecycle.state

    @property
    def versions(self) -> dict[int, int]:
        return self._lifecycle.versions

    @property
    def in_flight(self) -> deque[InFlightRequest]:
        return self._lifecycle.in_flight

    # -- connecting ----------------------------------------------------------------------

    def connect(self, now_s: float) -> None:
        """Start a non-blocking connect."""
        try:
            infos = socket.getaddrinfo(self.host, self.port, type=socket.SOCK_STREAM)
        except OSError as e:
            self.close(KafkaConnectionError(f"cannot resolve {self.host}:{self.port}: {e}"))
            return
        family, socktype, proto, _name, address = infos[0]
        sock = socket.socket(family, socktype, proto)
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self._send_buffer_bytes > 0:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self._send_buffer_bytes)
        if self._receive_buffer_bytes > 0:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self._receive_buffer_bytes)
        self.sock = sock
        self._io = sock
        self._last_now_s = now_s
        self._lifecycle.connect_started(now_s)
        code = sock.connect_ex(address)
        if code not in (0, errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EAGAIN):
            self.close(KafkaConnectionError(f"connect to {self}: {errno.errorcode.get(code)}"))

    def finish_connect(self, now_s: float) -> None:
        """The socket became writable while CONNECTING: check it and negotiate versions."""
        if self.sock is None:
            return
        code = self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if code:
            self.close(KafkaConnectionError(f"connect to {self}: {errno.errorcode.get(code)}"))
            return
        security = self._security
        if security is not None and security.ssl_context is not None:
            try:
                self._tls = security.ssl_context.wrap_socket(
                    self.sock, server_hostname=self.host, do_handshake_on_connect=False
                )
            except (ssl.SSLError, OSError) as e:
                self.close(KafkaConnectionError(f"TLS setup for {self}: {e}"))
                return
            # wrap_socket took over the file descriptor; the owner's selector keeps watching
            # it through ``sock`` (READ, and WRITE while the handshake wants to write). No
            # application data until the handshake is done.
            self._io = None
            self._lifecycle.transition(TLS_HANDSHAKING)
            self._drive_tls_handshake(now_s)
            return
        self._negotiate(now_s)

    def _negotiate(self, now_s: float) -> None:
        self._lifecycle.transition(NEGOTIATING)
        self._send_internal(
            ApiKey.API_VERSIONS, API_VERSIONS_PROBE, _PROBE_BODY, self._on_api_versions, now_s
        )

    def _drive_tls_handshake(self, now_s: float) -> None:
        """One step of the client TLS handshake (called on every socket event meanwhile)."""
        tls = self._tls
        if tls is None:
            return
        try:
            tls.do_handshake()
        except ssl.SSLWantReadError:
            self._tls_wants_write = False
            return
        except ssl.SSLWantWriteError:
            self._tls_wants_write = True
            return
        except ssl.SSLCertVerificationError as e:
            self.close(
                AuthenticationFailedError(
                    ErrorCode.SASL_AUTHENTICATION_FAILED,
                    f"TLS: the certificate of {self} is not trusted: {e.verify_message}",
                )
            )
            return
        except ssl.SSLError as e:
            # Also what a broker refusing our client certificate looks like from here.
            self.close(KafkaConnectionError(f"TLS handshake with {self} failed: {e}"))
            return
        except OSError as e:
            self.close(KafkaConnectionError(f"TLS handshake with {self}: {e}"))
            return
        self._tls_wants_write = False
        self._io = TlsSocket(tls)
        self._negotiate(now_s)

    def _on_api_versions(self, body: ApiVersionsResponse | None, error: Exception | None) -> None:
        if error is not None or body is None:
            return  # the connection is closing already
        code = body.error_code
        if code not in (ErrorCode.NO_ERROR, ErrorCode.UNSUPPORTED_VERSION):
            self.close(KafkaError(code, f"ApiVersions refused by {self}"))
            return
        theirs = {e.api_key: (e.min_version, e.max_version) for e in body.api_keys}
        self._lifecycle.negotiate(CLIENT_VERSIONS, theirs)
        if self._security is not None and self._security.uses_sasl:
            self._start_sasl()
            return
        self._become_ready()

    def _become_ready(self) -> None:
        self._lifecycle.transition(READY)
        if self.on_ready is not None:
            self.on_ready(self)

    # -- SASL ----------------------------------------------------------------------------

    def _start_sasl(self) -> None:
        security = self._security
        if security is None:
            return
        if ApiKey.SASL_HANDSHAKE not in self.versions or (
            ApiKey.SASL_AUTHENTICATE not in self.versions
        ):
            self.close(
                AuthenticationFailedError(
                    ErrorCode.ILLEGAL_SASL_STATE,
                    f"{self} does not offer SaslHandshake v1 and SaslAuthenticate (is the "
                    f"listener SASL_PLAINTEXT or SASL_SSL?)",
                )
            )
            return
        try:
            self._sasl = security.authenticator()
        except SaslAuthenticationError as e:
            self.close(AuthenticationFailedError(ErrorCode.UNSUPPORTED_SASL_MECHANISM, str(e)))
            return
        self._lifecycle.transition(AUTHENTICATING)
        self._send_internal(
            ApiKey.SASL_HANDSHAKE,
            self.versions[ApiKey.SASL_HANDSHAKE],
            {"mechanism": security.sasl_mechanism},
            self._on_sasl_handshake,
            self._last_now_s,
        )

    def _on_sasl_handshake(self, body: dict[str, Any] | None, error: Exception | None) -> None:
        if error is not None or body is None or self._sasl is None:
            return
        if body["error_code"] != ErrorCode.NO_ERROR:
            offered = ", ".join(body.get("mechanisms") or []) or "none"
            self.close(
                AuthenticationFailedError(
                    body["error_code"],
                    f"{self} refused SASL mechanism {self._sasl.mechanism} (it offers {offered})",
                )
            )
            return
        self._send_token(self._sasl.first_token())

    def _send_token(self, token: bytes) -> None:
        self._send_internal(
            ApiKey.SASL_AUTHENTICATE,
            self.versions[ApiKey.SASL_AUTHENTICATE],
            {"auth_bytes": token},
            self._on_sasl_authenticate,
            self._last_now_s,
        )

    def _on_sasl_authenticate(self, body: dict[str, Any] | None, error: Exception | None) -> None:
        if error is not None or body is None or self._sasl is None:
            return
        if body["error_code"] != ErrorCode.NO_ERROR:
            self.close(
                AuthenticationFailedError(
                    body["error_code"],
                    f"{self} refused the SASL {self._sasl.mechanism} authentication: "
                    f"{body.get('error_message') or 'no reason given'}",
                )
            )
            return
        try:
            token = self._sasl.on_server_token(body.get("auth_bytes") or b"")
        except (SaslAuthenticationError, IllegalSaslStateError) as e:
            # E.g. a wrong SCRAM server signature: the broker does not know our password.
            self.close(
                AuthenticationFailedError(
                    ErrorCode.SASL_AUTHENTICATION_FAILED, f"SASL with {self}: {e}"
                )
            )
            return
        if token is None:
            self._become_ready()
        else:
            self._send_token(token)

    @property
    def auth_failed(self) -> bool:
        """Closed because authentication failed: reconnecting would fail the same way."""
        return isinstance(self.error, AuthenticationFailedError)

    # -- requests ------------------------------------------------------------------------

    def version_for(self, api_key: int) -> int:
        version = self.versions.get(api_key)
        if version is None:
            raise KafkaError(
                ErrorCode.UNSUPPORTED_VERSION,
                f"{self} supports no version of {ApiKey(api_key).name} this client speaks "
                f"({CLIENT_VERSIONS.get(api_key)})",
            )
        return version

    def send(
        self,
        api_key: int,
        body: dict[str, Any] | Message,
        callback: ResponseCallback,
        now_s: float,
        *,
        expect_response: bool = True,
        api_version: int | None = None,
        timeout_ms: float | None = None,
    ) -> int:
        """Queue a request (READY only); returns the bytes queued for writing. ``timeout_ms``
        replaces request.timeout.ms for this request (a JoinGroup may wait a whole rebalance)."""
        if self.state is not READY:
            raise KafkaConnectionError(f"{self} is {self.state}, not READY")
        version = self.version_for(api_key) if api_version is None else api_version
        return self._send_internal(
            api_key, version, body, callback, now_s, expect_response, timeout_ms
        )

    def _send_internal(
        self,
        api_key: int,
        version: int,
        body: dict[str, Any] | Message,
        callback: ResponseCallback,
        now_s: float,
        expect_response: bool = True,
        timeout_ms: float | None = None,
    ) -> int:
        correlation_id = self._lifecycle.next_correlation_id()
        frame = encode_request(api_key, version, correlation_id, self._client_id, body)
        self._out.append(memoryview(frame))
        self._queued_bytes += len(frame)
        if expect_response:
            self._lifecycle.track(
                correlation_id,
                api_key,
                version,
                callback,
                now_s,
                None if timeout_ms is None else timeout_ms / 1000,
            )
        else:
            self._unwritten_no_response.append((self._queued_bytes, callback))
        return len(frame)

    def fileno(self) -> int:
        """The live descriptor of this connection (-1 before connect and after close)."""
        if self._tls is not None:
            return self._tls.fileno()
        return self.sock.fileno() if self.sock is not None else -1

    @property
    def has_pending_writes(self) -> bool:
        if self.state is TLS_HANDSHAKING:
            return self._tls_wants_write
        return bool(self._out)

    # -- I/O -----------------------------------------------------------------------------

    def write(self) -> None:
        """Write as much queued data as the socket takes."""
        if self.state is TLS_HANDSHAKING:
            self._drive_tls_handshake(self._last_now_s)
            return
        sock = self._io
        if sock is None:
            return
        out = self._out
        while out:
            chunk = out[0]
            if self._tls is not None and len(chunk) > MAX_JOIN_BYTES:
                # One bounded TLS write; after would-block the same bytes are offered again,
                # as OpenSSL requires.
                chunk = chunk[:MAX_JOIN_BYTES]
            try:
                sent = sock.send(chunk)
            except (BlockingIOError, InterruptedError):
                break
            except OSError as e:
                self.close(KafkaConnectionError(f"write to {self}: {e}"))
                return
            self._written_bytes += sent
            if sent < len(out[0]):
                out[0] = out[0][sent:]
                if sent < len(chunk):
                    break
                continue
            out.popleft()
        done = self._unwritten_no_response
        while done and done[0][0] <= self._written_bytes:
            _end, callback = done.popleft()
            callback({}, None)

    def read(self) -> None:
        """Read what the socket has and complete the matching in-flight requests."""
        if self.state is TLS_HANDSHAKING:
            self._drive_tls_handshake(self._last_now_s)
            return
        sock = self._io
        reader = self._reader
        # Over TLS one recv returns at most MAX_RECV_BYTES of whole records: asking for no
        # more means a short read proves OpenSSL holds no decrypted bytes the selector cannot
        # see.
        # A plain socket reads through a reused buffer of SCRATCH_BYTES (a fresh one per recv
        # costs a memory mapping: common/protocol/recv.py); bigger frames take _read_large.
        max_read_bytes = MAX_RECV_BYTES if self._tls is not None else SCRATCH_BYTES
        for _ in range(_MAX_READS_PER_EVENT):
            if sock is None or self.state is CLOSED:
                return
            if self._large is not None:
                if not self._read_large(sock):
                    return
                continue
            want = min(max(reader.bytes_needed(), _MIN_READ_BYTES), max_read_bytes)
            try:
                data = recv_chunk(sock, want)
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                self.close(KafkaConnectionError(f"read from {self}: {e}"))
                return
            if not data:
                self.close(KafkaConnectionError(f"{self} closed the connection"))
                return
            start = -1
            if self._tls is None and not reader.buffered_bytes:
                start, size = find_large_frame(data, reader.max_frame_bytes)
                if start >= 0:
                    self._large = LargeFrame(size, memoryview(data)[start + 4 :])
                    data = data[:start]  # the complete frames before it, if any
            try:
                frames = reader.feed(data) if data else []
            except ProtocolError as e:
                self.close(KafkaConnectionError(f"bad frame from {self}: {e}"))
                return
            for frame in frames:
                self._complete(frame)
            if start < 0 and len(data) < want:
                return

    def _read_large(self, sock: socket.socket | TlsSocket) -> bool:
        """Receive more of the large frame; False when the socket has nothing more now."""
        large = self._large
        if large is None:
            return True
        target = large.unfilled()
        try:
            # A large frame is only ever found on a plain socket (see read()), which mypy
            # cannot tell from the connection's state; TlsSocket has no recv_into.
            received = sock.recv_into(target)  # type: ignore[union-attr]
        except (BlockingIOError, InterruptedError):
            return False
        except OSError as e:
            self.close(KafkaConnectionError(f"read from {self}: {e}"))
            return False
        finally:
            target.release()
        if not received:
            self.close(KafkaConnectionError(f"{self} closed the connection"))
            return False
        wanted = len(large.buffer) - large.filled
        if large.advance(received):
            self._large = None
            self._complete(large.frame())
        return received == wanted

    def _complete(self, frame: bytes | memoryview) -> None:
        lifecycle = self._lifecycle
        request = lifecycle.oldest()
        if request is None:
            self.close(KafkaConnectionError(f"{self} sent a response nobody asked for"))
            return
        try:
            correlation_id, body = decode_response(request.api_key, request.api_version, frame)
        except ProtocolError as e:
            lifecycle.in_flight.popleft()
            request.callback(None, KafkaConnectionError(f"undecodable response: {e}"))
            self.close(KafkaConnectionError(f"undecodable response from {self}: {e}"))
            return
        try:
            lifecycle.complete(correlation_id)
        except CorrelationMismatchError as e:
            lifecycle.in_flight.popleft()
            error = KafkaConnectionError(f"{self} {e}")
            request.callback(None, error)
            self.close(error)
            return
        request.callback(body, None)

    def check_timeouts(self, now_s: float) -> None:
        self._last_now_s = now_s
        expired = self._lifecycle.expired(now_s)
        if expired is not None:
            self.close(KafkaTimeoutError(f"{expired} to {self} timed out"))

    def close(self, error: Exception | None = None) -> None:
        """Close and fail every in-flight request with ``error``."""
        if self.state is CLOSED:
            return
        pending = self._lifecycle.close()
        self._large = None
        self.error = error or KafkaConnectionError(f"{self} closed")
        for sock in (self._io, self._tls, self.sock):
            if sock is not None:
                try:
                    sock.close()
                except OSError:
                    pass
        no_response = list(self._unwritten_no_response)
        self._unwritten_no_response.clear()
        self._out.clear()
        for request in pending:
            request.callback(None, self.error)
        for _end, callback in no_response:
            callback(None, self.error)

    def __str__(self) -> str:
        return f"broker {self.node_id} at {self.host}:{self.port}"
