"""The moto server behind the local endpoint, with CloudFormation custom resources answered.

moto runs the Lambda function behind a custom resource (``Custom::*``) in Docker and waits for its
response; without Docker it never comes, and the stack stays ``CREATE_IN_PROGRESS`` forever. This
server marks each custom resource created, with no data, without running the function - the
example stacks' only custom resource is aws-cdk-lib's, which strips the rules of a new VPC's
default security group - and :mod:`neuron_constructs.deployment_report` lists every custom
resource as not run, so the gap is stated rather than hidden.

``python -m neuron_constructs.local_moto --host 127.0.0.1 --port PORT`` takes moto's server options.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

__all__ = ["answer_custom_resources", "main"]


def answer_custom_resources() -> None:
    """Make moto create custom resources at once, without invoking their Lambda functions."""
    from moto.cloudformation import custom_model
    from moto.cloudformation.models import cloudformation_backends
    from moto.moto_api._internal import mock_random

    model: Any = custom_model.CustomModel

    def create_without_running(
        cls: Any,
        /,
        resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
        **kwargs: Any,
    ) -> Any:
        resource = model(region_name, str(mock_random.uuid4()), kwargs["LogicalId"], resource_name)
        stack = cloudformation_backends[account_id][region_name].get_stack(kwargs["StackId"])
        stack.add_custom_resource(resource)
        resource.set_data({})
        return resource

    model.create_from_cloudformation_json = classmethod(create_without_running)


def main(argv: Sequence[str] | None = None) -> None:
    from moto import server

    answer_custom_resources()
    server.main(list(argv) if argv is not None else sys.argv[1:])


if __name__ == "__main__":
    main()
