"""Cluster metadata: records, the MetadataImage they build, the quorum controller, the gRPC
control plane and the broker-side metadata follower."""
