"""Rules that keep a container from acting as its instance and data from leaking: privileged and host-network
containers and the pins of their images, instance metadata, public subnets, secrets in the environment, and plain
HTTP open to the internet.
"""

from __future__ import annotations

from neuron_constructs.knowledge.rules.rule import Rule

__all__ = [
    "HOST_NETWORK",
    "METADATA_REACHABLE",
    "OPEN_PLAIN_HTTP",
    "PRIVILEGED_CONTAINER",
    "PUBLIC_SUBNETS",
    "SECRET_IN_ENVIRONMENT",
    "UNPINNED_LIBRARY_DAEMON",
    "UNPINNED_PRIVILEGED_IMAGE",
]

# ---------------------------------------------------------------- errors ---

UNPINNED_PRIVILEGED_IMAGE = Rule(
    "NEURON068",
    "Privileged or host-network daemon image named by a tag",
    "a privileged or host-network container can act as the instance and use its instance role, whose ecs:Poll "
    "returns the credentials of every task there; a tag can be moved to other bytes, a digest cannot",
    'pass {argument}={constant}.pinned("sha256:..."): the digest your registry reports for {uri} '
    "(`neuron-ecs digests` resolves it, or `crane digest {uri}`)",
    "ECS guide: task IAM roles (instance role credentials); Docker docs: image digests; "
    "ECS API reference: ContainerDefinition privileged, TaskDefinition networkMode",
)

# -------------------------------------------------------------- warnings ---

HOST_NETWORK = Rule(
    "NEURON107",
    "Host network mode on a Neuron task",
    "in the host network mode a container shares the instance's network namespace, so neither the IMDS hop "
    "limit nor ECS_AWSVPC_BLOCK_IMDS keeps it from the instance role's credentials",
    "use the bridge or awsvpc network mode, or acknowledge this warning id if the container needs the host "
    "network and may act as the instance role",
    "ECS guide: task IAM roles (blocking instance metadata); AWS re:Post ecs-container-ec2-metadata",
    severity="warning",
    checked="both",
)
PUBLIC_SUBNETS = Rule(
    "NEURON108",
    "Capacity in public subnets",
    "ECS container instances need no public address: they reach ECS, ECR and CloudWatch through a NAT "
    "gateway or VPC endpoints, and instances in public subnets get one",
    "pass NeuronCluster(capacity_subnets=...) a selection of private subnets, e.g. "
    "ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS)",
    "ECS best practices guide: networking",
    severity="warning",
    checked="both",
)
SECRET_IN_ENVIRONMENT = Rule(
    "NEURON109",
    "Secret-looking value in the environment",
    "environment values are plain text in the task definition, readable by anyone who can describe it; ECS "
    "injects Secrets Manager and SSM Parameter Store values through secrets",
    "pass {name} through secrets= (ecs.Secret.from_secrets_manager or ecs.Secret.from_ssm_parameter), or "
    "acknowledge this warning id if the value is not secret",
    "ECS guide: passing sensitive data to a container",
    severity="warning",
    checked="both",
)
METADATA_REACHABLE = Rule(
    "NEURON110",
    "Instance metadata reachable from containers",
    "AMIs registered with IMDS support v2.0 (Amazon Linux 2023) launch with a hop limit of 2 unless the launch "
    "template says otherwise; IMDSv2 with a hop limit of 1 keeps bridge-mode containers from the instance role",
    "set MetadataOptions HttpTokens: required and HttpPutResponseHopLimit: 1 on the launch template",
    "EC2 API reference: Image ImdsSupport, InstanceMetadataOptions",
    severity="warning",
    checked="template",
)
PRIVILEGED_CONTAINER = Rule(
    "NEURON115",
    "Privileged or host-network container",
    "a privileged container holds every capability and device of the instance, so it can act as the instance; a "
    "container of a host-network task, or of a single-node AWS Batch job on EC2 (which Batch runs in the host "
    "network only), or one a launch template's user data runs with docker run --privileged or --network host, "
    "reaches the instance metadata service past the hop limit of 1 and ECS_AWSVPC_BLOCK_IMDS: either can use the "
    "instance role, whose ecs:Poll returns the credentials of every task on the instance (their task roles, their "
    "secrets)",
    "drop privileged (map the devices and add the capabilities it needs) and use the bridge or awsvpc network "
    "mode (a Batch job on EC2: a multi-node parallel job, whose nodes run in awsvpc); acknowledge this warning id "
    "with the reason the container needs it",
    "ECS guide: task IAM roles (instance role, blocking instance metadata); ECS API reference: ContainerDefinition "
    'privileged ("the container is given elevated privileges on the host container instance, similar to the root '
    'user"), TaskDefinition networkMode; ECS guide: Amazon ECS container instance IAM role (ecs:Poll); AWS Batch '
    "guide: networking modes for AWS Batch jobs",
    severity="warning",
    checked="template",
)
UNPINNED_LIBRARY_DAEMON = Rule(
    "NEURON116",
    "Library container running privileged or in the host network by tag",
    "no published source gives the digest of the tag the library runs this privileged or host-network container "
    "from (neuron-monitor; the warm-up's AWS CLI), so it runs by the tag, which can be moved to other bytes",
    'pass {argument}={constant}.pinned("sha256:..."): the digest your registry reports for {uri} '
    "(`neuron-ecs digests` resolves it); acknowledge this warning id if you accept the tag",
    "Docker docs: image digests; neuron_constructs.knowledge.container_images (NEURON_MONITOR, AWS_CLI)",
    severity="warning",
)
OPEN_PLAIN_HTTP = Rule(
    "NEURON119",
    "Internet-facing load balancer serving plain HTTP to everyone",
    "an internet-facing Application Load Balancer in public subnets, open to 0.0.0.0/0 or ::/0, without a "
    "certificate listens on HTTP: requests and model answers cross the internet unencrypted",
    "pass certificate= an ACM certificate (HTTPS, TLS 1.3 policy), or clients= the ranges that may connect; "
    "acknowledge this warning id if plain HTTP to everyone is deliberate",
    "Elastic Load Balancing guide: HTTPS listeners for your Application Load Balancer",
    severity="warning",
)
