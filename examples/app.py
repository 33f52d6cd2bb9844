"""Example stacks: Neuron inference on ECS Managed Instances, on EC2, a mixed cluster, sliced instances, a RAG fleet,
vLLM on Trainium2 with a pinned AMI and a warm pool, and distributed training on AWS Batch.

Each stack deploys alone::

    npx cdk deploy NeuronInferenceManaged

Context (``-c key=value``): ``modelId`` (Hugging Face model served by vLLM,
default TinyLlama/TinyLlama-1.1B-Chat-v1.0), ``embeddingModelId`` (the RAG fleet's
embedding model, default BAAI/bge-small-en-v1.5), ``inf1ImageTag`` (tag of the
Inf1 serving image pushed to the mixed stack's ECR repository, default v1) and ``trainingScript`` (the
training stack's script in its dataset bucket, default train.py).
"""

from __future__ import annotations

import json
from typing import Any

from aws_cdk import Acknowledgment, App, Aws, CfnOutput, DefaultStackSynthesizer, RemovalPolicy, Stack, Validations
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_elasticloadbalancingv2 as elbv2
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from constructs import Construct

from neuron_constructs import (
    AmiRollout,
    CompileCache,
    LustreStorage,
    ManagedNeuronTaskDefinition,
    ManualNeuronTaskDefinition,
    NeuronAmi,
    NeuronCluster,
    NeuronFleet,
    NeuronInstanceType,
    NeuronLoadBalancer,
    NeuronMonitoring,
    NeuronService,
    NeuronTrainingQueue,
    Precompile,
    Rollout,
    SlicedNeuronService,
    WarmPool,
)
from neuron_constructs.knowledge import rules
from neuron_constructs.knowledge.container_images import (
    EMBEDDING,
    INF1_INFERENCE,
    PYTORCH_TRAINING,
    VLLM,
    VLLM_TRN2,
)

DEFAULT_MODEL_ID = "TinyLlama/TinyLlama-1.1B-Chat-v1.0"
DEFAULT_EMBEDDING_MODEL_ID = "BAAI/bge-small-en-v1.5"
VLLM_PORT = 8080
VLLM_LIMITS = {"--max-num-seqs": 4, "--max-model-len": 128, "--block-size": 32}
"""The Neuron DLC quickstart's server limits for the vLLM 0.16 image (sequences at once, tokens per sequence, KV
cache block). The model is compiled for them; raise ``--max-model-len`` for longer conversations."""
REQUESTS_PER_REPLICA_PER_MINUTE = 60
"""Request scaling target of the examples: one request a second per model replica, on average over a minute."""

OLDER_DRIVER_AMI = "2023.0.20260701"
"""The ECS Neuron AMI release the examples' SDK 2.20 embedding image and SDK 2.30 training image run on.

Neither runs on the newest Neuron driver: Neuron 2.31.0 (July 7, 2026) shipped driver 2.29, which "requires Neuron
Runtime Library 2.33 or later" (runtime release notes, Neuron 2.31.0, Known Issues), and every ECS Neuron AMI built
since carries it (``container_images.NEEDS_AMI_BEFORE``). No successor fits: the ``pytorch-training-neuronx`` DLC
stopped at SDK 2.30.0 (container release notes, Neuron 2.31.0), no source found publishes the tag of the SDK 2.33
TorchNeuron training DLC, and the newest Hugging Face Neuron inference DLC found in public sources is SDK 2.26.0's
(PyTorch 2.8.0, transformers 4.55.4), older than 2.31.0, whose runtime 2.33 is the first that driver 2.29 runs.

So the capacity that runs them is pinned to this release, the newest before July 7, 2026 in the region's list
(``neuron-ecs ami --releases``; moto 5.2.5's copy of the public ``/aws/service/ecs/optimized-ami/amazon-linux-2023/
neuron`` parameters, us-east-1, lists 20260609, 20260615, 20260618, 20260629 and 20260701 between the two drivers):
built with driver 2.28 (Neuron 2.30.0, May 21, 2026), the newest driver both images run on. It carries no AMI update
since July 2026, the price of these images until a successor is published: move them and this pin together."""

