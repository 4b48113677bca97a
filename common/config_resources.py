"""Kafka's numbers for configs, on the wire and in the metadata log: the resource types
(``ConfigResource.Type``: DescribeConfigs, AlterConfigs, IncrementalAlterConfigs and
ConfigRecord), the IncrementalAlterConfigs operations (``AlterConfigOp.OpType``) and the
sources DescribeConfigs answers (``ConfigEntry.ConfigSource``). Shared by the controller, the
brokers, the clients and the command line.

Constants; thread-safe.
"""

from __future__ import annotations

# ConfigResource.Type
RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4
RESOURCE_BROKER_LOGGER = 8

# AlterConfigOp.OpType
OP_SET = 0
OP_DELETE = 1
OP_APPEND = 2
OP_SUBTRACT = 3

# ConfigEntry.ConfigSource (DescribeConfigs v1+ config_source)
SOURCE_DYNAMIC_TOPIC = 1
SOURCE_STATIC_BROKER = 4
SOURCE_DEFAULT = 5
