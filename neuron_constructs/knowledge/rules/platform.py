"""Rules on parts that span stacks, apps, accounts, Regions and VPCs: a platform in one stack or app and its
models in others, imported clusters, alert topics, and a platform published to Parameter Store.
"""

from __future__ import annotations

from neuron_constructs.knowledge.rules.rule import Rule

__all__ = [
    "ACROSS_APPS",
    "ACROSS_ENVIRONMENTS",
    "ACROSS_VPCS",
    "ALERT_TOPIC_ACCOUNT",
    "CLUSTER_NAME",
    "DEFAULT_ACTION_ACROSS_STACKS",
    "IMPORTED_CLUSTER_PROVIDERS",
    "PUBLISHED_CLUSTER_CAPACITY",
    "PUBLISHED_NAME",
    "PUBLISHED_TWICE",
    "PUBLISHED_WRITERS",
]

# ---------------------------------------------------------------- errors ---

DEFAULT_ACTION_ACROSS_STACKS = Rule(
    "NEURON055",
    "Default action of a listener in another stack",
    "a listener's default action is a property of the listener, so a target group as the default action of a listener "
    "in another stack makes that stack depend on this one: the platform could no longer deploy first, nor the model "
    "stack delete alone",
    "pass conditions=[elbv2.ListenerCondition.path_patterns([...])] with priority= (a listener rule this stack owns), "
    "or attach in the stack of {listener}",
    "AWS CloudFormation guide: cross-stack references (an exporting stack cannot change or delete an export in use)",
)
IMPORTED_CLUSTER_PROVIDERS = Rule(
    "NEURON056",
    "Imported cluster whose capacity providers are not all listed",
    "an AWS::ECS::ClusterCapacityProviderAssociations resource sets a cluster's whole list of capacity providers and "
    "its default strategy (PutClusterCapacityProviders): a provider it does not list is disassociated from the "
    "cluster, two such resources for one cluster undo each other, and a default strategy may name only providers "
    "associated with the cluster",
    "pass existing_capacity_providers=[...] to NeuronCluster.from_cluster_attributes: the providers {cluster} has now "
    "(aws ecs describe-clusters --clusters {cluster} --query 'clusters[0].capacityProviders'), [] if none, and name "
    "in default_capacity_provider_strategy only those; import the cluster once per app",
    "ECS API reference: PutClusterCapacityProviders (defaultCapacityProviderStrategy)",
)
CLUSTER_NAME = Rule(
    "NEURON057",
    "Not an ECS cluster name",
    "an ECS cluster name is 1 to 255 letters, numbers, hyphens and underscores; an ARN is not a name",
    "pass cluster_name={name}",
    "ECS API reference: CreateCluster clusterName",
)
ACROSS_ENVIRONMENTS = Rule(
    "NEURON058",
    "Parts in different accounts or Regions",
    "ECS runs a service only on a cluster of its own account and Region, and a CloudWatch alarm notifies only an SNS "
    "topic of its own Region",
    "give {what} the account and Region of {other}",
    "ECS API reference: CreateService cluster; CloudWatch API reference: PutMetricAlarm AlarmActions",
)
ACROSS_VPCS = Rule(
    "NEURON059",
    "Parts in different VPCs",
    "a load balancer sends only to targets in its own VPC (or a peered one, as IP targets), and an AWS Batch compute "
    "environment launches its instances only in subnets of the VPC its security groups belong to",
    "use {fix}",
    "Elastic Load Balancing guide: target groups (target type ip, instance); AWS Batch API reference: "
    "ComputeResource subnets",
)
ALERT_TOPIC_ACCOUNT = Rule(
    "NEURON070",
    "Alert topic in another account",
    "EventBridge delivers to an SNS topic of another account of the same Region only through an execution role of "
    "the rule's account that the topic's own policy trusts; the library writes no policy in another account, and "
    "aws-cdk-lib routes a target of another account through an event bus of that account, which an imported topic "
    "does not have",
    "pass notifications= a topic of account {account} (the queue's), and subscribe the other account's endpoint to "
    "it, or forward from it",
    "EventBridge user guide: sending events to an AWS service in another account (execution role, target resource "
    "policy, same Region)",
)
ACROSS_APPS = Rule(
    "NEURON077",
    "Parts in different CDK apps",
    "a CDK app synthesizes its own constructs into one cloud assembly, and a stack refers to another stack's "
    "resources only within one app (aws-cdk-lib: CannotReferenceAcrossApps); what another app deployed is imported "
    "by name or ARN",
    "make both in one app, or import {other} into this one: {how}",
    "AWS CDK guide: apps, stacks and cross-stack references",
)
PUBLISHED_NAME = Rule(
    "NEURON082",
    "Not a Parameter Store name prefix",
    "a Parameter Store parameter name in a hierarchy begins with a slash and holds only letters, numbers and "
    "_ . - between slashes, is at most 15 levels deep and 1,011 characters long with its ARN, and may not begin with "
    "aws or ssm (any case)",
    "pass prefix={prefix}: the same in the app that publishes and in every app that imports",
    "Systems Manager API reference: PutParameter Name (naming constraints)",
)
PUBLISHED_CLUSTER_CAPACITY = Rule(
    "NEURON083",
    "Auto Scaling capacity on a cluster another app owns",
    "an AWS::ECS::ClusterCapacityProviderAssociations resource sets a cluster's whole list of capacity providers "
    "(PutClusterCapacityProviders): the platform's association and one in another app would each drop the other's "
    "providers on every deploy; a Managed Instances capacity provider is created in its cluster and needs none",
    "add Managed Instances capacity to {cluster} (add_managed_instances_capacity), or add the Auto Scaling capacity in "
    "the app that owns the cluster",
    "ECS API reference: PutClusterCapacityProviders, CreateCapacityProvider (cluster)",
)
PUBLISHED_TWICE = Rule(
    "NEURON148",
    "One Parameter Store name published by two stacks of one app",
    "a Parameter Store name exists once per account and Region: CloudFormation creates an AWS::SSM::Parameter with "
    "PutParameter without overwrite, so the second stack that declares the name fails its deploy with "
    "ParameterAlreadyExists",
    "publish each platform under a prefix of its own ({stacks} both publish it), or publish once and import it in the "
    "other stack (PublishedPlatform)",
    "CloudFormation resource reference: AWS::SSM::Parameter (Name); Systems Manager API reference: PutParameter "
    "(Overwrite, ParameterAlreadyExists)",
)
PUBLISHED_WRITERS = Rule(
    "NEURON149",
    "Write protection of a published platform without its writer",
    "the deny statement on a published platform's prefix exempts the principals that publish it (aws:PrincipalArn, "
    "the ARN of an IAM role); with none, or with a value that is no role ARN, the platform's own deploy is denied too",
    "pass writers=[<the ARN of the role that deploys the platform>]: with the CDK's default bootstrap, "
    "arn:aws:iam::<account>:role/cdk-hnb659fds-cfn-exec-role-<account>-<region>",
    "IAM User Guide: global condition context keys (aws:PrincipalArn), policy evaluation logic",
)
