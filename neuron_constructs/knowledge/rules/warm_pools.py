"""Rules on warm pools of Auto Scaling capacity: what ECS and EC2 Auto Scaling allow on them, hibernation, and
what the warm-up fetches onto the root volume.
"""

from __future__ import annotations

from neuron_constructs.knowledge.rules.rule import Rule

__all__ = [
    "MOVING_TAG_CACHED",
    "NOT_PREFETCHED",
    "WARM_POOL_HIBERNATION",
    "WARM_POOL_REUSE",
    "WARM_POOL_SPOT",
    "WARM_UP_ROOM",
]

# ---------------------------------------------------------------- errors ---

WARM_POOL_REUSE = Rule(
    "NEURON084",
    "Warm pool that returns instances on scale in",
    "a warm pool of an Auto Scaling group registered with Amazon ECS cannot set the option that returns instances to "
    "the warm pool on scale in (ReuseOnScaleIn)",
    "drop reuse_on_scale_in from the WarmPool: instances that scale in are terminated and the pool launches fresh ones",
    "ECS guide: configuring pre-initialized instances for your Amazon ECS Auto Scaling group (warm pools)",
)
WARM_POOL_SPOT = Rule(
    "NEURON085",
    "Warm pool on Spot capacity",
    "a warm pool cannot be put on an Auto Scaling group that has a mixed instances policy or a launch template that "
    "requests Spot Instances",
    "drop warm_pool, or use On-Demand capacity (spot=False) for the warm-pooled group",
    "EC2 Auto Scaling API reference: PutWarmPool",
)
WARM_UP_ROOM = Rule(
    "NEURON091",
    "Warm pool root volume smaller than what its warm-up fetches",
    "a warm-pooled instance pulls the images and copies the model artifacts of its services onto its root volume "
    "before it stops, and the ECS Neuron AMI already takes its 30 GiB snapshot of it; Docker keeps an image "
    "unpacked, larger than the registry reports; a full volume fails the pull, the copy or the task that starts later",
    "pass root_volume_gib={needed} or more to add_ec2_capacity (or fetch less on this capacity)",
    "aws/amazon-ecs-ami al2023neu.pkr.hcl and variables.pkr.hcl (block_device_size_gb 30); ECR API: ImageDetail "
    "imageSizeInBytes (compressed; docker images shows the larger uncompressed size)",
    checked="both",
)

# -------------------------------------------------------------- warnings ---

NOT_PREFETCHED = Rule(
    "NEURON124",
    "Warm pool that cannot prefetch a service's image or model",
    "the warm-up of a warm-pooled instance fetches what it can name: images named by a literal reference and model "
    "artifacts in a bucket of a checked name, of the services in the capacity's own stack (written into its user "
    "data) and of services in other stacks, which publish them under <prefix>/warm-up/<capacity> in Parameter Store "
    "for the warm-up to read at boot (the capacity's template cannot name them: it would depend on the model stack); "
    "an image named by a token, a reference or prefix outside the warm-up's patterns, or another stack's service on "
    "a cluster that publishes no prefix is fetched when its task is placed, as on a cold instance",
    "name the image by its reference (ContainerImage.from_registry); for a service in another stack, publish the "
    "capacity's cluster (NeuronCluster.publish(prefix)); acknowledge this warning id when a cold pull of it is "
    "acceptable",
    "ECS guide: configuring pre-initialized instances for your Amazon ECS Auto Scaling group (warm pools); "
    "ECS agent configuration: ECS_IMAGE_PULL_BEHAVIOR; Systems Manager user guide: how Parameter Store authorizes "
    "parameter retrieval (GetParametersByPath)",
    severity="warning",
)
WARM_POOL_HIBERNATION = Rule(
    "NEURON141",
    "Hibernated warm pool on a type that cannot hibernate",
    "an instance hibernates only if its type is of a family EC2's hibernation prerequisites list (no Inferentia or "
    "Trainium family is), it is not bare metal, it has less than 150 GB of RAM, and hibernation was enabled when it "
    "launched (HibernationOptions in the launch template)",
    "pass WarmPool(state=PoolState.STOPPED) (the default: you pay for the volumes only) or PoolState.RUNNING",
    "EC2 user guide: prerequisites for EC2 instance hibernation (instance families, instance RAM size, enable "
    "hibernation at launch); EC2 Auto Scaling guide: warm pools (pool state Hibernated)",
)
MOVING_TAG_CACHED = Rule(
    "NEURON142",
    "Image by a tag that moves, on capacity that prefers cached images",
    "with ECS_IMAGE_PULL_BEHAVIOR=prefer-cached (a warm pool's prefetch) the ECS agent pulls an image only when it is "
    "not on the instance: once the warm-up pulled a tag such as :latest, a task placed there runs those bytes even "
    "after the tag has moved, and instances warmed at different times run different images under one tag",
    "name the image by a tag you never move (a version) or by its digest (repository@sha256:...), or pass "
    "WarmPool(prefetch=False) to let the agent pull as usual; acknowledge this warning id if the tag never moves",
    "ECS agent configuration: ECS_IMAGE_PULL_BEHAVIOR (prefer-cached); Docker docs: image digests",
    severity="warning",
)
