"""Deploy a CDK app with the real ``cdk`` CLI to a local AWS endpoint: a moto server on 127.0.0.1.

``python -m neuron_constructs.local_endpoint`` (``make deploy-local``); :mod:`.deploy` deploys the app and is the
command, :mod:`.start_or_attach` starts the server or attaches to one, :mod:`.endpoint` is how a process reaches it,
:mod:`.cdk_cli` and :mod:`.synth` run the CLI against it, :mod:`.ami_releases` publishes the AMI releases the app pins,
:mod:`.report` is what the command prints, and :mod:`.moto_server` is the server itself.
"""

from neuron_constructs.local_endpoint.deploy import DeployedStack, deploy_app, main
from neuron_constructs.local_endpoint.endpoint import LocalAwsEndpoint, LocalEndpointError
from neuron_constructs.local_endpoint.report import describe_deployed
from neuron_constructs.local_endpoint.start_or_attach import attached_endpoint, local_aws_endpoint

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
