"""A second team's model on the team app's platform, from another CDK app.

The platform app (``examples/team_app``) publishes its cluster, VPC and load balancer listener in Parameter Store under
``/neuron/team`` (``NeuronLoadBalancer.publish``). This app imports them in one call (``PublishedPlatform``), adds a
Managed Instances capacity of its own to the platform's cluster, and serves a chat model on it behind the platform's
load balancer on ``/chat/*`` with a listener rule of its own (priority 30: the team app holds 10, 20 and 40). Its stack
names the parameters, never the platform's stacks: deploy the platform first, then ``cdk deploy Chat`` here, from
another repository if you like; either app deploys and deletes without the other's stacks changing.
"""

from __future__ import annotations

from aws_cdk import App, DefaultStackSynthesizer, Stack
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_elasticloadbalancingv2 as elbv2
from constructs import Construct

from neuron_constructs import ManagedNeuronTaskDefinition, NeuronService, PublishedPlatform
from neuron_constructs.knowledge.container_images import VLLM

PLATFORM = "/neuron/team"
"""Where the platform app published itself (its ``PUBLISHED_AS``)."""
PORT = 8080


class ChatService(Construct):
    """vLLM serving a small chat model on Managed Instances in the platform's cluster, on ``/chat/*``."""

    def __init__(self, scope: Construct, id: str, *, platform: PublishedPlatform) -> None:
        super().__init__(scope, id)
        # Managed Instances capacity is created in the imported cluster; the platform's capacities stay its own.
        platform.cluster.add_managed_instances_capacity("Managed", instance_types=["inf2.xlarge"])
        task = ManagedNeuronTaskDefinition(self, "Vllm", cpu=4096, memory_mib=12288)
        task.add_neuron_container(
            "vllm",
            image=ecs.ContainerImage.from_registry(VLLM.uri),
            command=[
                "vllm",
                "serve",
                "--model",
                "Qwen/Qwen2.5-0.5B-Instruct",
                "--served-model-name",
                "chat",
                "--port",
                str(PORT),
                "--tensor-parallel-size",
                "2",
                "--max-num-seqs",
                "4",
                "--max-model-len",
                "128",
            ],
            port_mappings=[ecs.PortMapping(container_port=PORT)],
        )
        self.service = NeuronService(self, "Service", cluster=platform.cluster, task_definition=task)
        self.service.attach_to_listener(
            platform.listener,
            conditions=[elbv2.ListenerCondition.path_patterns(["/chat/*"])],
            priority=30,
        )


def build_app(app: App, *, platform: str = PLATFORM) -> Stack:
    """The consumer's one stack, ``Chat``, on the platform published under ``platform``."""
    stack = Stack(app, "Chat", synthesizer=DefaultStackSynthesizer(generate_bootstrap_version_rule=False))
    ChatService(stack, "Chat", platform=PublishedPlatform(stack, "Platform", prefix=platform))
    return stack


if __name__ == "__main__":
    consumer = App(analytics_reporting=False)
    build_app(consumer, platform=str(consumer.node.try_get_context("platform") or PLATFORM))
    consumer.synth()
