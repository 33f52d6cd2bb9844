"""Rules on the shape of a value, whatever construct takes it: its type, the range AWS accepts, a literal where a
deploy-time token cannot be compared, bounds in order, S3 locations, and removal policies.
"""

from __future__ import annotations

from neuron_constructs.knowledge.rules.rule import Rule

__all__ = ["BOUNDS_REVERSED", "OUT_OF_RANGE", "S3_LOCATION", "SNAPSHOT_REMOVAL", "TOKEN_NOT_LITERAL", "WRONG_TYPE"]

# ---------------------------------------------------------------- errors ---

WRONG_TYPE = Rule(
    "NEURON026",
    "Parameter of the wrong type",
    "CloudFormation integer properties take whole numbers, list properties take lists, and each construct "
    "parameter takes the type its signature names (a bool is not a number, a string is not a list)",
    "pass {expected}",
    "CloudFormation resource specification",
)
OUT_OF_RANGE = Rule(
    "NEURON027",
    "Value outside the range AWS accepts",
    "a number outside the range AWS accepts for it fails at deploy time, and the fix names the range; for example "
    "task cpu is 128 to 196,608 CPU units, a container needs at least 6 MiB of memory, gp3 volumes are 1 to "
    "65,536 GiB and a root volume at least its AMI's 30 GiB snapshot, Managed Instances task storage is at least "
    "1 GiB, a health check grace period is at most 2,147,483,647 s, a deregistration delay 0 to 3,600 s, a listener "
    "rule priority 1 to 50,000, and counts of tasks and instances are whole numbers of 0 or more",
    "pass {name} from {minimum} to {maximum}",
    "ECS API reference (TaskDefinition cpu, ContainerDefinition memory); EC2 API reference (gp3 VolumeSize)",
)
TOKEN_NOT_LITERAL = Rule(
    "NEURON028",
    "Deploy-time value where a rule needs a literal",
    "the Neuron rules compare this value with the catalog and the other parameters at synth, but a CDK token "
    "(a CfnParameter, an import, a resource attribute) is known only at deploy time",
    "pass a literal {name}; to vary it per environment, read it from CDK context (app.node.try_get_context) or "
    "an environment variable at synth",
    "AWS CDK guide: tokens",
)
S3_LOCATION = Rule(
    "NEURON047",
    "S3 location a prefix grant cannot hold to itself",
    "an IAM resource ARN and an s3:prefix condition match * and ? as wildcards, an empty prefix is the whole "
    "bucket, and a prefix also names a directory on the instance (a warm pool's copy), which '..' leaves; a "
    "container mounts volumes at absolute paths",
    "pass a non-empty prefix of letters, digits and ! - _ . ' ( ) / (S3's safe key characters but *) with no empty, "
    "'.' or '..' segment (e.g. 'neuron-compile-cache'), and an absolute path (e.g. '/opt/ml/model')",
    "IAM guide: Amazon S3 condition keys (s3:prefix); Amazon S3 user guide: naming Amazon S3 objects (safe "
    "characters); ECS task definition parameters (mountPoints containerPath)",
)
SNAPSHOT_REMOVAL = Rule(
    "NEURON071",
    "Snapshot removal policy on a resource CloudFormation cannot snapshot",
    "CloudFormation's Snapshot deletion policy applies only to resources that support snapshots (EBS volumes, RDS, "
    "ElastiCache, Neptune, Redshift and a few others); a CloudWatch Logs group or an FSx for Lustre file system "
    "takes Delete or Retain",
    "pass {name}=RemovalPolicy.RETAIN to keep it after the stack, or RemovalPolicy.DESTROY to delete it with the "
    "stack (for a file system, back it up first: aws fsx create-backup)",
    "CloudFormation user guide: DeletionPolicy attribute",
)
BOUNDS_REVERSED = Rule(
    "NEURON075",
    "Lower bound above its upper bound",
    "an Application Auto Scaling scalable target keeps the task count from MinCapacity to MaxCapacity, so the "
    "minimum is at most the maximum; a rolling deployment keeps minimumHealthyPercent of the tasks running while it "
    "starts up to maximumPercent, and aws-cdk-lib takes the minimum only below the maximum",
    "pass {lower} or less, or {upper} or more",
    "Application Auto Scaling API reference: RegisterScalableTarget (MinCapacity, MaxCapacity); aws-cdk-lib "
    "aws-ecs BaseService (minHealthyPercent below maxHealthyPercent)",
)
