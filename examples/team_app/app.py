"""A team's Neuron platform and its workloads, each in the stack its owners deploy.

``cdk deploy Platform`` first: the VPC, the ECS cluster, its capacity (an inf2.48xlarge Auto Scaling group for the
embedding fleet, ECS Managed Instances for the LLM), an internal load balancer (with a test listener for rollouts) and
Neuron monitoring, published in Parameter Store under ``/neuron/team`` for other CDK apps (``examples/consumer_app``).
Then each workload, on its own, in any order: ``LlmService`` (vLLM behind the platform's load
balancer on ``/v1/*``, scaling on the requests waiting for a slot and on its NeuronCore utilization, rolled out
blue/green after a smoke test and a person's approval, with its engine's compile cache on S3), ``DevModel`` (the
same engine on ``/dev/v1/*`` for the team's experiments, scaled to zero copies after half an hour without a request
and woken by the next), ``EmbeddingFleet`` (eight one-NeuronCore copies of an embedding model
on ``/embed/*``, rolled out canary: two copies first) and ``Training`` (a two-node trn1.32xlarge AWS Batch queue
with EFA on the platform's VPC). Every workload stack depends on the platform's, never the reverse: the platform
deploys first, and a workload stack deletes alone.

Context ``split`` (``-c split=...``) lays the same resources out other ways: ``a stack each`` (the default), ``platform
and workloads`` (every workload in one stack) and ``one stack``; ``-c cdkNag=true`` runs cdk-nag's AwsSolutions pack.
Context ``certificateArn`` (``-c certificateArn=arn:aws:acm:...``, an ACM certificate for the name the team's clients
use) makes the load balancer listen on HTTPS (443, TLS 1.3) instead of plain HTTP inside the VPC.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Acknowledgment, App, Aws, DefaultStackSynthesizer, Duration, Stack, Validations
from aws_cdk import aws_certificatemanager as acm
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_elasticloadbalancingv2 as elbv2
from constructs import Construct

from neuron_constructs import (
    Approval,
    CompileCache,
    ManagedNeuronTaskDefinition,
    NeuronAmi,
    NeuronCluster,
    NeuronFleet,
    NeuronLoadBalancer,
    NeuronMonitoring,
    NeuronService,
    NeuronTrainingQueue,
    Rollout,
    SmokeTest,
    VllmServer,
)
from neuron_constructs.knowledge.container_images import EMBEDDING, PYTORCH_TRAINING, VLLM, NeuronImage

SPLITS = ("a stack each", "platform and workloads", "one stack")
"""The ways the app lays its resources out in stacks (context ``split``)."""
WORKLOADS = ("LlmService", "DevModel", "EmbeddingFleet", "Training")
"""The workloads, each in a stack of its own by default."""
PORT = 8080
TEST_PORT = 8443
"""The load balancer's test listener: rollout test traffic only, from the smoke tests' security groups."""
OLDER_DRIVER_AMI = "2023.0.20260701"
"""The ECS Neuron AMI release of the embedding fleet's capacity and the training queue: the SDK 2.20 embedding image
and the SDK 2.30 training image do not run on driver 2.29 and later, which every ECS Neuron AMI built from July 7, 2026
carries (``container_images.NEEDS_AMI_BEFORE``), and no successor of either is published; this release, the newest
before that date, was built with driver 2.28, which both run on. The example app's ``OLDER_DRIVER_AMI`` gives the
sources. Move the images and this pin together."""
PUBLISHED_AS = "/neuron/team"
"""Where the platform publishes its cluster, VPC and listener in Parameter Store for other apps
(``examples/consumer_app``)."""


def dlc_image(scope: Construct, id: str, image: NeuronImage) -> ecs.ContainerImage:
    """An image of an AWS Deep Learning Containers account's private registry, which the task's execution role may
    pull."""
    assert image.ecr_account is not None
    return ecs.ContainerImage.from_ecr_repository(
        ecr.Repository.from_repository_attributes(
            scope,
            id,
            repository_name=image.repository,
            repository_arn=f"arn:{Aws.PARTITION}:ecr:{Aws.REGION}:{image.ecr_account}:repository/{image.repository}",
        ),
        image.tag,
    )


class Platform(Construct):
    """The VPC, the cluster and its capacity, the load balancer and the monitoring: what every workload uses.

    ``certificate_arn``: an ACM certificate for the load balancer's name; HTTPS on 443 with it, HTTP on 80 without."""

    def __init__(self, scope: Construct, id: str, *, certificate_arn: str | None = None) -> None:
        super().__init__(scope, id)
        self.cluster = NeuronCluster(self, "Neuron")
        # Pinned, and rolled one instance at a time when the pin changes: the embedding image needs an older driver.
        self.fleet_capacity = self.cluster.add_ec2_capacity(
            "Inf2", instance_type="inf2.48xlarge", max_capacity=2, machine_image=NeuronAmi.release(OLDER_DRIVER_AMI)
        )
        self.llm_capacity = self.cluster.add_managed_instances_capacity("Managed", instance_types=["inf2.*"])
        self.monitoring = NeuronMonitoring(self, "Monitoring", cluster=self.cluster)
        Validations.of(self.monitoring).acknowledge(
            Acknowledgment(
                id="neuron-constructs:NEURON116",
                reason="neuron-monitor runs privileged by its tag until the team pins the digest `neuron-ecs digests` "
                "reports for it (monitor_image=NEURON_MONITOR.pinned(...)); no published source gives that digest yet.",
            )
        )
        certificate = (
            acm.Certificate.from_certificate_arn(self, "Certificate", certificate_arn) if certificate_arn else None
        )
        self.https = certificate is not None
        """Whether the load balancer listens on HTTPS, for the names the team's clients use."""
        self.load_balancer = NeuronLoadBalancer(
            self, "LoadBalancer", cluster=self.cluster, certificate=certificate, test_port=TEST_PORT
        )
        self.load_balancer.add_url_output()
        self.load_balancer.publish(PUBLISHED_AS)


