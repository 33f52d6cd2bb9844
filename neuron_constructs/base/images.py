"""Images a task can pull: an ECR image named by its URI gets the pull its execution role needs.

``ecs.ContainerImage.from_registry("<account>.dkr.ecr.<region>.amazonaws.com/<repository>:<tag>")`` names a private
ECR image but, unlike ``from_ecr_repository``, grants nothing: aws-cdk-lib only warns
(``@aws-cdk/aws-ecs:ecrImageRequiresPolicy``) and the task would never pull its image. An ECS container's image is
granted here to its task's execution role, scoped to the one repository, and aws-cdk-lib's warning acknowledged;
an AWS Batch container, which keeps its image name to itself, is refused with the call that grants it (NEURON062).
"""

from __future__ import annotations

import re

from aws_cdk import Annotations
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from constructs import IConstruct

from neuron_constructs.base.arguments import is_token
from neuron_constructs.base.tree import kept
from neuron_constructs.knowledge import rules

__all__ = ["ECR_PULL_WARNING", "container_name_of", "grant_ecr_pull", "image_name_of", "refuse_ungranted_ecr_image"]

ECR_PULL_WARNING = "@aws-cdk/aws-ecs:ecrImageRequiresPolicy"
"""The warning aws-cdk-lib gives an ECR image named by URI."""
_ECR_IMAGE = re.compile(
    r"(?P<account>\d{12})\.dkr\.ecr(?:-fips)?\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(?P<china>\.cn)?/"
    r"(?P<repository>[a-z0-9][a-z0-9._/-]*?)(?::[\w][\w.-]*)?(?:@sha256:[0-9a-f]{64})?"
)


def image_name_of(container: ecs.ContainerDefinition) -> str:
    """``container.image_name``, asked of the CDK's runtime once: a container's image is given when it is made and
    never changes (the library reads it for each check of the image, the ECR pull, the warm-up and the driver)."""
    return kept(container, "_neuron_constructs_image_name", lambda: container.image_name)


def container_name_of(container: ecs.ContainerDefinition) -> str:
    """``container.container_name``, asked of the CDK's runtime once: it is given when the container is made and
    never changes."""
    return kept(container, "_neuron_constructs_container_name", lambda: container.container_name)


def grant_ecr_pull(container: ecs.ContainerDefinition, role: iam.IRole) -> None:
    """Let ``role`` pull ``container``'s image when it is an ECR image named by URI (what ``from_ecr_repository``
    grants: the repository's layers and images, and the registry token); nothing for any other image."""
    name = image_name_of(container)
    match = None if is_token(name) else _ECR_IMAGE.fullmatch(name)
    if match is None:
        return
    partition = "aws-cn" if match["china"] else "aws-us-gov" if match["region"].startswith("us-gov-") else "aws"
    repository = ecr.Repository.from_repository_attributes(
        container,
        "ImageRepository",
        repository_name=match["repository"],
        repository_arn=f"arn:{partition}:ecr:{match['region']}:{match['account']}:repository/{match['repository']}",
    )
    repository.grant_pull(role)
    Annotations.of(container).acknowledge_warning(
        ECR_PULL_WARNING, "neuron_constructs grants the task's execution role the pull of this repository"
    )


def refuse_ungranted_ecr_image(path: str, container: IConstruct) -> None:
    """NEURON062 when aws-cdk-lib warned that ``container``'s ECR image comes with no pull permission."""
    warned = any(
        entry.type == "aws:cdk:warning" and ECR_PULL_WARNING in str(entry.data) for entry in container.node.metadata
    )
    if warned:
        raise rules.UNGRANTED_ECR_IMAGE.error(path, "image is an ECR image named by its URI, with no pull permission")
