"""Replication: the leader's view of its followers (LEO, ISR, high watermark), the follower's
truncation, replica fetchers and their fetch sessions, AlterPartition proposals."""
