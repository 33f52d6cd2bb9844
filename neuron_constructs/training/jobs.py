"""Training jobs of a queue: multi-node parallel (or single-node) job definitions of one container per node."""

from __future__ import annotations

import base64
import bz2
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from aws_cdk import CfnOutput, Duration, Fn, Size, Token
from aws_cdk import aws_batch as batch
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from constructs import Construct

from neuron_constructs.base.images import refuse_ungranted_ecr_image
from neuron_constructs.base.l1_overrides import open_node_range
from neuron_constructs.base.roles import ExecutionRole
from neuron_constructs.base.tree import construct_path, remember_path
from neuron_constructs.checks import inputs
from neuron_constructs.compute.task_definitions.shared import task_role
from neuron_constructs.knowledge import rules
from neuron_constructs.knowledge.catalog import NeuronInstanceType
from neuron_constructs.knowledge.cores import format_core_list
from neuron_constructs.monitoring.daemons import neuron_monitor_config, publisher_source
from neuron_constructs.programs.carrying import program_source
from neuron_constructs.programs.metric_publisher import CLUSTER_ENVIRONMENT, PROCESS_TAG_VARIABLE
from neuron_constructs.programs.preflight import IMAGE_EXIT_CODE, PREFLIGHT_EXIT_CODE
from neuron_constructs.training.storage import storage_environment

if TYPE_CHECKING:
    from neuron_constructs.training.queue import NeuronTrainingQueue

__all__ = [
    "CHECKPOINT_VARIABLE",
    "EFA_ENVIRONMENT",
    "LAUNCHER",
    "PREFLIGHT_MARKER_DIR",
    "SHARED_MEMORY_FRACTION",
    "NeuronTrainingJob",
    "Preflight",
    "preflight_program",
]

Preflight = bool | Literal["collective"]
"""``True`` (devices, EFA, driver, and the rendezvous of every node), ``"collective"`` (also an all-reduce over
every NeuronCore of each node) or ``False``."""
PREFLIGHT_MARKER_DIR = "/var/lib/neuron-preflight"
"""The host directory a failed preflight writes ``failed`` to; the queue's instances power off when it appears."""
DEFAULT_JOB_TIMEOUT = Duration.days(3)
"""How long an attempt of a job runs before Batch stops it, unless ``add_job(timeout=)`` says otherwise."""
CHECKPOINT_VARIABLE = "NEURON_CHECKPOINT_DIR"
"""Where the training script saves checkpoints and resumes from: a path on the queue's storage, or an S3 URL."""

EFA_ENVIRONMENT = {"FI_PROVIDER": "efa", "FI_EFA_USE_DEVICE_RDMA": "1", "FI_EFA_FORK_SAFE": "1"}
"""What the Neuron collectives read over EFA, as the Neuron AWS Batch training scripts set it: libfabric's EFA
provider, RDMA reads on the device, and fork safety for data loaders that fork."""
LAUNCHER = r"""set -eu
# AWS Batch multi-node parallel job -> torchrun: the main node has no AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS.
export NNODES="${AWS_BATCH_JOB_NUM_NODES:-1}"
export NODE_RANK="${AWS_BATCH_JOB_NODE_INDEX:-0}"
export MASTER_ADDR="${AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS:-$(hostname -i | cut -d' ' -f1)}"
export MASTER_PORT="${MASTER_PORT:-41000}"
export NEURON_RT_ROOT_COMM_ID="${NEURON_RT_ROOT_COMM_ID:-$MASTER_ADDR:46820}"
# torchrun reads each option from PET_<OPTION> when it is not on its command line.
export PET_NNODES="$NNODES" PET_NODE_RANK="$NODE_RANK" PET_MASTER_ADDR="$MASTER_ADDR" PET_MASTER_PORT="$MASTER_PORT"
# With preflight: the node's devices, EFA and driver, and every other node's verdict, before the command starts.
if [ -n "${NEURON_PREFLIGHT:-}" ]; then
  if ! command -v python3 >/dev/null 2>&1; then
    echo "neuron-launch: no python3 in this image for the preflight (use a Neuron training image)" >&2
    exit 1
  fi
  python3 -c 'import base64, bz2, os; exec(bz2.decompress(base64.b64decode(os.environ["NEURON_PREFLIGHT"])))' || exit $?
fi
# With monitoring: neuron-monitor's reports as CloudWatch metric lines on the job's log stream, while the job runs.
if [ -n "${NEURON_MONITOR_EMF:-}" ]; then
  PATH="$PATH:/opt/aws/neuron/bin"
  config=$(mktemp 2>/dev/null || true)
  if ! command -v neuron-monitor >/dev/null 2>&1 || ! command -v python3 >/dev/null 2>&1; then
    echo "neuron-launch: this image has no neuron-monitor or python3; the job publishes no Neuron metrics" >&2
  elif [ -n "$config" ] && printf '%s' "${NEURON_MONITOR_CONFIG:-"{}"}" > "$config" 2>/dev/null; then
    (neuron-monitor -c "$config" | python3 -u -c "$NEURON_MONITOR_EMF") &
  else
    echo "neuron-launch: cannot write neuron-monitor's configuration; the job publishes no Neuron metrics" >&2
  fi
fi
exec "$@"
"""
"""Runs before the job's command on every node: the rank and world of the node from what Batch gives it (AWS Batch
guide: multi-node parallel job environment variables) as ``NNODES``, ``NODE_RANK``, ``MASTER_ADDR``, ``MASTER_PORT``
and as the ``PET_*`` variables ``torchrun`` reads for its options (``torch.distributed.run``), so ``torchrun
--nproc_per_node=32 train.py`` needs nothing else; and the Neuron runtime's root communicator on the main node."""
SHARED_MEMORY_FRACTION = 0.1
"""Share of the instance's memory given to ``/dev/shm`` (Docker's default is 64 MiB): data loader workers and the
Neuron runtime's host buffers pass tensors through it. A choice, not an AWS figure."""


