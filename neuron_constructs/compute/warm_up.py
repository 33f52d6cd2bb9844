"""The warm-up of an Auto Scaling capacity with a prefetching warm pool, prepared once every service is placed: what
the services on the capacity fetch, the instance role's grants for it, the script in the user data, the model volumes
the tasks share with it, and its checks (NEURON091 at synth; NEURON124 and NEURON142 as warnings).

The :class:`~neuron_constructs.compute.warm_pool.WarmPool` option and its checks at the call are
:mod:`neuron_constructs.compute.warm_pool`; what AWS says about warm pools, and the warm-up script, are
:mod:`neuron_constructs.knowledge.warm_start`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import jsii
from aws_cdk import Aws, Fn, Stack, Validations
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import IConstruct, IValidation

from neuron_constructs.base import compliance
from neuron_constructs.base.arguments import is_token
from neuron_constructs.base.images import container_name_of, image_name_of
from neuron_constructs.base.tree import construct_path
from neuron_constructs.compute.model_sources import ModelArtifacts
from neuron_constructs.compute.warm_up_needs import (
    StackNeeds,
    capacity_needs_path,
    publish_needs,
    repository_arn,
    services_by_stack,
)
from neuron_constructs.knowledge import rules
from neuron_constructs.knowledge.container_images import AWS_CLI
from neuron_constructs.knowledge.warm_start import (
    MODELS_DIRECTORY,
    WARM_UP_FILE,
    Fetched,
    Prefetch,
    moving_tag,
    root_volume_room,
    warm_up_script,
)

if TYPE_CHECKING:
    from neuron_constructs.compute.auto_scaling import AutoScalingCapacity

__all__ = ["prepare_warm_up"]


def prepare_warm_up(capacity: AutoScalingCapacity) -> None:
    """The warm-up: what the services on the capacity fetch, the instance role's grants for it, and the script
    in the user data (run once every service is placed)."""
    stack = Stack.of(capacity)
    images: list[str] = []
    artifacts: list[tuple[str, str]] = []
    skipped: list[str] = []
    grant_artifacts: list[ModelArtifacts] = []
    fetched: list[Fetched] = []
    path = capacity_needs_path(capacity)
    capacity.needs_path = path
    for service in capacity.services:
        if Stack.of(service) is not stack:
            if path is None:
                skipped.append(
                    f"{construct_path(service)} (in another stack, and the capacity's cluster publishes no prefix "
                    "under which that stack could tell the warm-up what it needs)"
                )
            continue
        sizes = _image_sizes(service)
        for container in _containers(service):
            name = image_name_of(container)
            if is_token(name):
                skipped.append(f"{construct_path(container)} (image named by a token)")
                continue
            fetched.append(Fetched(name, "image", sizes.get(container_name_of(container))))
            if name not in images:
                images.append(name)
        for model in _model_artifacts(service):
            if not _bucket_name_is_safe(model):
                skipped.append(f"{model.url} (a bucket named by a deploy-time value)")
                continue
            fetched.append(Fetched(model.url, "artifacts", model.size_gib))
            entry = (model.url, f"{model.bucket.bucket_name}/{model.prefix}")
            if entry not in artifacts:
                artifacts.append(entry)
                grant_artifacts.append(model)
        _share_model_volumes(service)
    if path is not None:
        for other, services in services_by_stack(capacity.services, stack).items():
            needs = _stack_needs(other, services)
            publish_needs(capacity, path, needs)
            fetched += needs.fetched
            skipped += needs.skipped
    _warn_about_moving_tags(capacity)
    capacity.root_volume_room = root_volume_room(capacity.root_volume_gib, fetched)
    if skipped:
        Validations.of(capacity).add_warning(
            rules.NOT_PREFETCHED.warning_id,
            rules.NOT_PREFETCHED.message(construct_path(capacity), f"the warm-up does not fetch {', '.join(skipped)}"),
        )
    capacity.prefetch = Prefetch(tuple(images), tuple(artifacts), path)
    repositories = sorted({arn for image in images if (arn := repository_arn(image)) is not None})
    group_arn = (
        f"arn:{Aws.PARTITION}:autoscaling:{Aws.REGION}:{Aws.ACCOUNT_ID}:autoScalingGroup:*:autoScalingGroupName/"
        f"{capacity.auto_scaling_group.auto_scaling_group_name}"
    )
    # Attached through the role by name: a policy of the role itself would be a dependency of the launch template,
    # which the group (named here) depends on.
    by_name = iam.Role.from_role_name(capacity, "WarmUpRole", capacity.role.role_name)
    complete = iam.Policy(
        capacity,
        "CompleteWarmUp",
        roles=[by_name],
        statements=[
            iam.PolicyStatement(
                sid="CompleteWarmUp", actions=["autoscaling:CompleteLifecycleAction"], resources=[group_arn]
            ),
            # What other stacks publish for the warm-up: GetParametersByPath is authorized against the path in the
            # request (Systems Manager user guide, "How Parameter Store authorizes parameter retrieval"), so this
            # names the path itself, and no parameter below it can be read one by one.
            *(
                [
                    iam.PolicyStatement(
                        sid="ReadWarmUpNeeds",
                        actions=["ssm:GetParametersByPath"],
                        resources=[f"arn:{Aws.PARTITION}:ssm:{Aws.REGION}:{Aws.ACCOUNT_ID}:parameter{path}"],
                    )
                ]
                if path is not None
                else []
            ),
        ],
    )
    compliance.acknowledge_warm_up_hook(
        complete,
        "arn:<AWS::Partition>:autoscaling:<AWS::Region>:<AWS::AccountId>:autoScalingGroup:*:autoScalingGroupName/"
        f"<{stack.resolve(stack.get_logical_id(capacity.auto_scaling_group.node.default_child))}>",  # type: ignore[arg-type]
    )
    if repositories:
        # On the role itself, so in place before the first instance pulls.
        pulls = iam.Policy(
            capacity.role,
            "WarmUp",
            roles=[capacity.role],
            statements=[
                iam.PolicyStatement(sid="RegistryToken", actions=["ecr:GetAuthorizationToken"], resources=["*"]),
                iam.PolicyStatement(
                    sid="PullImages",
                    actions=["ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"],
                    resources=repositories,
                ),
            ],
        )
        compliance.acknowledge_warm_up(pulls)
    for model in grant_artifacts:
        model.grant(capacity.role)
    cli_image = capacity.warm_pool.cli_image if capacity.warm_pool is not None else AWS_CLI
    script = warm_up_script(capacity.prefetch, region=Aws.REGION, cli_image=cli_image.reference)
    capacity.user_data.add_commands(
        f"mkdir -p {WARM_UP_FILE.rsplit('/', 1)[0]}",
        # The script goes in base64 (CloudFormation encodes it at deploy, Fn::Base64, with the deploy-time values
        # in it): nothing in it - an image reference, a bucket name, a prefix - can end the command that writes it
        # and run as a command of its own, as a line could end a heredoc.
        f"echo {Fn.base64(script)} | base64 -d > {WARM_UP_FILE}",
        f"chmod 700 {WARM_UP_FILE}",
        f"{WARM_UP_FILE}",
    )


def _stack_needs(stack: Stack, services: list[IConstruct]) -> StackNeeds:
    """What the ``services`` of another ``stack`` need on the capacity; their model volumes become the warm-up's copies
    where it copies them."""
    needs = StackNeeds(stack)
    for service in services:
        sizes = _image_sizes(service)
        for container in _containers(service):
            needs.add_image(construct_path(container), container.image_name, sizes.get(container.container_name))
        copied = [model for model in _model_artifacts(service) if needs.add_artifacts(model)]
        _share_model_volumes(service, copied)
    return needs


def _warn_about_moving_tags(capacity: AutoScalingCapacity) -> None:
    """NEURON142: the images of the services on this capacity (any stack's) named by a tag that moves, which
    ``prefer-cached`` never pulls again on an instance that holds them."""
    moving: list[str] = []
    for service in capacity.services:
        for container in _containers(service):
            name = image_name_of(container)
            tag = None if is_token(name) else moving_tag(name)
            if tag is not None and name not in moving:
                moving.append(name)
    if moving:
        Validations.of(capacity).add_warning(
            rules.MOVING_TAG_CACHED.warning_id,
            rules.MOVING_TAG_CACHED.message(
                construct_path(capacity),
                f"{', '.join(moving)} {'is' if len(moving) == 1 else 'are'} named by a tag that moves, and the "
                "capacity's agent pulls an image only when the instance does not hold it "
                "(ECS_IMAGE_PULL_BEHAVIOR=prefer-cached)",
            ),
        )


def _containers(service: IConstruct) -> list[ecs.ContainerDefinition]:
    """The container definitions of ``service``'s task definition (a ``NeuronService`` or an ECS service)."""
    task = getattr(service, "task_definition", None)
    task = getattr(task, "task_definition", task)
    if task is None:
        return []
    return [c for c in task.node.children if isinstance(c, ecs.ContainerDefinition)]


def _bucket_name_is_safe(model: ModelArtifacts) -> bool:
    """Whether the bucket name the warm-up writes into its root boot script and a task's host path is one S3 holds
    to its naming rules: a literal (aws-cdk-lib checks it) or a bucket this app creates (S3 refuses any other name).
    A name worked out at deploy time from elsewhere (a parameter, an import) could hold a quote or ``..``: such a model
    is not prefetched (NEURON124), and its task copies it itself."""
    name = model.bucket.bucket_name
    return not is_token(name) or isinstance(model.bucket.node.default_child, s3.CfnBucket)


def _share_model_volumes(service: IConstruct, only: list[ModelArtifacts] | None = None) -> None:
    """Make the model volumes of an EC2-only task of ``service`` host volumes at the warm-up's copy
    (``MODELS_DIRECTORY/<bucket>/<prefix>``): the task's sync then finds the files there and copies only what changed
    since the warm-up (from S3 to a directory, ``aws s3 sync`` leaves a file of the same size alone unless the object
    is newer, and sets a downloaded file's time to the object's: aws-cli, ``s3 sync --exact-timestamps`` help).
    ``only``: of these artifacts alone (the ones another stack published for the warm-up)."""
    task = getattr(service, "task_definition", None)
    wrapper = next(
        (c for c in (task, getattr(getattr(task, "node", None), "scope", None)) if hasattr(c, "model_volumes")), None
    )
    definition = getattr(wrapper, "task_definition", None)
    if wrapper is None or not isinstance(definition, ecs.TaskDefinition):
        return
    if definition.compatibility != ecs.Compatibility.EC2:
        return
    resource = definition.node.default_child
    assert isinstance(resource, ecs.CfnTaskDefinition)
    rendered = Stack.of(definition).resolve(resource.volumes) or []
    names = [v.get("name", v.get("Name")) if isinstance(v, dict) else None for v in rendered]
    for volume, model in wrapper.model_volumes.items():
        if volume in names and _bucket_name_is_safe(model) and (only is None or model in only):
            resource.add_property_override(
                f"Volumes.{names.index(volume)}.Host.SourcePath",
                f"{MODELS_DIRECTORY}/{model.bucket.bucket_name}/{model.prefix}",
            )


def _image_sizes(service: IConstruct) -> dict[str, float]:
    """The image sizes stated for the containers of ``service``'s task definition, by container name."""
    task = getattr(service, "task_definition", None)
    for candidate in (task, getattr(getattr(task, "node", None), "scope", None)):
        found = getattr(candidate, "image_sizes_gib", None)
        if isinstance(found, dict):
            return found
    return {}


@jsii.implements(IValidation)
class RootVolumeHoldsWarmUp:
    """NEURON091 at synth: the root volume holds the AMI and what the warm-up fetches, as far as sizes are stated."""

    def __init__(self, capacity: AutoScalingCapacity) -> None:
        self.capacity = capacity

    def validate(self) -> list[str]:
        room = self.capacity.root_volume_room
        if room is None or room.fits:
            return []
        return [
            rules.WARM_UP_ROOM.message(
                construct_path(self.capacity),
                f"the warm-up fills {room.describe()}",
                needed=room.needed_gib,
            )
        ]


def _model_artifacts(service: IConstruct) -> list[ModelArtifacts]:
    """The ``ModelArtifacts`` the task definition of ``service`` copies (recorded by the Neuron task definitions)."""
    task = getattr(service, "task_definition", None)
    for candidate in (task, getattr(getattr(task, "node", None), "scope", None)):
        found = getattr(candidate, "model_artifacts", None)
        if isinstance(found, list):
            return found
    return []