TRN2_AMI = "2023.0.20261113"
"""The ECS Neuron AMI release the Trainium2 example pins: built with driver 2.31 or later (Neuron 2.33.0, October 19,
2026, shipped 2.31; the AMI is dated two days after Neuron 2.33.1, whose driver no source gives, so
``neuron_releases.ami_driver`` derives the floor), the driver of the SDK 2.33 vLLM image's own release, whose runtime
2.35 runs on driver 2.27 or later. No public source at hand lists this release's parameters (moto 5.2.5's copy of
them ends at 2023.0.20260922; the local endpoint publishes it, with a stand-in image id): run ``neuron-ecs ami
--releases`` in your Region before you deploy, and pin the newest release it lists whose driver ``ami_driver``
derives as 2.27 or later."""


def vllm_command(*, model_id: str, tensor_parallel_size: int) -> list[str]:
    """``vllm serve`` of ``model_id`` on port 8080, as the Neuron DLC quickstart starts the vLLM 0.16 image.

    The image's entrypoint runs its arguments as a command. ``--num-gpu-blocks-override`` is the KV cache the
    model is compiled for, ``ceil(max_model_len / block_size) * max_num_seqs`` blocks (NxD Inference's vLLM
    guide, known issues), and bucketing is off, as in the quickstart.
    """
    limits = [str(part) for flag, value in VLLM_LIMITS.items() for part in (flag, value)]
    blocks = -(-VLLM_LIMITS["--max-model-len"] // VLLM_LIMITS["--block-size"]) * VLLM_LIMITS["--max-num-seqs"]
    return [
        "vllm",
        "serve",
        "--model",
        model_id,
        "--port",
        str(VLLM_PORT),
        "--tensor-parallel-size",
        str(tensor_parallel_size),
        *limits,
        "--num-gpu-blocks-override",
        str(blocks),
        "--additional-config",
        '{"override_neuron_config":{"enable_bucketing":false}}',
    ]


def vllm_container_options(
    *, model_id: str, tensor_parallel_size: int, dynamic_host_port: bool = False
) -> dict[str, Any]:
    """Options for a vLLM Neuron inference container serving ``model_id`` on port 8080.

    The image (:data:`~neuron_constructs.knowledge.container_images.VLLM`, from the Neuron team's public
    registry: nothing to grant) downloads the model, compiles it for Neuron and serves an OpenAI-compatible API.
    ``tensor_parallel_size`` is the NeuronCores the model spans (chips x cores per chip). With
    ``dynamic_host_port`` the bridge network picks the host port, so several copies share an instance.
    """
    return {
        "image": ecs.ContainerImage.from_registry(VLLM.uri),
        "command": vllm_command(model_id=model_id, tensor_parallel_size=tensor_parallel_size),
        "port_mappings": [
            ecs.PortMapping(container_port=VLLM_PORT)
            if dynamic_host_port
            else ecs.PortMapping(container_port=VLLM_PORT, host_port=VLLM_PORT)
        ],
        "essential": True,
    }


class NeuronInferenceManaged(Stack):
    """vLLM on Inferentia2/Trainium (Inf2 and Trn1) through ECS Managed Instances, managed device allocation, behind an
    internal load balancer (its URL is the stack output ``LoadBalancerUrl``).

    The capacity launches only inf2 and trn1 types: the vLLM 0.16 image runs NxD Inference, which Neuron no longer
    supports on Trn2 and Trn3 from Neuron 2.34.0, so a service of it on capacity that may launch trn2 is refused
    (NEURON131); Trn2 serves with the vLLM Neuron image (``NeuronInferenceTrn2``)."""

    def __init__(self, scope: Construct, id: str, *, model_id: str, **kwargs: Any) -> None:
        super().__init__(scope, id, **kwargs)
        self.neuron = NeuronCluster(self, "Neuron")
        self.neuron.add_managed_instances_capacity(
            "ManagedInstances", accelerators=["inferentia2", "trainium"], instance_types=["inf2.*", "trn1.*"]
        )
        self.monitoring = NeuronMonitoring(self.neuron, "Monitoring", cluster=self.neuron)
        self.task_definition = ManagedNeuronTaskDefinition(self, "Vllm", cpu=8192, memory_mib=16384)
        self.task_definition.add_neuron_container(
            "vllm", **vllm_container_options(model_id=model_id, tensor_parallel_size=2)
        )
        self.service = NeuronService(self, "Service", cluster=self.neuron, task_definition=self.task_definition)
        self.load_balancer = NeuronLoadBalancer(self, "LoadBalancer", cluster=self.neuron)
        self.service.attach_to_listener(self.load_balancer.listener)
        self.load_balancer.add_url_output()


class NeuronInferenceEc2(Stack):
    """vLLM on an inf2.xlarge Auto Scaling group, manual /dev/neuron0 mapping."""

    def __init__(self, scope: Construct, id: str, *, model_id: str, **kwargs: Any) -> None:
        super().__init__(scope, id, **kwargs)
        self.neuron = NeuronCluster(self, "Neuron")
        self.neuron.add_ec2_capacity("Inf2", instance_type="inf2.xlarge", max_capacity=2)
        self.monitoring = NeuronMonitoring(self.neuron, "Monitoring", cluster=self.neuron)
        self.task_definition = ManualNeuronTaskDefinition(
            self, "Vllm", instance_type="inf2.xlarge", cpu=4096, memory_mib=12288
        )
        self.task_definition.add_neuron_container(
            "vllm", **vllm_container_options(model_id=model_id, tensor_parallel_size=2)
        )
        self.service = NeuronService(self, "Service", cluster=self.neuron, task_definition=self.task_definition)


class NeuronSlicedVllm(Stack):
    """vLLM replicas on contiguous device slices of one Neuron type: ``chips / devices_per_task`` per instance.

    The examples: six 2-chip replicas per inf2.48xlarge (``NeuronSlicedInf2``), four 4-chip
    slices per trn1.32xlarge on two instances (``NeuronSlicedTrn1``; the trn1 torus allows
    1, 4, 8 or 16 chips). Tensor parallelism spans the slice's NeuronCores. Every replica sits
    behind one internal load balancer target group (URL: stack output ``LoadBalancerUrl``), and the
    slices scale together on requests, up to the capacity's two instances.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        model_id: str,
        instance_type: str,
        capacity_id: str,
        devices_per_task: int,
        instances: int,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, id, **kwargs)
        instance = NeuronInstanceType.of(instance_type)
        self.neuron = NeuronCluster(self, "Neuron")
        self.neuron.add_ec2_capacity(capacity_id, instance_type=instance.name, max_capacity=2)
        self.monitoring = NeuronMonitoring(self.neuron, "Monitoring", cluster=self.neuron)
        # Slices after the first load the graphs the first compiled (NEURON_COMPILE_CACHE_URL on S3).
        self.compile_cache = CompileCache.in_new_bucket(self, "CompileCache")
        self.vllm = SlicedNeuronService(
            self,
            "Vllm",
            cluster=self.neuron,
            instance_type=instance.name,
            devices_per_task=devices_per_task,
            instances=instances,
            container_name="vllm",
            compile_cache=self.compile_cache,
            **vllm_container_options(
                model_id=model_id,
                tensor_parallel_size=devices_per_task * instance.neuron_cores_per_chip,
                dynamic_host_port=True,
            ),
        )
        self.load_balancer = NeuronLoadBalancer(self, "LoadBalancer", cluster=self.neuron)
        self.vllm.attach_to_listener(self.load_balancer.listener)
        self.vllm.scale_on_requests(
            requests_per_target=REQUESTS_PER_REPLICA_PER_MINUTE, min_count=instances, max_count=2
        )
        self.vllm.scale_on_neuron_utilization(min_count=instances, max_count=2)
        self.load_balancer.add_url_output()


class NeuronRagFleet(Stack):
    """The usual retrieval-augmented generation pair on one inf2.48xlarge fleet, behind one internal load balancer.

    An LLM (vLLM, two copies of 4 chips: devices 0-3 and 4-7) on ``/v1/*`` and an embedding model (the Hugging
    Face Neuron inference container, eight copies of one NeuronCore each: cores 16-23 of devices 8-11, each copy
    naming its core in ``NEURON_RT_VISIBLE_CORES``) on ``/invocations``.
    Each model's copies deploy in two waves, so both keep serving during a deployment; both scale on requests
    up to the capacity's two instances.
    """

    def __init__(self, scope: Construct, id: str, *, model_id: str, embedding_model_id: str, **kwargs: Any) -> None:
        super().__init__(scope, id, **kwargs)
        self.neuron = NeuronCluster(self, "Neuron")
        # The SDK 2.20 embedding image does not run on the newest Neuron driver: the fleet keeps the AMI both of its
        # images run on (OLDER_DRIVER_AMI).
        self.neuron.add_ec2_capacity(
            "Inf2", instance_type="inf2.48xlarge", max_capacity=2, machine_image=NeuronAmi.release(OLDER_DRIVER_AMI)
        )
        self.monitoring = NeuronMonitoring(self.neuron, "Monitoring", cluster=self.neuron)
        self.fleet = NeuronFleet(self, "Fleet", cluster=self.neuron, instance_type="inf2.48xlarge")
        self.compile_cache = CompileCache.in_new_bucket(self, "CompileCache")
        self.llm = self.fleet.add_model(
            "Llm",
            devices_per_task=4,
            copies=2,
            container_name="vllm",
            compile_cache=self.compile_cache,
            **vllm_container_options(model_id=model_id, tensor_parallel_size=8, dynamic_host_port=True),
        )
        assert EMBEDDING.ecr_account is not None
        repository = ecr.Repository.from_repository_attributes(
            self,
            "EmbeddingRepository",
            repository_name=EMBEDDING.repository,
            repository_arn=f"arn:{Aws.PARTITION}:ecr:{Aws.REGION}:{EMBEDDING.ecr_account}:repository/{EMBEDDING.repository}",
        )
        self.embedding = self.fleet.add_model(
            "Embedding",
            cores_per_task=1,
            copies=8,
            container_name="embedding",
            image=ecs.ContainerImage.from_ecr_repository(repository, EMBEDDING.tag),
            command=["serve"],
            environment={
                "HF_MODEL_ID": embedding_model_id,
                "HF_TASK": "feature-extraction",
                "HF_OPTIMUM_BATCH_SIZE": "1",
                "HF_OPTIMUM_SEQUENCE_LENGTH": "512",
                "HF_NUM_CORES": "1",
            },
            port_mappings=[ecs.PortMapping(container_port=VLLM_PORT)],
        )
        for copy in self.embedding.task_definitions:  # on each copy's AWS::ECS::TaskDefinition, nothing wider
            Validations.of(copy.task_definition.node.default_child).acknowledge(  # type: ignore[arg-type]
                Acknowledgment(
                    id="AwsSolutions::AwsSolutions-ECS2",
                    reason="The Hugging Face inference container is configured only through environment variables; "
                    "these name the model, the task and its compiled shapes, none of them secret.",
                )
            )
        self.load_balancer = NeuronLoadBalancer(self, "LoadBalancer", cluster=self.neuron)
        for priority, (model, path, health) in enumerate(
            ((self.llm, "/v1/*", "/health"), (self.embedding, "/invocations", "/ping")), start=1
        ):
            model.attach_to_listener(
                self.load_balancer.listener,
                conditions=[elbv2.ListenerCondition.path_patterns([path])],
                priority=priority,
                health_check_path=health,
            )
            model.scale_on_requests(requests_per_target=REQUESTS_PER_REPLICA_PER_MINUTE, min_count=1, max_count=2)
        self.load_balancer.add_url_output()


TRN2_REGIONS = ("us-east-2", "ap-south-2")
"""The Regions cfn-lint's EC2 instance type data lists trn2.48xlarge in (``aws ec2 describe-instance-type-offerings``
tells for yours)."""
TRN2_VLLM_LIMITS = {"--max-model-len": 2048, "--max-num-batched-tokens": 2048, "--max-num-seqs": 2}
"""The server limits of the Neuron DLC quickstart for the vLLM 0.21+ images (Trn2 and Trn3), with the model length
cut to TinyLlama's 2,048 positions: tokens per sequence, tokens per scheduler step, sequences at once."""
VLLM_ENTRYPOINT = ["python", "/usr/local/bin/vllm_entrypoint.py"]
"""The ENTRYPOINT of the Neuron vLLM images, which runs its arguments as a command: in
aws-neuron/deep-learning-containers, ``vllm/inference/0.21.0.1.0.0/Dockerfile.neuronx`` (commit bd966547) and
``vllm/inference/0.24.0.1.1.0/Dockerfile.neuronx`` (commit 4536c92a, SDK 2.32.0) both end with
``ENTRYPOINT ["python", "/usr/local/bin/vllm_entrypoint.py"]``; the 0.29 image's Dockerfile is in no source found.
The driver start check runs first, then this entry point with the command."""


def trn2_vllm_command(*, model_id: str, tensor_parallel_size: int) -> list[str]:
    """``vllm serve`` as the Neuron DLC quickstart starts the vLLM 0.21+ images on Trn2 and Trn3.

    aws-neuron/aws-neuron-sdk ``deploy/environments/quickstart-deploy-dlc.rst`` (commit 43a89626, updated
    07/21/2026: "compatible with Trn2 and Trn3 instances only, and requires the vLLM 0.21+ DLC"): ``vllm serve
    <model> --max-model-len --max-num-batched-tokens --max-num-seqs --tensor-parallel-size --additional-config
    '{"neuron_config": {"num_batched_tokens_buckets": [2048], "num_seqs_buckets": [2]}}' --port=8080``. The
    tensor parallel size is at most the NeuronCores of the task's devices, counted at its logical core setting.
    """
    limits = [str(part) for flag, value in TRN2_VLLM_LIMITS.items() for part in (flag, value)]
    buckets = {
        "neuron_config": {
            "num_batched_tokens_buckets": [TRN2_VLLM_LIMITS["--max-num-batched-tokens"]],
            "num_seqs_buckets": [TRN2_VLLM_LIMITS["--max-num-seqs"]],
        }
    }
    return [
        "vllm",
        "serve",
        model_id,
        *limits,
        "--tensor-parallel-size",
        str(tensor_parallel_size),
        "--additional-config",
        json.dumps(buckets, separators=(",", ":")),
        f"--port={VLLM_PORT}",
    ]


class NeuronInferenceTrn2(Stack):
    """vLLM 0.29 (the SDK 2.33 image, :data:`~neuron_constructs.knowledge.container_images.VLLM_TRN2`) on a
    trn2.48xlarge Auto Scaling group as a platform team runs it: every instance at two physical NeuronCores per logical
    core (``lnc=2``), the ECS Neuron AMI pinned to release :data:`TRN2_AMI` and rolled one instance at a time when the
    pin changes (``AmiRollout``), a warm pool of one stopped instance that has already pulled the image
    (``WarmPool(prefetch=True)``), and the driver start check in the container. The model holds chip 0 (four logical
    NeuronCores, ``--tensor-parallel-size 4``), behind an internal load balancer (stack output ``LoadBalancerUrl``).
    Each new revision is compiled on CPU first (``Precompile``: an AWS Batch job on Fargate at the rollout's
    ``PRE_SCALE_UP``) into vLLM Neuron's compile cache on Amazon EFS, then rolled out blue/green; the copies serve
    cache-hit-only, so a miss fails the green task and the rollout rolls back.

    Deploy it in a Region that offers trn2.48xlarge (:data:`TRN2_REGIONS`; ``aws ec2 describe-instance-type-offerings
    --filters Name=instance-type,Values=trn2.48xlarge`` tells for yours); the template names them for cfn-lint.
    """

    def __init__(self, scope: Construct, id: str, *, model_id: str, **kwargs: Any) -> None:
        super().__init__(scope, id, **kwargs)
        # Where the template deploys, for cfn-lint (which checks instance types per Region: E3628).
        self.template_options.metadata = {"cfn-lint": {"config": {"regions": list(TRN2_REGIONS)}}}
        self.neuron = NeuronCluster(self, "Neuron")
        self.capacity = self.neuron.add_ec2_capacity(
            "Trn2",
            instance_type="trn2.48xlarge",
            max_capacity=2,
            lnc=2,
            machine_image=NeuronAmi.release(TRN2_AMI),
            ami_rollout=AmiRollout(instances_at_a_time=1),
            warm_pool=WarmPool(min_size=1, prefetch=True),
        )
        self.monitoring = NeuronMonitoring(self.neuron, "Monitoring", cluster=self.neuron)
        # vLLM Neuron's cache on Amazon EFS: the remote tier every copy and the precompile job share (the model's own
        # access point), a local tier on each instance that outlives its tasks.
        self.compile_cache = CompileCache.in_new_file_system(
            self,
            "CompileCache",
            vpc=self.neuron.vpc,
            clients=[self.capacity.auto_scaling_group],
            vpc_subnets=self.neuron.capacity_subnets,
        )
        self.task_definition = ManualNeuronTaskDefinition(
            self, "Vllm", instance_type="trn2.48xlarge", devices=[0], lnc=2, cpu=12288, memory_mib=122880
        )
        self.task_definition.add_neuron_container(
            "vllm",
            image=ecs.ContainerImage.from_registry(VLLM_TRN2.uri),
            entry_point=VLLM_ENTRYPOINT,
            command=trn2_vllm_command(model_id=model_id, tensor_parallel_size=4),
            # The quickstart: "If EFA (Elastic Fabric Adapter) is not installed on your host instance, the server will
            # fail to start"; the ECS Neuron AMI installs no EFA software, and these instances attach no EFA interface.
            environment={"NEURON_SKIP_EFA_AFFINITY": "1"},
            port_mappings=[ecs.PortMapping(container_port=VLLM_PORT, host_port=VLLM_PORT)],
            essential=True,
            driver_check=True,
            compile_cache=self.compile_cache,
        )
        Validations.of(self.task_definition.task_definition.node.default_child).acknowledge(  # type: ignore[arg-type]
            Acknowledgment(
                id="AwsSolutions::AwsSolutions-ECS2",
                reason="NEURON_SKIP_EFA_AFFINITY=1 tells the vLLM server that these instances attach no EFA "
                "interface; the other variables are the library's (the model's name, the driver check's range). "
                "None is secret.",
            )
        )
        # Compiled on CPU (AWS Batch on Fargate) before a new revision's tasks start; the copies serve cache-hit-only.
        self.service = NeuronService(
            self,
            "Service",
            cluster=self.neuron,
            task_definition=self.task_definition,
            rollout=Rollout.blue_green(),
            precompile=Precompile(vcpus=16, memory_mib=65536, parallel_workers=16),
        )
        self.load_balancer = NeuronLoadBalancer(self, "LoadBalancer", cluster=self.neuron)
        # A listener rule of its own: ECS moves a blue/green rollout's traffic by that rule's weights.
        self.service.attach_to_listener(
            self.load_balancer.listener, conditions=[elbv2.ListenerCondition.path_patterns(["/*"])], priority=10
        )
        self.load_balancer.add_url_output()


class NeuronMixedCluster(Stack):
    """One cluster: Managed Instances, trn1.32xlarge, inf1.xlarge (EC2 only) and a non-Neuron group.

    The Inf1 service runs the image users push to the stack's repository (stack output ``Inf1RepositoryUri``); the
    Neuron PyTorch image for Inf1 to build it from is
    :data:`~neuron_constructs.knowledge.container_images.INF1_INFERENCE`.
    """

    def __init__(self, scope: Construct, id: str, *, model_id: str, inf1_image_tag: str, **kwargs: Any) -> None:
        super().__init__(scope, id, **kwargs)
        self.neuron = NeuronCluster(self, "Neuron")
        # Monitoring in the cluster's scope, made first: it covers the capacity added after it too.
        self.monitoring = NeuronMonitoring(self.neuron, "Monitoring", cluster=self.neuron)
        self.neuron.add_managed_instances_capacity("ManagedInstances", instance_types=["inf2.*"])
        # Room for a second instance: a deployment starts the new task before it stops the old one.
        self.neuron.add_ec2_capacity("Trn1", instance_type="trn1.32xlarge", max_capacity=2)
        inf1_capacity = self.neuron.add_ec2_capacity("Inf1", instance_type="inf1.xlarge", max_capacity=2)
        Validations.of(inf1_capacity).acknowledge(
            Acknowledgment(
                id=rules.INF1_OUT_OF_SUPPORT.warning_id,
                reason=f"The Inf1 serving image pushed to the stack's repository is built on {INF1_INFERENCE.uri}, "
                f"Neuron SDK {INF1_INFERENCE.neuron_sdk}, the last release with Inf1 images.",
            )
        )
        self.neuron.add_non_neuron_capacity("General", instance_type="m7i.large", max_capacity=2)

        managed = ManagedNeuronTaskDefinition(self, "Inf2Vllm", cpu=8192, memory_mib=16384)
        managed.add_neuron_container("vllm", **vllm_container_options(model_id=model_id, tensor_parallel_size=2))
        NeuronService(self, "Inf2Service", cluster=self.neuron, task_definition=managed)

        trn1 = ManualNeuronTaskDefinition(
            self, "Trn1Vllm", instance_type="trn1.32xlarge", cpu=122880, memory_mib=458752
        )
        trn1.add_neuron_container("vllm", **vllm_container_options(model_id=model_id, tensor_parallel_size=32))
        NeuronService(self, "Trn1Service", cluster=self.neuron, task_definition=trn1)

        # A fixed, lowercase name: the place users push their Inf1 image to. It is retained when
        # the stack is deleted (it holds user images); delete it by hand to redeploy from scratch.
        self.inf1_repository = ecr.Repository(
            self,
            "Inf1ServingImages",
            repository_name=f"{self.stack_name.lower()}/inf1-serving",
            image_scan_on_push=True,
            image_tag_mutability=ecr.TagMutability.IMMUTABLE,
        )
        inf1 = ManualNeuronTaskDefinition(self, "Inf1Serving", instance_type="inf1.xlarge", cpu=4096, memory_mib=6144)
        inf1.add_neuron_container(
            "serving",
            image=ecs.ContainerImage.from_ecr_repository(self.inf1_repository, inf1_image_tag),
            port_mappings=[ecs.PortMapping(container_port=8500, host_port=8500)],
        )
        NeuronService(self, "Inf1Service", cluster=self.neuron, task_definition=inf1)
        CfnOutput(
            self,
            "Inf1RepositoryUri",
            value=self.inf1_repository.repository_uri,
            description=f"Push the Inf1 serving image here with the tag {inf1_image_tag}",
        )


class NeuronTrainingTrn1(Stack):
    """Distributed training on two trn1.32xlarge over EFA: an AWS Batch multi-node parallel job of the Neuron PyTorch
    training container, with FSx for Lustre linked to a new S3 bucket for datasets and checkpoints.

    Copy the training script to the bucket (stack output ``DatasetBucket``) as ``train.py`` (context
    ``trainingScript`` names another) and run the stack output ``SubmitCommand``: every node starts ``torchrun
    --nproc_per_node=32 /fsx/data/train.py``, one process per NeuronCore, and joins the others.
    """

    def __init__(self, scope: Construct, id: str, *, training_script: str, **kwargs: Any) -> None:
        super().__init__(scope, id, **kwargs)
        # The file system goes with the stack: FSx exports what the nodes write under /fsx/data to the bucket, which
        # is kept. A kept file system would hold the subnet of the queue's own VPC and fail cdk destroy (NEURON120).
        self.storage = LustreStorage.in_new_bucket(self, "Datasets", removal_policy=RemovalPolicy.DESTROY)
        # Failed jobs are told to this topic; subscribe to it. Its key is the stack's: EventBridge cannot publish to a
        # topic under the AWS managed SNS key.
        self.alerts = sns.Topic(
            self,
            "JobAlerts",
            enforce_ssl=True,
            master_key=kms.Key(self, "JobAlertsKey", enable_key_rotation=True, description="Training job alerts"),
        )
        self.queue = NeuronTrainingQueue(
            self,
            "Trn1",
            instance_type="trn1.32xlarge",
            max_nodes=2,
            # The SDK 2.30 training image does not run on the newest Neuron driver (OLDER_DRIVER_AMI).
            machine_image=NeuronAmi.release(OLDER_DRIVER_AMI),
            storage=self.storage,
            monitoring=True,
            notifications=self.alerts,
        )
        self.job = self.queue.add_job(
            "Pretrain",
            nodes=2,
            image=ecs.ContainerImage.from_registry(PYTORCH_TRAINING.uri),
            command=["torchrun", "--nproc_per_node=32", f"{self.storage.mount_path}/data/{training_script}"],
        )
        self.job.add_submit_output()
        assert self.storage.bucket is not None
        CfnOutput(
            self,
            "DatasetBucket",
            value=self.storage.bucket.bucket_name,
            description=f"Datasets, checkpoints and {training_script}: {self.storage.mount_path}/data on every node",
        )


def build_app(app: App | None = None) -> App:
    """The example app: eight independent stacks, byte-stable templates."""
    app = app or App(analytics_reporting=False)
    model_id = str(app.node.try_get_context("modelId") or DEFAULT_MODEL_ID)
    embedding_model_id = str(app.node.try_get_context("embeddingModelId") or DEFAULT_EMBEDDING_MODEL_ID)
    inf1_image_tag = str(app.node.try_get_context("inf1ImageTag") or "v1")
    training_script = str(app.node.try_get_context("trainingScript") or "train.py")

    def synthesizer() -> DefaultStackSynthesizer:
        return DefaultStackSynthesizer(generate_bootstrap_version_rule=False)

    NeuronInferenceManaged(app, "NeuronInferenceManaged", model_id=model_id, synthesizer=synthesizer())
    NeuronInferenceEc2(app, "NeuronInferenceEc2", model_id=model_id, synthesizer=synthesizer())
    NeuronMixedCluster(
        app, "NeuronMixedCluster", model_id=model_id, inf1_image_tag=inf1_image_tag, synthesizer=synthesizer()
    )
    for name, instance_type, capacity_id, devices_per_task, instances in (
        ("NeuronSlicedInf2", "inf2.48xlarge", "Inf2", 2, 1),
        ("NeuronSlicedTrn1", "trn1.32xlarge", "Trn1", 4, 2),
    ):
        NeuronSlicedVllm(
            app,
            name,
            model_id=model_id,
            instance_type=instance_type,
            capacity_id=capacity_id,
            devices_per_task=devices_per_task,
            instances=instances,
            synthesizer=synthesizer(),
        )
    NeuronRagFleet(
        app, "NeuronRagFleet", model_id=model_id, embedding_model_id=embedding_model_id, synthesizer=synthesizer()
    )
    NeuronInferenceTrn2(app, "NeuronInferenceTrn2", model_id=model_id, synthesizer=synthesizer())
    NeuronTrainingTrn1(app, "NeuronTrainingTrn1", training_script=training_script, synthesizer=synthesizer())
    if app.node.try_get_context("cdkNag") in (True, "true"):
        from cdk_nag import AwsSolutionsChecks

        Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return app


if __name__ == "__main__":
    build_app().synth()