_ARGUMENT_SEPARATOR = "\u001f"
"""Joins the arguments of a command holding a list token: a character no argument of a command line holds."""


def _is_list_token(argument: str) -> bool:
    return argument.startswith("#{Token[") and bool(Token.is_unresolved([argument]))


def launched(command: Sequence[str]) -> list[str]:
    """The container command: :data:`LAUNCHER`, then ``command``. Deploy-time values are passed through untouched:
    a string token (a ``CfnParameter``'s ``value_as_string``) as one argument, a list token (a
    ``CommaDelimitedList``'s ``value_as_list``) as its items, spliced in by ``Fn::Split`` of an ``Fn::Join``
    (CloudFormation cannot add elements to a list it resolves)."""
    arguments = ["/bin/bash", "-c", LAUNCHER, "neuron-launch", *command]
    if not any(_is_list_token(a) for a in command):
        return arguments
    literal = [a for a in arguments if not Token.is_unresolved(a) and not _is_list_token(a)]
    assert not any(_ARGUMENT_SEPARATOR in a for a in literal), "an argument holds the unit separator"
    parts = [Fn.join(_ARGUMENT_SEPARATOR, [a]) if _is_list_token(a) else a for a in arguments]
    return Fn.split(_ARGUMENT_SEPARATOR, Fn.join(_ARGUMENT_SEPARATOR, parts))


