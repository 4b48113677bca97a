"""The replicated metadata log: a Raft quorum of controllers built on pysyncobj.

``MetadataLog`` (raft.metadata_log) is the only interface the rest of kraftlog sees; nothing
pysyncobj-specific leaves this package.
"""
