"""The handler registry (data_plane.broker.handlers.HANDLERS) is the one table of served APIs:
each entry has its handler, its authorization rule beside the handler, the ACLs the rule
checks, and serves the codec's versions."""

from __future__ import annotations

import pytest

from common.protocol.api_keys import SUPPORTED_VERSIONS, ApiKey
from common.security.acl import AclOperation, ResourceType
from data_plane.broker.handlers import (
    HANDLERS,
    Api,
    advertised,
    authorization_rules,
    handler_for,
    produce,
    registry,
    topic,
)
from data_plane.security.request_authz import unchecked

# Kafka answers these before, or without, any authorization.
UNCHECKED = {ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE}


def test_every_registered_api_declares_its_authorization() -> None:
    for key, api in HANDLERS.items():
        assert api.key is key
        assert callable(api.authorize), key
        if key in UNCHECKED:
            assert api.authorize is unchecked and api.acls == (), key
            continue
        assert api.acls, key
        # The rule sits beside the handler, in the API's own module.
        assert api.authorize.__module__ == api.handler.__module__, key
        assert api.authorize.__name__ == "authorize", key
        for op, rtype in api.acls:
            assert isinstance(op, AclOperation) and isinstance(rtype, ResourceType), key
    assert authorization_rules() == {int(k): a.authorize for k, a in HANDLERS.items()}


def test_an_api_without_an_authorization_rule_cannot_be_registered() -> None:
    with pytest.raises(TypeError, match="PRODUCE has no authorization rule"):
        Api(ApiKey.PRODUCE, produce.handle, None, topic(AclOperation.WRITE))  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Api(ApiKey.PRODUCE, produce.handle)  # type: ignore[call-arg]
    # Declared ACLs and the rule agree: a checking rule declares what it checks, and an API
    # that declares ACLs does not skip them.
    with pytest.raises(ValueError, match="PRODUCE"):
        Api(ApiKey.PRODUCE, produce.handle, produce.authorize, ())
    with pytest.raises(ValueError, match="PRODUCE"):
        Api(ApiKey.PRODUCE, produce.handle, unchecked, topic(AclOperation.WRITE))


def test_the_registry_lists_each_api_once_and_only_apis_the_codec_knows() -> None:
    api = HANDLERS[ApiKey.PRODUCE]
    with pytest.raises(ValueError, match="PRODUCE is registered twice"):
        registry(api, api)
    outside_codec = next(k for k in ApiKey if k not in SUPPORTED_VERSIONS)
    with pytest.raises(ValueError, match="not known to the codec"):
        registry(Api(outside_codec, produce.handle, produce.authorize, api.acls))


def test_served_versions_are_the_codecs_from_min_version() -> None:
    served = advertised()
    assert set(served) == set(HANDLERS)
    for key, (lo, hi) in served.items():
        codec_lo, codec_hi = SUPPORTED_VERSIONS[key]
        assert hi == codec_hi, key
        assert lo == max(codec_lo, HANDLERS[key].min_version), key
    assert served[ApiKey.PRODUCE][0] == 3
    assert handler_for(ApiKey.PRODUCE, 2) is None
    assert handler_for(ApiKey.PRODUCE, 3) is produce.handle
    assert handler_for(ApiKey.PRODUCE, served[ApiKey.PRODUCE][1] + 1) is None
    assert handler_for(next(k for k in ApiKey if k not in HANDLERS), 0) is None
    assert handler_for(9999, 0) is None
