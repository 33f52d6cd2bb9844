"""Distributed training on Trainium: an AWS Batch queue with EFA, FSx for Lustre storage and multi-node jobs."""
