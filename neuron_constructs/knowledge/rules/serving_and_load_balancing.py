"""Rules on serving a model: load balancer targets, listener rules, security groups and health checks, the network
options of a service, its scalable target, and its health check grace period.
"""

from __future__ import annotations

from neuron_constructs.knowledge.rules.rule import Rule

__all__ = [
    "GRACE_SHORTER_THAN_COMPILE",
    "HEALTH_CHECK_PATH",
    "LISTENER_RULE",
    "NETWORK_LOAD_BALANCER_GROUP",
    "NETWORK_OPTION_IGNORED",
    "NO_TARGET_PORT",
    "REQUEST_SCALING_TARGET",
    "SCALE_TO_ZERO",
    "SECOND_SCALING_TARGET",
    "SHORT_GRACE_PERIOD",
    "UNKNOWN_VPC_RANGE",
    "UNREACHABLE_TARGETS",
    "WAKE_BY_HAND",
]

# ---------------------------------------------------------------- errors ---

SCALE_TO_ZERO = Rule(
    "NEURON182",
    "Scale to zero no request can wake, or that a running copy needs",
    "a service at zero tasks registers no target: the load balancer answers 503 and its target group's "
    "RequestCount is not reported, so target tracking cannot scale it out from zero; the library wakes it on the "
    "load balancer's HTTPCode_ELB_503_Count while it runs no task (Container Insights' RunningTaskCount) and scales "
    "it in after its target groups counted no request for the idle time, which needs its Application Load Balancer "
    "target groups, the load balancer's metrics, Container Insights, and no rollout that needs a running copy; users "
    "of a production listener would get the 503",
    "{fix}",
    "ALB guide: CloudWatch metrics (RequestCount, HTTPCode_ELB_503_Count), troubleshooting (HTTP 503); Application "
    "Auto Scaling guide: target tracking (scale in to 0), step scaling (ExactCapacity)",
)

NETWORK_OPTION_IGNORED = Rule(
    "NEURON034",
    "Network option the network mode ignores",
    "subnets, security groups and public IP assignment belong to awsvpc tasks; bridge and host tasks use their "
    "instance's network interface and security group",
    "drop {option}, or use the awsvpc network mode (then the option applies to the tasks' own interfaces)",
    "ECS guide: task networking",
)
SECOND_SCALING_TARGET = Rule(
    "NEURON035",
    "Second scalable target for one service",
    "Application Auto Scaling registers one scalable target per service and dimension",
    "call auto_scale once per service (it returns the scalable targets for every further policy); scale_on_requests "
    "and scale_on_neuron_utilization share one target, so call each at most once and give both the same counts",
    "Application Auto Scaling API: RegisterScalableTarget",
)
NO_TARGET_PORT = Rule(
    "NEURON041",
    "Load balancer target without one port",
    "a load balancer target group sends to one container port of the task; ECS registers the host port (bridge) or "
    "the task's address (awsvpc) that port is mapped to",
    "give {container} port_mappings=[ecs.PortMapping(container_port=...)], or pass container_port= (and "
    "container_name=) naming the port the model server listens on",
    "ECS guide: use load balancing to distribute service traffic",
)
LISTENER_RULE = Rule(
    "NEURON042",
    "Listener rule without both conditions and priority",
    "an Application Load Balancer listener rule has conditions and a priority unique on its listener (1-50,000); "
    "without either the target group is the listener's default action; Network Load Balancer listeners have no rules",
    "pass conditions=[elbv2.ListenerCondition.path_patterns([...])] with priority=, or neither for the default "
    "action (one per listener)",
    "Elastic Load Balancing guide: listener rules for your Application Load Balancer",
)
NETWORK_LOAD_BALANCER_GROUP = Rule(
    "NEURON043",
    "Network Load Balancer without a security group",
    "a Network Load Balancer without security groups passes its clients' addresses through, so the tasks' group "
    "would have to admit every client; security groups can be given to a Network Load Balancer only when it is "
    "created",
    "create the elbv2.NetworkLoadBalancer in this app with security_groups=[...] (or attach to an Application Load "
    "Balancer listener)",
    "Elastic Load Balancing guide: security groups for your Network Load Balancer",
)
REQUEST_SCALING_TARGET = Rule(
    "NEURON044",
    "Request scaling without an Application Load Balancer target group",
    "target tracking on ALBRequestCountPerTarget reads the request count of one Application Load Balancer target "
    "group the service is registered with",
    "call attach_to_listener(<Application Load Balancer listener>) first, or pass target_group= one it returned",
    "Application Auto Scaling guide: target tracking predefined metrics (ALBRequestCountPerTarget)",
)
UNKNOWN_VPC_RANGE = Rule(
    "NEURON045",
    "Load balancer clients in a VPC of unknown range",
    "a load balancer's security group admits only the clients it names; the default, the VPC's IPv4 range, is not "
    "known for a VPC imported without its CIDR block",
    "pass clients=[ec2.Peer.ipv4('<range>')] (or security groups) to NeuronLoadBalancer, or import the VPC with "
    "vpc_cidr_block=",
    "EC2 guide: security group rules",
)
HEALTH_CHECK_PATH = Rule(
    "NEURON060",
    "Health check path without a leading /",
    "an Application Load Balancer health check path is a path on the target, and it begins with /",
    "pass health_check_path={path}",
    "Elastic Load Balancing API reference: CreateTargetGroup HealthCheckPath",
)
UNREACHABLE_TARGETS = Rule(
    "NEURON076",
    "Load balancer targets the load balancer cannot reach",
    "a load balancer sends to a registered target only where the outbound rules of its security groups and the "
    "inbound rules of the target's allow the target port: the tasks' own groups on the container port in the awsvpc "
    "network mode, the container instance's groups on the host port in the bridge and host modes (bridge host ports "
    "are dynamic, 32768-60999 on Amazon Linux)",
    "allow TCP {ports} from {load_balancer} into {targets}, and out of the load balancer's group to them, as "
    "attach_to_listener does; aws-cdk-lib's target_group.add_target(service) opens no security group of an Auto "
    "Scaling capacity provider (aws/aws-cdk#22764)",
    "Elastic Load Balancing guide: target security groups; ECS API reference: PortMapping hostPort (the ephemeral "
    "range of /proc/sys/net/ipv4/ip_local_port_range)",
    checked="template",
)