class NeuronTrainingJob(Construct):
    """A training job of a :class:`NeuronTrainingQueue`: ``nodes`` copies of one container, one per instance.

    ``nodes`` >= 2 makes a multi-node parallel job definition (every node runs the same container, node 0 is the
    main node), whose nodes AWS Batch runs in the ``awsvpc`` network mode, where the queue's
    ``ECS_AWSVPC_BLOCK_IMDS`` keeps them from the instance role; ``nodes`` = 1 an ECS job definition, which Batch runs
    in the ``host`` network mode, the only one it offers a single-node job on EC2 (AWS Batch guide, "Networking modes
    for AWS Batch jobs"): its container reaches the instance metadata service and so the queue's instance role, and
    the template checks warn NEURON115 for it. The container maps every ``/dev/neuronN`` of the type (or
    ``devices``) and every ``/dev/infiniband/uverbsN`` the type has, with the same host and container path; runs
    with an unlimited ``memlock`` and 65,535 open files; gets :data:`SHARED_MEMORY_FRACTION` of the instance's
    memory as ``/dev/shm``, the type's vCPUs and 90 % of its memory; the EFA environment (:data:`EFA_ENVIRONMENT`)
    when it spans nodes; and runs its ``command`` through :data:`LAUNCHER`, which sets the rank and world
    variables ``torchrun`` reads. Logs go to the queue's log group, one stream per node. The job role holds
    nothing unless given. Before the command, every node runs the preflight (``preflight``,
    :mod:`neuron_constructs.programs.preflight`; with the queue's storage it also checks the Lustre mount). The
    preflight's exit code for a bad node (75) and infrastructure failures (``Host EC2*`` status reasons: a host that
    failed or a reclaimed Spot instance) are retried up to ``retries`` times (``retries + 1`` attempts); its exit code
    for a problem of the image (78: a tool of the image refused its flags) is not, and is matched first, since AWS
    Batch retries a job that no ``evaluateOnExit`` entry matches (AWS Batch API reference: EvaluateOnExit); anything
    else - a bug in the script - is not retried either; ``timeout`` defaults to 3 days.
    ``checkpoint_dir`` reaches every node as ``NEURON_CHECKPOINT_DIR``.

    ``tensor_parallel`` and ``pipeline_parallel``, when the job states them, are checked against its world size: one
    process per NeuronCore of its devices (per logical core on Trainium2, ``NEURON_LOGICAL_NC_CONFIG``, default 2)
    on every node. A multi-node definition's node range is open (``0:``), so ``submit_command`` (``--node-overrides
    numNodes=N``) can run it on another number of nodes, up to the queue's ``max_nodes``.

    Refused: multi-node on a type without EFA (NEURON048), more nodes than the queue launches (NEURON049),
    multi-node on Spot (NEURON050), devices beyond the type (NEURON009), ``NEURON_RT_VISIBLE_CORES`` or
    ``NEURON_RT_NUM_CORES`` beyond the mapped devices (NEURON019), parallel degrees that do not divide the world
    size (NEURON053), a ``checkpoint_dir`` off the queue's storage (``..`` included) or in no valid S3 bucket
    (NEURON066). With a monitored queue the nodes carry ``NEURON_PROCESS_TAG`` = the job's construct path, made to
    fit the tag where it does not (:func:`~neuron_constructs.checks.inputs.derived_model_name`).

    Attributes
    ----------
    job_definition
        A ``batch.MultiNodeJobDefinition``, or a ``batch.EcsJobDefinition`` for one node.
    container, nodes, devices, job_role
        What each node runs.
    submit_command
        The ``aws batch submit-job`` command line that runs it (tokens until synth).
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        queue: NeuronTrainingQueue,
        nodes: int,
        image: ecs.ContainerImage,
        command: Sequence[str],
        environment: Mapping[str, str] | None,
        secrets: Mapping[str, batch.Secret] | None,
        devices: Sequence[int] | None,
        job_role: iam.IRole | None,
        timeout: Duration | None,
        retries: int,
        preflight: Preflight = True,
        checkpoint_dir: str | None = None,
        tensor_parallel: int | None = None,
        pipeline_parallel: int | None = None,
    ) -> None:
        path = f"{construct_path(scope)}/{id}"
        instance = queue.instance_type
        if nodes > 1 and not instance.supports_multi_node:
            multi_node = ", ".join(e.name for e in NeuronInstanceType.all() if e.supports_multi_node)
            raise rules.MULTI_NODE_WITHOUT_EFA.error(
                path, f"nodes={nodes} on {instance.name}, which has no EFA", multi_node=multi_node
            )
        if nodes > queue.max_nodes:
            raise rules.TOO_MANY_NODES.error(
                path,
                f"nodes={nodes} but {construct_path(queue)} launches at most {queue.max_nodes} instances",
                max_nodes=queue.max_nodes,
                queue=construct_path(queue),
            )
        if nodes > 1 and queue.spot:
            raise rules.MULTI_NODE_ON_SPOT.error(path, f"nodes={nodes} on {construct_path(queue)}, which runs Spot")
        chosen = (
            tuple(range(instance.chips)) if devices is None else inputs.check_device_indices(path, instance, devices)
        )
        inputs.check_runtime_cores(path, dict(environment or {}), instance, chosen)
        check_parallel_degrees(
            path, instance, chosen, nodes, dict(environment or {}), tensor_parallel, pipeline_parallel
        )
        checkpoint = _checkpoint_dir(path, id, queue, checkpoint_dir)
        super().__init__(scope, id)
        remember_path(self, scope, id)
        self.nodes = nodes
        self.devices = chosen
        self.preflight: Preflight = preflight
        self.retries = retries
        self.checkpoint_dir: str | None = checkpoint
        self.job_role: iam.IRole = job_role or task_role(self, "JobRole")
        linux = batch.LinuxParameters(
            self,
            "LinuxParameters",
            shared_memory_size=Size.mebibytes(int(instance.memory_mib * SHARED_MEMORY_FRACTION)),
        )
        linux.add_devices(
            *[batch.Device(host_path=f"/dev/neuron{i}", container_path=f"/dev/neuron{i}") for i in chosen],
            *[
                batch.Device(host_path=f"/dev/infiniband/uverbs{i}", container_path=f"/dev/infiniband/uverbs{i}")
                for i in range(instance.efa_interfaces or 0)
            ],
        )
        self.container = batch.EcsEc2ContainerDefinition(
            self,
            "Container",
            image=image,
            cpu=instance.vcpus,
            memory=Size.mebibytes(instance.schedulable_memory_mib),
            command=launched(command),
            environment={
                **(EFA_ENVIRONMENT if nodes > 1 else {}),
                **(storage_environment(queue.storage) if queue.storage else {}),
                **(monitoring_environment(queue) if queue.monitoring else {}),
                **({PROCESS_TAG_VARIABLE: inputs.derived_model_name(path)} if queue.monitoring else {}),
                **(
                    preflight_environment(
                        instance,
                        chosen,
                        environment or {},
                        preflight,
                        queue.storage.mount_path if queue.storage else None,
                    )
                    if preflight
                    else {}
                ),
                **({CHECKPOINT_VARIABLE: checkpoint} if checkpoint else {}),
                **(environment or {}),
            },
            volumes=[
                *(
                    [
                        batch.EcsVolume.host(
                            name="shared", host_path=queue.storage.mount_path, container_path=queue.storage.mount_path
                        )
                    ]
                    if queue.storage
                    else []
                ),
                *(
                    [
                        batch.EcsVolume.host(
                            name="preflight", host_path=PREFLIGHT_MARKER_DIR, container_path=PREFLIGHT_MARKER_DIR
                        )
                    ]
                    if preflight
                    else []
                ),
            ]
            or None,
            secrets=dict(secrets) if secrets else None,
            job_role=self.job_role,
            execution_role=ExecutionRole(self, "ExecutionRole"),
            linux_parameters=linux,
            ulimits=[
                batch.Ulimit(name=batch.UlimitName.MEMLOCK, soft_limit=-1, hard_limit=-1),
                batch.Ulimit(name=batch.UlimitName.NOFILE, soft_limit=65535, hard_limit=65535),
            ],
            logging=ecs.LogDrivers.aws_logs(stream_prefix=id, log_group=queue.log_group),
        )
        refuse_ungranted_ecr_image(f"{path}/Container", self.container)
        strategies = [
            batch.RetryStrategy.of(batch.Action.EXIT, batch.Reason.custom(on_exit_code=str(IMAGE_EXIT_CODE))),
            batch.RetryStrategy.of(batch.Action.RETRY, batch.Reason.custom(on_exit_code=str(PREFLIGHT_EXIT_CODE))),
            batch.RetryStrategy.of(batch.Action.RETRY, batch.Reason.custom(on_status_reason="Host EC2*")),
            batch.RetryStrategy.of(batch.Action.EXIT, batch.Reason.custom(on_reason="*")),
        ]
        options: dict[str, Any] = {
            "retry_attempts": retries + 1,
            "retry_strategies": strategies,
            "timeout": timeout or DEFAULT_JOB_TIMEOUT,
            "propagate_tags": True,
        }
        self.job_definition: batch.MultiNodeJobDefinition | batch.EcsJobDefinition
        if nodes > 1:
            self.job_definition = batch.MultiNodeJobDefinition(
                self,
                "JobDefinition",
                instance_type=ec2.InstanceType(instance.name),
                main_node=0,
                containers=[batch.MultiNodeContainer(container=self.container, start_node=0, end_node=nodes - 1)],
                **options,
            )
            open_node_range(self.job_definition)
        else:
            self.job_definition = batch.EcsJobDefinition(self, "JobDefinition", container=self.container, **options)
        self.submit_command = (
            f"aws batch submit-job --job-name {id.lower()} --job-queue {queue.job_queue.job_queue_name} "
            f"--job-definition {self.job_definition.job_definition_name}"
            + (f" --node-overrides numNodes={nodes}" if nodes > 1 else "")
        )

    def add_submit_output(self, id: str = "SubmitCommand") -> CfnOutput:
        """A stack output with ``submit_command``, the exact ``aws batch submit-job`` line that runs this job."""
        return CfnOutput(self, id, value=self.submit_command, description="Runs the training job on its queue")


def preflight_program() -> str:
    """The preflight's source (:func:`~neuron_constructs.programs.carrying.program_source`) as the job definition
    carries it in ``NEURON_PREFLIGHT``: bzip2-compressed, then base64, which :data:`LAUNCHER` decodes for ``python3``.
    AWS Batch takes job definitions of at most 24 KiB (AWS Batch guide: service quotas, "Maximum job definition size");
    as text, the preflight and the metrics publisher together would not fit. bzip2 rather than zlib: zlib-ng, which
    some distributions ship as zlib, compresses to other bytes, and the templates are byte-stable."""
    source = program_source("neuron_constructs.programs", "preflight.py")
    return base64.b64encode(bz2.compress(source.encode(), 9)).decode()


def preflight_environment(
    instance: NeuronInstanceType,
    devices: Sequence[int],
    environment: Mapping[str, str],
    preflight: Preflight,
    lustre: str | None = None,
) -> dict[str, str]:
    """What the preflight (:mod:`neuron_constructs.programs.preflight`) reads: its own program
    (:func:`preflight_program`), the devices the job maps, the type's EFA interfaces, the collective check and its
    ranks (one per NeuronCore of the devices), where the queue's Lustre file system must be mounted (``lustre``), and
    the host directory it marks a bad node in."""
    ranks = len(devices) * instance.cores_per_chip(inputs.environment_lnc(instance, environment))
    return {
        "NEURON_PREFLIGHT": preflight_program(),
        "NEURON_PREFLIGHT_DEVICES": format_core_list(devices),
        "NEURON_PREFLIGHT_EFA": str(instance.efa_interfaces or 0),
        **({"NEURON_PREFLIGHT_LUSTRE": lustre} if lustre else {}),
        **(
            {"NEURON_PREFLIGHT_COLLECTIVE": "1", "NEURON_PREFLIGHT_RANKS": str(ranks)}
            if preflight == "collective"
            else {}
        ),
        "NEURON_PREFLIGHT_MARKER_DIR": PREFLIGHT_MARKER_DIR,
    }


def _checkpoint_dir(path: str, id: str, queue: NeuronTrainingQueue, given: str | None) -> str | None:
    """NEURON066: the checkpoint directory - ``given`` (an absolute path in normal form on the queue's storage, or an
    ``s3://bucket/prefix`` URL S3 can hold: :func:`~neuron_constructs.checks.inputs.check_checkpoint_dir`), else,
    with storage, ``<mount>/data/checkpoints/<job id>`` when a bucket is linked at ``<mount>/data`` (FSx exports what
    is written there to S3, so checkpoints outlive the file system) or ``<mount>/checkpoints/<job id>``; else none."""
    storage = queue.storage
    if given is None:
        if storage is None:
            return None
        linked = "/data" if storage.bucket is not None else ""
        return f"{storage.mount_path}{linked}/checkpoints/{id.lower()}"
    return inputs.check_checkpoint_dir(path, given, storage.mount_path if storage is not None else None)


def check_parallel_degrees(
    path: str,
    instance: NeuronInstanceType,
    devices: Sequence[int],
    nodes: int,
    environment: Mapping[str, str],
    tensor_parallel: int | None,
    pipeline_parallel: int | None,
) -> None:
    """NEURON053: one process per (logical) NeuronCore, and tensor x pipeline parallel divides the world size."""
    if tensor_parallel is None and pipeline_parallel is None:
        return
    per_node = len(devices) * instance.cores_per_chip(inputs.environment_lnc(instance, environment))
    world = nodes * per_node
    product = (tensor_parallel or 1) * (pipeline_parallel or 1)
    if world % product:
        raise rules.PARALLEL_DEGREES.error(
            path,
            f"tensor_parallel={tensor_parallel or 1} x pipeline_parallel={pipeline_parallel or 1} = {product} does "
            f"not divide the world size {world} ({nodes} nodes x {per_node} NeuronCores)",
            world=world,
            per_node=per_node,
        )


def monitoring_environment(queue: NeuronTrainingQueue) -> dict[str, str]:
    """What the launcher needs to publish Neuron metrics (:data:`LAUNCHER`): the publisher, neuron-monitor's
    configuration and the queue's name as the metrics' ``ClusterName``."""
    return {
        CLUSTER_ENVIRONMENT: queue.job_queue.job_queue_name,
        "NEURON_MONITOR_EMF": publisher_source(),
        "NEURON_MONITOR_CONFIG": json.dumps(neuron_monitor_config(Duration.minutes(1)), separators=(",", ":")),
    }