def tinyllama(served_model_name: str) -> VllmServer:
    """The Neuron DLC quickstart's start of the vLLM 0.16 image (its entrypoint runs the command), written by
    VllmServer with its port mapping and health check; the KV cache the model is compiled for is
    ceil(max_model_len / block_size) * max_num_seqs blocks (NxD Inference's vLLM guide), bucketing off."""
    return VllmServer(
        model="TinyLlama/TinyLlama-1.1B-Chat-v1.0",
        tensor_parallel_size=2,
        max_model_len=128,
        max_num_seqs=4,
        served_model_name=served_model_name,
        port=PORT,
        extra_args=[
            "--block-size",
            "32",
            "--num-gpu-blocks-override",
            "16",
            "--additional-config",
            '{"override_neuron_config":{"enable_bucketing":false}}',
        ],
    )


class LlmService(Construct):
    """vLLM (``VllmServer``, served as ``tinyllama``) on Managed Instances behind the platform's load balancer on
    ``/v1/*``, scaling on the requests waiting for a slot (two per copy) and on its NeuronCore utilization; a new
    version rolls out blue/green once it lists its model through the test listener and a person approved it
    (``neuron-ecs rollout approve LlmService``; unanswered within 8 hours it rolls back), and rolls back on the model's
    Neuron execution errors, 5xx answers or p99 response time."""

    def __init__(self, scope: Construct, id: str, *, platform: Platform) -> None:
        super().__init__(scope, id)
        task = ManagedNeuronTaskDefinition(self, "Vllm", cpu=8192, memory_mib=16384)
        task.add_neuron_container(
            "vllm",
            image=ecs.ContainerImage.from_registry(VLLM.uri),
            server=tinyllama("tinyllama"),
            # The engine of the vLLM 0.16 image is vLLM on NxD Inference, whose persistent cache is torch-neuronx's on
            # S3 (NEURON_COMPILE_CACHE_URL): a copy after the first loads the graphs the first compiled. No source
            # documents a CPU compile mode for it, so it is not precompiled (NEURON166 would say so).
            compile_cache=CompileCache.in_new_bucket(self, "CompileCache"),
        )
        rollout = Rollout.blue_green(smoke_test=SmokeTest("/v1/models"), approval=Approval(timeout=Duration.hours(8)))
        self.service = NeuronService(
            self,
            "Service",
            cluster=platform.cluster,
            task_definition=task,
            rollout=rollout,
        )
        self.service.attach_to_listener(
            platform.load_balancer.listener,
            conditions=[elbv2.ListenerCondition.path_patterns(["/v1/*"])],
            priority=10,
        )
        # vLLM's own queue, written by the engine-metrics sidecar every copy gets: a request that waits is what users
        # feel; requests per target say little of requests that take seconds each.
        self.service.scale_on_waiting_requests(per_copy=2, max_count=4)
        self.service.scale_on_neuron_utilization(max_count=4)


class DevModel(Construct):
    """The same engine for the team's experiments, served as ``tinyllama-dev`` on ``/dev/v1/*``: scaled to zero
    copies after 30 minutes without a request, and back to one when a request finds none (that request, and those
    until the copy is healthy, get the load balancer's 503). The platform's listener is internal HTTP; behind HTTPS
    (context ``certificateArn``) it serves production names, and the team accepts the cold start there explicitly."""

    def __init__(self, scope: Construct, id: str, *, platform: Platform) -> None:
        super().__init__(scope, id)
        task = ManagedNeuronTaskDefinition(self, "Vllm", cpu=8192, memory_mib=16384)
        task.add_neuron_container(
            "vllm", image=ecs.ContainerImage.from_registry(VLLM.uri), server=tinyllama("tinyllama-dev")
        )
        self.service = NeuronService(self, "Service", cluster=platform.cluster, task_definition=task)
        self.service.attach_to_listener(
            platform.load_balancer.listener,
            conditions=[elbv2.ListenerCondition.path_patterns(["/dev/v1/*"])],
            priority=40,
        )
        self.service.scale_on_waiting_requests(per_copy=2, min_count=0, max_count=1)
        self.service.scale_to_zero(idle=Duration.minutes(30), on_production_listener=platform.https)