# -------------------------------------------------------------- warnings ---

SHORT_GRACE_PERIOD = Rule(
    "NEURON111",
    "Health check grace period shorter than a Neuron start",
    "ECS stops a task that fails its load balancer or container health checks once the grace period is over; a Neuron "
    "model server answers only after download, compile and load (AWS's vLLM container: 5-10 minutes; a 15 GB "
    "model: about 15 minutes to compile)",
    "pass health_check_grace_period=Duration.minutes(30) (the default) or longer, sized as download + compile + load "
    "of a first start; acknowledge this warning id if the image starts from compiled artifacts",
    "ECS API reference: healthCheckGracePeriodSeconds; aws-neuron-sdk: DLC quickstart, NxD Inference vLLM guide",
    severity="warning",
)
GRACE_SHORTER_THAN_COMPILE = Rule(
    "NEURON167",
    "Health check grace period shorter than the compile a copy runs at start",
    "ECS ignores a new task's failing load balancer and container health checks only for the service's health check "
    "grace period after the task first started (0 when unset), then stops it; a copy that compiles its graphs at "
    "start - no precompile, and with a compile cache the first copy of each revision, as the cache is keyed by the "
    "compiler's arguments and versions - answers only after its weights copy, the compile and the load, so with a "
    "shorter grace period ECS stops every copy before it serves",
    "pass health_check_grace_period={needed} or longer, precompile the model so copies fetch compiled graphs instead "
    "of compiling, or acknowledge this warning id when its compile cache is filled before every rollout",
    'ECS API reference: CreateService healthCheckGracePeriodSeconds; vLLM Neuron documentation, "Compilation '
    'Cache" (2026-06-22)',
    severity="warning",
    checked="template",
)
WAKE_BY_HAND = Rule(
    "NEURON183",
    "Scale to zero without a wake",
    "scale_to_zero(wake_on_request=False) scales the model in to zero copies when idle and nothing scales it out "
    "again: requests get the load balancer's 503 until someone raises its desired count",
    "pass wake_on_request=True, or acknowledge this warning id where the model is woken by hand or by a pipeline",
    "ALB guide: troubleshooting (HTTP 503: no registered targets)",
    severity="warning",
)
