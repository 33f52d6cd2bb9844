"""What the commands of ``neuron-ecs`` that call AWS share: a boto3 session in the region asked for, and a sentence
for each AWS error (no credentials, no region, a timeout, access denied with the permissions the command needs)."""

from __future__ import annotations

import argparse
import os
from typing import Any

_REQUIRED_PERMISSIONS = {
    "inspect": "ecs:ListContainerInstances, ecs:DescribeContainerInstances, ecs:ListTasks, ecs:DescribeTasks "
    "and ecs:DescribeTaskDefinition",
    "ami": "ssm:GetParameters and ssm:GetParametersByPath on the public /aws/service/ecs/* parameters",
    "doctor": "the doctor policy's read-only calls (DoctorPolicy, or neuron_constructs/knowledge/doctor-policy.json)",
    "plan": "cloudformation:GetTemplate on the app's stacks (--deployed), pricing:GetProducts (--prices-from-aws)",
    "rollout": "cloudformation:ListStackResources on the stack, ecs:ListServiceDeployments and "
    "ecs:DescribeServiceDeployments, and to answer ecs:ContinueServiceDeployment or ecs:StopServiceDeployment",
    "precompile": "cloudformation:DescribeStackResource on the model's stack, batch:SubmitJob on its precompile job "
    "queue and job definition, and batch:DescribeJobs",
}


def _session(args: argparse.Namespace) -> Any:
    """A boto3 session in ``--region``, else ``AWS_REGION`` (as the AWS CLI reads it), else the SDK's default; with
    the named ``--profile`` where the command takes one."""
    import boto3

    return boto3.Session(
        region_name=args.region or os.environ.get("AWS_REGION") or None, profile_name=getattr(args, "profile", None)
    )


def _region(session: Any) -> str:
    from botocore.exceptions import NoRegionError

    if not session.region_name:
        raise NoRegionError()
    return str(session.region_name)


def _explain(error: BaseException, command: str, args: argparse.Namespace) -> str | None:
    """A sentence for an AWS error, or ``None`` if ``error`` is not one."""
    from botocore.exceptions import (
        BotoCoreError,
        ClientError,
        ConnectTimeoutError,
        EndpointConnectionError,
        NoCredentialsError,
        NoRegionError,
        PartialCredentialsError,
        ReadTimeoutError,
    )

    from neuron_constructs.knowledge.ami import AmiNotPublishedError, NotSsmAnswerError
    from neuron_constructs.tools.inspection import (
        CONNECT_TIMEOUT_S,
        MAX_ATTEMPTS,
        READ_TIMEOUT_S,
        UnexpectedResponseError,
    )

    region = (
        getattr(args, "region", None)
        or os.environ.get("AWS_REGION")
        or os.environ.get("AWS_DEFAULT_REGION")
        or "your region"
    )
    if isinstance(error, AmiNotPublishedError):
        return str(error)
    if isinstance(error, UnexpectedResponseError | NotSsmAnswerError):
        return f"The endpoint answered, but {error}: check --endpoint-url and any proxy in between."
    if isinstance(error, ReadTimeoutError | ConnectTimeoutError):
        waited = CONNECT_TIMEOUT_S if isinstance(error, ConnectTimeoutError) else READ_TIMEOUT_S
        return (
            f"{error.kwargs.get('endpoint_url')} did not answer within {waited} s, {MAX_ATTEMPTS} times: "
            "check the network, the region or --endpoint-url."
        )
    if isinstance(error, NoCredentialsError | PartialCredentialsError):
        return (
            "No AWS credentials were found: set AWS_PROFILE (and run aws sso login if it uses SSO), "
            "or export AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY."
        )
    if isinstance(error, NoRegionError):
        return "No AWS region is set: pass --region or set AWS_REGION."
    if isinstance(error, EndpointConnectionError):
        return (
            f"Could not connect to {error.kwargs.get('endpoint_url')}: check the region, the network or --endpoint-url."
        )
    if isinstance(error, ClientError):
        code = error.response.get("Error", {}).get("Code", "")
        message = error.response.get("Error", {}).get("Message", "")
        operation = error.operation_name
        if code == "ClusterNotFoundException":
            return (
                f"Cluster {getattr(args, 'cluster', None)!r} was not found in {region}: check the name and region "
                f"(aws ecs list-clusters --region {region})."
            )
        if "AccessDenied" in code or code in ("UnauthorizedOperation", "UnrecognizedClientException"):
            return (
                f"Access denied for {operation} in {region}: neuron-ecs {command} needs "
                f"{_REQUIRED_PERMISSIONS.get(command, 'permission for it')}. AWS said: {message}"
            )
        if code in ("ExpiredTokenException", "ExpiredToken", "InvalidClientTokenId"):
            return f"Your AWS credentials were refused ({code}): refresh them and try again."
        if code in ("ThrottlingException", "TooManyRequestsException"):
            return f"AWS kept throttling {operation} after retries: try again in a minute."
        return f"AWS refused {operation} in {region} ({code}): {message}"
    if isinstance(error, BotoCoreError):
        return f"The AWS SDK could not complete the request: {error}"
    return None