class EmbeddingFleet(Construct):
    """Eight copies of an embedding model on the platform's inf2.48xlarge fleet, one NeuronCore each (cores 0-7 of
    chips 0-3), on ``/embed/*``; a new version rolls out canary, copy by copy: two copies (25 %) first, the other six
    once the model's alarms stayed quiet."""

    def __init__(self, scope: Construct, id: str, *, platform: Platform) -> None:
        super().__init__(scope, id)
        self.fleet = NeuronFleet(
            self, "Fleet", cluster=platform.cluster, instance_type="inf2.48xlarge", capacity=platform.fleet_capacity
        )
        self.embedding = self.fleet.add_model(
            "Embedding",
            cores_per_task=1,
            copies=8,
            container_name="embedding",
            image=dlc_image(self, "EmbeddingImages", EMBEDDING),
            command=["serve"],
            environment={
                "HF_MODEL_ID": "BAAI/bge-small-en-v1.5",
                "HF_TASK": "feature-extraction",
                "HF_OPTIMUM_BATCH_SIZE": "1",
                "HF_OPTIMUM_SEQUENCE_LENGTH": "512",
                "HF_NUM_CORES": "1",
            },
            port_mappings=[ecs.PortMapping(container_port=PORT)],
            rollout=Rollout.canary(percent=25),
        )
        for copy in self.embedding.task_definitions:  # on each copy's AWS::ECS::TaskDefinition, nothing wider
            Validations.of(copy.task_definition.node.default_child).acknowledge(  # type: ignore[arg-type]
                Acknowledgment(
                    id="AwsSolutions::AwsSolutions-ECS2",
                    reason="The Hugging Face inference container is configured only through environment variables; "
                    "these name the model, the task and its compiled shapes, none of them secret.",
                )
            )
        self.embedding.attach_to_listener(
            platform.load_balancer.listener,
            conditions=[elbv2.ListenerCondition.path_patterns(["/embed/*"])],
            priority=20,
            health_check_path="/ping",
        )
        self.embedding.scale_on_requests(requests_per_target=120, min_count=1, max_count=2)


class Training(Construct):
    """A two-node trn1.32xlarge queue with EFA on the platform's VPC, and one pretraining job."""

    def __init__(self, scope: Construct, id: str, *, platform: Platform) -> None:
        super().__init__(scope, id)
        self.queue = NeuronTrainingQueue(
            self,
            "Trn1",
            instance_type="trn1.32xlarge",
            max_nodes=2,
            vpc=platform.cluster.vpc,
            monitoring=True,
            machine_image=NeuronAmi.release(OLDER_DRIVER_AMI),  # the training image needs an older driver
        )
        self.job = self.queue.add_job(
            "Pretrain",
            nodes=2,
            image=ecs.ContainerImage.from_registry(PYTORCH_TRAINING.uri),
            command=["torchrun", "--nproc_per_node=32", "train.py"],
        )
        self.job.add_submit_output()


def build_app(app: App, *, split: str = SPLITS[0], certificate_arn: str | None = None) -> dict[str, Stack]:
    """The team's stacks in ``app``, laid out as ``split`` says (HTTPS with ``certificate_arn``); by name."""
    if split not in SPLITS:
        raise ValueError(f"split={split!r}: one of {', '.join(SPLITS)}")

    def stack(name: str) -> Stack:
        return Stack(app, name, synthesizer=DefaultStackSynthesizer(generate_bootstrap_version_rule=False))

    stacks: dict[str, Stack] = {}
    if split == "one stack":
        stacks["Team"] = stack("Team")
        platform = Platform(stacks["Team"], "Platform", certificate_arn=certificate_arn)
        workloads: dict[str, Any] = {
            "LlmService": stacks["Team"],
            "DevModel": stacks["Team"],
            "EmbeddingFleet": stacks["Team"],
        }
        workloads["Training"] = stacks["Team"]
    else:
        stacks["Platform"] = stack("Platform")
        platform = Platform(stacks["Platform"], "Platform", certificate_arn=certificate_arn)
        if split == "platform and workloads":
            stacks["Workloads"] = stack("Workloads")
            workloads = dict.fromkeys(WORKLOADS, stacks["Workloads"])
        else:
            workloads = {name: stacks.setdefault(name, stack(name)) for name in WORKLOADS}
    LlmService(workloads["LlmService"], "LlmService", platform=platform)
    DevModel(workloads["DevModel"], "DevModel", platform=platform)
    EmbeddingFleet(workloads["EmbeddingFleet"], "EmbeddingFleet", platform=platform)
    Training(workloads["Training"], "Training", platform=platform)
    if app.node.try_get_context("cdkNag") in (True, "true"):
        from cdk_nag import AwsSolutionsChecks

        Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return stacks


if __name__ == "__main__":
    team = App(analytics_reporting=False)
    build_app(
        team,
        split=str(team.node.try_get_context("split") or SPLITS[0]),
        certificate_arn=team.node.try_get_context("certificateArn"),
    )
    team.synth()
