"""Deploy a CDK app with the real ``cdk`` CLI to a local AWS endpoint: a moto server on 127.0.0.1.

``python -m neuron_constructs.local_endpoint`` (``make deploy-local``); :mod:`.deploy` runs the CLI against the
server, :mod:`.moto_server` is the server itself.
"""

from neuron_constructs.local_endpoint.deploy import (
    DeployedStack,
    LocalAwsEndpoint,
    LocalEndpointError,
    attached_endpoint,
    deploy_app,
    describe_deployed,
    local_aws_endpoint,
    main,
)

__all__ = [
    "DeployedStack",
    "LocalAwsEndpoint",
    "LocalEndpointError",
    "attached_endpoint",
    "deploy_app",
    "describe_deployed",
    "local_aws_endpoint",
    "main",
]
