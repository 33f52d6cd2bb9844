"""What every EC2 container instance the library launches shares, whichever capacity launches it (ECS Managed
Instances, an Auto Scaling group, a training queue's compute environment): the ECS agent's settings and its grants, the
encrypted root volume, its default size, the Neuron AMI's parameter and the warning about public subnets.
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Validations
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from constructs import Construct

from neuron_constructs.base.tree import construct_path
from neuron_constructs.knowledge import rules
from neuron_constructs.knowledge.ami import NEURON_AMI_IMAGE_ID_PARAMETER

__all__ = [
    "DEFAULT_ROOT_VOLUME_GIB",
    "ECS_AGENT_SETTINGS",
    "NEURON_AMI_PARAMETER",
    "encrypted_root_volume",
    "grant_ecs_agent",
    "warn_about_public_subnets",
]

NEURON_AMI_PARAMETER = NEURON_AMI_IMAGE_ID_PARAMETER
"""SSM parameter holding the ECS-optimized Amazon Linux 2023 (Neuron) AMI id."""

DEFAULT_ROOT_VOLUME_GIB = 100
"""Root volume size: Neuron framework images are large (AWS blueprints use 100 GiB)."""

ECS_AGENT_SETTINGS = {"ECS_AWSVPC_BLOCK_IMDS": "true"}
"""Written to ``/etc/ecs/ecs.config`` on every Auto Scaling instance: awsvpc tasks cannot reach the
instance metadata service (the hop limit of 1 already keeps bridge-mode containers out)."""


def warn_about_public_subnets(
    owner: Construct, vpc: ec2.IVpc, subnets: Sequence[ec2.ISubnet], *, any_public: bool | None = None
) -> None:
    """NEURON108: a warning when capacity launches into subnets the VPC lists as public (``any_public``: whether
    any is, when the subnet selection already said)."""
    if any_public is False:
        return
    public_ids = {construct_path(s) for s in vpc.public_subnets}
    public = [construct_path(s) for s in subnets if construct_path(s) in public_ids]
    if public:
        Validations.of(owner).add_warning(
            rules.PUBLIC_SUBNETS.warning_id,
            rules.PUBLIC_SUBNETS.message(construct_path(owner), f"instances launch into public subnets {public}"),
        )


def encrypted_root_volume(gib: int) -> ec2.BlockDevice:
    """The root volume of the Amazon Linux 2023 AMIs (``/dev/xvda``): ``gib`` GiB of gp3, encrypted, deleted with the
    instance."""
    return ec2.BlockDevice(
        device_name="/dev/xvda",
        volume=ec2.BlockDeviceVolume.ebs(
            gib, volume_type=ec2.EbsDeviceVolumeType.GP3, encrypted=True, delete_on_termination=True
        ),
    )


def grant_ecs_agent(
    role: iam.Role, cluster_arn: str, *, pattern: bool = False, managed_instances: bool = False
) -> iam.Policy:
    """What the ECS container agent calls, scoped to the cluster ``cluster_arn`` wherever ECS allows it, as a policy
    of its own (``<role>/EcsAgent``, returned) attached to ``role``: its ``*`` statements are acknowledged there,
    and what else the role is granted (``role.add_to_policy``) lands in the role's ``DefaultPolicy``, where cdk-nag
    reports a wildcard.

    ``ecs:Poll`` (the channel that carries task credentials) and ``ecs:StartTelemetrySession`` act on container
    instances, whose ARNs exist only once they register: they are granted on ``*`` under the condition that the
    ``ecs:cluster`` of the request is ``cluster_arn``.

    ``pattern``: ``cluster_arn`` ends in ``*`` (a cluster named only once it exists, as AWS Batch names its clusters
    ``AWSBatch-<compute environment>-<uuid>``), matched with ``ArnLike`` rather than ``ArnEquals``.

    ``managed_instances``: the agent of an ECS Managed Instance, which calls what AWS's
    ``AmazonECSInstanceRolePolicyForManagedInstances`` grants: it registers and reports task and attachment state
    (that policy grants no deregistration and no container state change), and sends the instance's system logs
    (``ecs:PutSystemLogEvents``, which acts on the cluster and on its container instances: granted on the cluster and
    under the ``ecs:cluster`` condition)."""
    if managed_instances:
        reports = ["ecs:RegisterContainerInstance", "ecs:SubmitAttachmentStateChanges", "ecs:SubmitTaskStateChange"]
        system_logs = ["ecs:PutSystemLogEvents"]
    else:
        reports = [
            "ecs:RegisterContainerInstance",
            "ecs:DeregisterContainerInstance",
            "ecs:SubmitAttachmentStateChanges",
            "ecs:SubmitContainerStateChange",
            "ecs:SubmitTaskStateChange",
        ]
        system_logs = []
    return iam.Policy(
        role,
        "EcsAgent",
        roles=[role],
        statements=[
            iam.PolicyStatement(
                sid="EcsAgentRegisterAndReport", actions=[*reports, *system_logs], resources=[cluster_arn]
            ),
            iam.PolicyStatement(
                sid="EcsAgentPoll",
                actions=["ecs:Poll", "ecs:StartTelemetrySession", *system_logs],
                resources=["*"],
                conditions={"ArnLike" if pattern else "ArnEquals": {"ecs:cluster": cluster_arn}},
            ),
            iam.PolicyStatement(sid="EcsAgentDiscoverEndpoint", actions=["ecs:DiscoverPollEndpoint"], resources=["*"]),
        ],
    )
