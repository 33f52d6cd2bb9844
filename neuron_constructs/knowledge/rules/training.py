"""Rules on distributed training with AWS Batch: multi-node jobs and EFA, the queue's nodes, subnet and
reservation, parallel degrees, checkpoints, the job's image, and the file system a queue keeps.
"""

from __future__ import annotations

from neuron_constructs.knowledge.rules.rule import Rule

__all__ = [
    "CHECKPOINT_DIR",
    "KEPT_FILE_SYSTEM_IN_OWN_VPC",
    "MULTI_NODE_ON_SPOT",
    "MULTI_NODE_WITHOUT_EFA",
    "PARALLEL_DEGREES",
    "RESERVATION_FALLBACK",
    "TOO_MANY_NODES",
    "TRAINING_PUBLIC_SUBNET",
    "TRAINING_SUBNETS",
    "UNGRANTED_ECR_IMAGE",
]

# ---------------------------------------------------------------- errors ---

MULTI_NODE_WITHOUT_EFA = Rule(
    "NEURON048",
    "Multi-node training on a type without EFA",
    "Neuron collectives span instances over EFA, which trn1.32xlarge (8 interfaces), trn1n.32xlarge (16), "
    'trn2.3xlarge (1), trn2.48xlarge and trn2u.48xlarge (16) have; "EFA is currently not available on the smaller '
    'instances sizes" of Trn1',
    "train across nodes on {multi_node}, or pass nodes=1",
    "Neuron docs: How to prepare trn1.32xlarge for multi-node execution",
)
TOO_MANY_NODES = Rule(
    "NEURON049",
    "More nodes than the training queue launches",
    "an AWS Batch compute environment needs enough maximum vCPUs for every node of a multi-node parallel job",
    "pass nodes={max_nodes} or fewer, or raise max_nodes of {queue}",
    "AWS Batch guide: multi-node parallel jobs",
)
MULTI_NODE_ON_SPOT = Rule(
    "NEURON050",
    "Multi-node job on Spot capacity",
    "multi-node parallel jobs aren't supported on compute environments that use Spot Instances",
    "run multi-node jobs on an On-Demand queue (spot=False, optionally a capacity_reservation), or pass nodes=1",
    "AWS Batch guide: compute environments for multi-node parallel jobs",
)
TRAINING_SUBNETS = Rule(
    "NEURON051",
    "Training queue across subnets",
    "all instances that use an EFA must be in the same cluster placement group, which lies in one Availability Zone",
    "pass one subnet (subnet=...), e.g. vpc.private_subnets[0], in a VPC with a private subnet",
    "AWS Batch guide: Use an Elastic Fabric Adapter; EC2 guide: cluster placement groups",
)
RESERVATION_FALLBACK = Rule(
    "NEURON052",
    "Reservation fallback on a launch template",
    "a launch template names either a reservation to launch into or a reservation preference, not both; AWS Batch "
    "takes its capacity from the launch template",
    "drop fallback_to_on_demand, or add a second queue without capacity_reservation for On-Demand overflow",
    "EC2 API reference: LaunchTemplateCapacityReservationSpecificationRequest",
)
PARALLEL_DEGREES = Rule(
    "NEURON053",
    "Parallel degrees the job's NeuronCores cannot hold",
    "one training process runs per NeuronCore, and neuronx-distributed (like Megatron) refuses a world size that "
    "tensor_parallel x pipeline_parallel does not divide; the data-parallel degree is what is left",
    "choose degrees whose product divides {world} (nodes x {per_node} NeuronCores per node), or change nodes",
    "neuronx-distributed parallel_state.initialize_model_parallel; Neuron docs: Trn2 logical NeuronCores (LNC=2)",
)
TRAINING_PUBLIC_SUBNET = Rule(
    "NEURON061",
    "Training nodes in a public subnet",
    "EC2 assigns no public IPv4 address to an instance launched with more than one network interface, so EFA "
    "training nodes in a public subnet have no route to ECR, AWS Batch or Amazon ECS and never join their queue",
    "pass subnet= a private subnet whose route table leads to a NAT gateway (the VPC's private_subnets)",
    "Amazon EC2 user guide: public IPv4 addresses (not assigned to an instance with multiple network interfaces)",
)
UNGRANTED_ECR_IMAGE = Rule(
    "NEURON062",
    "ECR image the job cannot pull",
    "a job's execution role pulls its image, and an ECR image named by URI (ContainerImage.from_registry) comes "
    "with no permission to pull it; AWS Batch's container definition does not expose the name to grant it",
    "pass ecs.ContainerImage.from_ecr_repository(ecr.Repository.from_repository_attributes(...), tag), which "
    "grants the execution role the pull",
    "Amazon ECR user guide: private registry authentication and repository policies (ecr:BatchGetImage)",
)
CHECKPOINT_DIR = Rule(
    "NEURON066",
    "Checkpoint directory no node can reach",
    "every node of a job saves to and resumes from one place: the queue's shared storage, mounted at the same path "
    "on every node, or an S3 prefix; a node's own disk is gone when AWS Batch replaces the node; a bucket name is 3 "
    "to 63 lowercase letters, digits, dots and hyphens, begins and ends with a letter or digit, and is no IP address",
    "pass checkpoint_dir= an absolute path in normal form (no '..', '.', '//' or trailing '/') under the queue's "
    "LustreStorage mount path, or an s3://bucket/prefix URL with a valid bucket name and a key prefix (and grant the "
    "job role that prefix)",
    "AWS Batch guide: multi-node parallel jobs; FSx for Lustre guide: mounting on Amazon ECS; Amazon S3 user guide: "
    "general purpose bucket naming rules, naming Amazon S3 objects",
)

# -------------------------------------------------------------- warnings ---

KEPT_FILE_SYSTEM_IN_OWN_VPC = Rule(
    "NEURON120",
    "File system kept after the stack in a VPC the stack deletes",
    "a retained FSx for Lustre file system keeps its network interfaces in its subnet and its security group, so "
    "CloudFormation cannot delete the subnet, the security groups or the VPC the queue made, and cdk destroy fails "
    "(DELETE_FAILED) until the file system is deleted",
    "pass vpc= a VPC that outlives this stack, or LustreStorage(removal_policy=RemovalPolicy.DESTROY) when the linked "
    "bucket holds what matters, or delete the file system before cdk destroy (docs/deploying.md); acknowledge this "
    "warning id once you have",
    "Amazon VPC user guide: delete a subnet (network interfaces in use); CloudFormation user guide: DeletionPolicy "
    "attribute",
    severity="warning",
)
