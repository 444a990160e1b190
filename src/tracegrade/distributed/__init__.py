"""Evaluate on a Dask cluster (the ``dask`` extra): :func:`evaluate_distributed`, and
the engine-agnostic partition scoring a Ray or Spark job can call
(:func:`score_records`)."""

from .partitions import Partition, PlannedInput, plan_input
from .parts import parts_folder
from .scoring import PartitionResult, score_partition, score_records
from .session import DistributedError, DistributedRun, evaluate_distributed

__all__ = [
    "DistributedError",
    "DistributedRun",
    "Partition",
    "PartitionResult",
    "PlannedInput",
    "evaluate_distributed",
    "parts_folder",
    "plan_input",
    "score_partition",
    "score_records",
]
