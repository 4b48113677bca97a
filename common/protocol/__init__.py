"""Kafka wire protocol: a sans-IO codec for the non-flexible and flexible versions of the APIs
in docs/protocol.md, shared by the broker (data_plane) and the client (kraftlog_client).

Import the submodules directly (this package imports nothing, so that ``errors`` stays cheap
for its many users): ``codec`` (decode_request, encode_response, encode_request,
decode_response, ...), ``framing`` (FrameReader), ``api_keys`` (ApiKey, SUPPORTED_VERSIONS),
``errors`` (the codec's exceptions), ``messages.<api>`` (the typed request and response
classes that ``python -m common.protocol.generate`` writes from ``schemas``); Kafka's error
codes are in :mod:`common.error_codes`.
"""
