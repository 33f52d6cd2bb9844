"""The warm-up of services another stack places on a warm-pooled capacity: the model stack publishes what they need
(images, model artifact prefixes, sizes) under the capacity's Parameter Store path and grants the capacity's instance
role exactly that; the capacity's user data reads the path at boot (:mod:`neuron_constructs.knowledge.warm_up_needs`).

Neither stack depends on the other more than before: the platform's template names only the path (a literal under the
prefix its cluster publishes), the model stack's template names the path and the instance role (an import of the
platform stack's, which the model stack already depends on).

**Who grants the instance role what the model needs.** The platform cannot name at synthesis the ECR repositories and
S3 prefixes of models deployed later, so one of three parties must:

* the model stack adds an IAM policy to the capacity's instance role, naming exactly its own repositories and prefixes
  (this module's choice);
* the platform lets its instance role pull any repository of its account (``repository/*``, or a condition on a
  tag) and read any bucket: every instance could then read every model and image of the account, whoever deploys
  them - a grant no reviewer of least privilege accepts for a role the instances' containers can reach;
* the model's bucket and repository policies name the instance role: only for resources the model stack creates
  (an imported bucket or a DLC registry of another account cannot take a policy from it), so it covers fewer cases
  for the same scope.

The first keeps each grant to the resources one model uses (``ecr:BatchGetImage``, ``ecr:GetDownloadUrlForLayer``,
``ecr:BatchCheckLayerAvailability`` on its repositories; ``s3:GetObject`` under its prefixes and ``s3:ListBucket``
of those prefixes; ``ecr:GetAuthorizationToken``, which takes no resource), and ties its lifetime to the model: the
policy is a resource of the model stack, deleted with it. The model stack's deploying role needs
``iam:PutRolePolicy`` on the instance role (with the CDK's default bootstrap, the account's CloudFormation execution
role has it). A principal that can write under the warm-up path can make the instances pull what the role may pull
and any public image, never run it: the warm-up runs nothing it pulls, and the task definitions name what runs.
Who may write there: :func:`~neuron_constructs.compute.published.warm_up_write_protection`.

The stacks that publish are those of the capacity's own CDK app: a service is placed on an Auto Scaling capacity by
the capacity object, and another app, which reads the platform through Parameter Store only
(:class:`~neuron_constructs.serving.published_platform.PublishedPlatform`), runs on capacity it adds itself. The
format (:mod:`neuron_constructs.knowledge.warm_up_needs`) is all such an app would need to write to the path.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from aws_cdk import Aws, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_ssm as ssm
from constructs import Construct, IConstruct

from neuron_constructs.base import compliance
from neuron_constructs.base.arguments import is_token
from neuron_constructs.base.tree import construct_path
from neuron_constructs.compute.model_sources import ModelArtifacts
from neuron_constructs.knowledge.warm_start import Fetched, ecr_registry
from neuron_constructs.knowledge.warm_up_needs import (
    MOST_ENTRIES,
    MOST_VALUE_CHARACTERS,
    NAME_PATTERN,
    NEEDS_FORMAT,
    NEEDS_PATTERN,
    Need,
    artifact_needs,
    image_needs,
    needs_path,
    needs_value,
)

if TYPE_CHECKING:
    from neuron_constructs.compute.auto_scaling import AutoScalingCapacity

__all__ = ["ALLOWED_VALUE", "StackNeeds", "capacity_needs_path", "publish_needs", "repository_arn", "services_by_stack"]

ALLOWED_VALUE = f"^{re.escape(NEEDS_FORMAT)}( {NEEDS_PATTERN}){{0,{MOST_ENTRIES}}}$"
"""The ``AllowedPattern`` of every needs parameter: Parameter Store refuses another value on ``PutParameter``."""
_BUCKET_STAND_IN = "b" * 63
"""A bucket name the app creates is known at deploy time only: its words are measured and checked with the longest
name S3 allows (63 characters; S3 names the buckets it generates to its rules)."""


def repository_arn(image: str) -> str | None:
    """The ARN of the private ECR repository ``image`` names (in the Region its registry names), else ``None``."""
    registry = ecr_registry(image)
    if registry is None:
        return None
    name = image.split("/", 1)[1].split("@", 1)[0].rsplit(":", 1)[0]
    return f"arn:{Aws.PARTITION}:ecr:{registry[1]}:{image.split('.', 1)[0]}:repository/{name}"


def capacity_needs_path(capacity: AutoScalingCapacity) -> str | None:
    """The Parameter Store path the warm-up of ``capacity`` reads, ``<prefix>/warm-up/<capacity id>``: under the first
    prefix its cluster publishes under (``NeuronCluster.publish``), its id with any character a parameter name does not
    take as ``-``; ``None`` when the cluster publishes nothing (other stacks cannot tell its warm-up: NEURON124)."""
    prefixes = getattr(capacity.node.scope, "published_prefixes", None)
    if not prefixes:
        return None
    key = re.sub(r"[^A-Za-z0-9_.-]", "-", capacity.node.id)[:128]
    return needs_path(prefixes[0], key)


@dataclass
class StackNeeds:
    """What the services of one other stack need on a capacity: the needs to publish, the ECR repositories and model
    artifacts to grant, what the warm-up fetches (for the room check) and what it cannot (NEURON124)."""

    stack: Stack
    needs: list[Need] = field(default_factory=list)
    repositories: list[str] = field(default_factory=list)
    artifacts: list[ModelArtifacts] = field(default_factory=list)
    fetched: list[Fetched] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    length: int = len(NEEDS_FORMAT)

    def add(self, need: Need, measured: str, what: str) -> bool:
        """Add ``need`` (its word measured as ``measured``) when the value still holds it; else record it skipped.
        Each image or prefix once (the first size stated for it)."""
        if any(n.kind == need.kind and n.what == need.what for n in self.needs):
            return True
        if len(self.needs) >= MOST_ENTRIES or self.length + 1 + len(measured) > MOST_VALUE_CHARACTERS:
            self.skipped.append(f"{what} (beyond what one parameter holds: {MOST_ENTRIES} needs, 4 KB)")
            return False
        self.needs.append(need)
        self.length += 1 + len(measured)
        self.fetched.append(Fetched(need.url, need.kind, need.size_gib))
        return True

    def add_image(self, where: str, reference: str, size_gib: float | None) -> None:
        """An image of a container at ``where``."""
        if is_token(reference):
            self.skipped.append(f"{where} (image named by a token)")
            return
        need = image_needs(reference, size_gib)
        if need is None:
            self.skipped.append(f"{where} (an image reference the warm-up does not accept: {reference[:120]})")
            return
        if self.add(need, need.word, where):
            arn = repository_arn(reference)
            if arn is not None and arn not in self.repositories:
                self.repositories.append(arn)

    def add_artifacts(self, model: ModelArtifacts) -> bool:
        """Model artifacts; whether the warm-up copies them."""
        name = model.bucket.bucket_name
        created = isinstance(model.bucket.node.default_child, s3.CfnBucket)
        if is_token(name) and not created:
            self.skipped.append(f"{model.url} (a bucket named by a deploy-time value)")
            return False
        check = artifact_needs(_BUCKET_STAND_IN if is_token(name) else name, model.prefix, model.size_gib)
        if check is None:
            self.skipped.append(f"{model.url} (a bucket or prefix the warm-up does not accept)")
            return False
        need = Need("artifacts", f"{name}/{model.prefix}", model.size_gib)
        if not self.add(need, check.word, model.url):
            return False
        if model not in self.artifacts:
            self.artifacts.append(model)
        return True


def publish_needs(capacity: AutoScalingCapacity, path: str, needs: StackNeeds) -> None:
    """In ``needs.stack``: the parameter ``<path>/<stack name>`` holding the needs, and the policy on the capacity's
    instance role (imported by name) that pulls their repositories and reads their prefixes; nothing when there is
    nothing to publish."""
    if not needs.needs:
        return
    stack = needs.stack
    key = stack.stack_name if not is_token(stack.stack_name) else stack.artifact_id
    key = key if re.fullmatch(NAME_PATTERN, key) else re.sub(r"[^A-Za-z0-9_.-]", "-", stack.artifact_id)[:128]
    scope = Construct(stack, f"WarmUpNeeds-{re.sub(r'[^A-Za-z0-9]', '', construct_path(capacity))[:200]}")
    ssm.StringParameter(
        scope,
        "Needs",
        parameter_name=f"{path}/{key}",
        string_value=needs_value(needs.needs),
        description=f"What {key}'s services need on {construct_path(capacity)}, fetched at warm-up (neuron-constructs)",
        tier=ssm.ParameterTier.STANDARD,
        allowed_pattern=ALLOWED_VALUE,
    )
    role = iam.Role.from_role_name(scope, "InstanceRole", capacity.role.role_name)
    if needs.repositories:
        pulls = iam.Policy(
            scope,
            "Pulls",
            roles=[role],
            statements=[
                iam.PolicyStatement(sid="RegistryToken", actions=["ecr:GetAuthorizationToken"], resources=["*"]),
                iam.PolicyStatement(
                    sid="PullImages",
                    actions=["ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"],
                    resources=sorted(needs.repositories),
                ),
            ],
        )
        compliance.acknowledge_warm_up(pulls)
    for model in needs.artifacts:
        model.grant(role)


def services_by_stack(services: Sequence[IConstruct], home: Stack) -> dict[Stack, list[IConstruct]]:
    """The services of ``services`` in stacks other than ``home``, by stack, in order."""
    found: dict[Stack, list[IConstruct]] = {}
    for service in services:
        stack = Stack.of(service)
        if stack is not home:
            found.setdefault(stack, []).append(service)
    return found
