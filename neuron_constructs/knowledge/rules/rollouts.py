"""Rules on deploying a new revision of a service: rolling deployments with room to start and stop tasks,
blue/green, canary and linear rollouts (their values, traffic, room and alarms), and the smoke test.
"""

from __future__ import annotations

from neuron_constructs.knowledge.rules.rule import Rule

__all__ = [
    "APPROVAL",
    "APPROVAL_CONTINUES",
    "BLUE_GREEN_WITHOUT_TRAFFIC",
    "DEPLOYMENT_ALARM_BEHAVIOR",
    "DEPLOYMENT_STALLS",
    "DEPLOYMENT_WITHOUT_ROOM",
    "EVERY_REPLICA_STOPS",
    "OPEN_TEST_RULE",
    "ROLLOUT_ON_FLEET",
    "ROLLOUT_ROOM",
    "ROLLOUT_TRAFFIC",
    "ROLLOUT_VALUE",
    "ROLLOUT_WITHOUT_NEURON_ALARM",
    "SMOKE_TEST",
    "SMOKE_TEST_ENVIRONMENT",
    "SMOKE_TEST_TLS_NAME",
]

# ---------------------------------------------------------------- errors ---

DEPLOYMENT_WITHOUT_ROOM = Rule(
    "NEURON032",
    "Rolling deployment with no instance to spare",
    "with distinctInstance each instance holds one task of the service, so a deployment that keeps "
    "minimumHealthyPercent of the tasks running starts the new tasks on spare instances; when every instance the "
    "capacity can launch already runs one, the deployment never proceeds and the circuit breaker rolls it back",
    "pass min_healthy_percent={percent} or less (ECS then replaces tasks in place), or raise max_capacity of "
    "{capacity} above {desired}",
    "ECS guide: rolling update deployments (minimumHealthyPercent, maximumPercent)",
    checked="both",
)
DEPLOYMENT_STALLS = Rule(
    "NEURON040",
    "Rolling deployment that can neither start nor stop a task",
    "during a rolling deployment ECS runs at most maximumPercent of the desired count (rounded down) and keeps "
    "minimumHealthyPercent of it (rounded up) running; when the first leaves no room above the desired count and the "
    "second none below it, no task is ever started or stopped and the deployment never completes",
    "pass min_healthy_percent={percent}, or {more_room}",
    "ECS API reference: DeploymentConfiguration (maximumPercent, minimumHealthyPercent)",
    checked="both",
)
ROLLOUT_VALUE = Rule(
    "NEURON072",
    "Rollout value ECS or CloudFormation refuses",
    "ECS takes a canary percent from 0.1 to 100 and a linear step from 3 to 100, both in steps of 0.1, and bake "
    "times and intervals of 0 to 1,440 whole minutes; CloudFormation rejects a canary or linear deployment whose "
    "calculated time (bake time plus the interval, or plus the interval for every step but the last) exceeds 33 "
    "hours, since its operations time out after 36",
    "pass the values the sentence names, within those ranges",
    "ECS API reference: CanaryConfiguration, LinearConfiguration, DeploymentConfiguration (bakeTimeInMinutes); "
    "CloudFormation template reference: AWS::ECS::Service CanaryConfiguration and LinearConfiguration",
)
ROLLOUT_TRAFFIC = Rule(
    "NEURON073",
    "Native rollout without the traffic path it shifts",
    "ECS shifts production traffic of a canary or linear deployment only through Elastic Load Balancing or Service "
    "Connect; with an Application Load Balancer it moves the weights of one listener rule between the service's "
    "production and alternate target groups (advancedConfiguration.productionListenerRule), so the service needs "
    "a listener rule of its own, never the listener's default action, and one target group per rollout",
    "{fix}",
    "ECS guide: required resources for Amazon ECS blue/green deployments; Application Load Balancer resources for "
    "blue/green, linear, and canary deployments; ECS API reference: AdvancedConfiguration",
)
ROLLOUT_ROOM = Rule(
    "NEURON074",
    "Rollout the capacity cannot hold",
    "a blue/green, canary or linear deployment starts the green revision at the full desired count before it "
    "shifts any traffic and keeps blue until the bake time ends, so the capacity holds both revisions at once: "
    "twice the chips, NeuronCores, CPU and memory of the service; green tasks that do not fit wait in PROVISIONING "
    "until the deployment times out",
    "{fix}",
    "ECS guide: blue/green deployments, best practices (plan for sufficient cluster capacity to handle both service "
    "revisions during deployment)",
)
ROLLOUT_ON_FLEET = Rule(
    "NEURON078",
    "Rollout a fleet model's copies cannot take",
    "ECS shifts traffic per service, through the weights of one listener rule between that service's two target "
    "groups; a fleet model's copies are separate services behind one target group and rule, so the model rolls out "
    "copy by copy: canary and linear stages of copies, each checked by the deployment alarms before the next, with "
    "no test traffic before production and no blue/green switch of the whole model",
    "{fix}",
    "ECS guide: Application Load Balancer resources for blue/green, linear, and canary deployments; ECS API "
    "reference: DeploymentAlarms (rolling update)",
)
APPROVAL = Rule(
    "NEURON180",
    "Approval ECS cannot pause for",
    "an approval is ECS's pause hook (targetType PAUSE): it stops a native deployment at one lifecycle stage, "
    "never at TEST_TRAFFIC_SHIFT or PRODUCTION_TRAFFIC_SHIFT, and waits 1 to 20160 whole minutes before it rolls "
    "back or continues",
    "pass Approval(stage=, timeout=Duration.hours(...), on_timeout='ROLLBACK' or 'CONTINUE') within those limits",
    "ECS API reference: DeploymentLifecycleHook (targetType, lifecycleStages), "
    "DeploymentLifecycleHookTimeoutConfiguration, ContinueServiceDeployment",
)
SMOKE_TEST = Rule(
    "NEURON079",
    "Smoke test ECS or Lambda cannot run",
    "the smoke test's function sends one HTTP request to a path from / in printable ASCII, with a method HTTP "
    "defines and a body only where the method carries one, and expects an HTTP status (100-599) within its "
    "timeout; a Lambda function runs at most 900 s, of which the function keeps 30 s",
    "pass SmokeTest(path='/...', method=, expect_status=, timeout=) within those limits",
    "ECS guide: lifecycle hooks for Amazon ECS service deployments; Lambda guide: function timeout (900 s)",
)
SMOKE_TEST_ENVIRONMENT = Rule(
    "NEURON080",
    "Smoke test larger than a function's environment",
    "the smoke test's function reads its request from its environment variables (the test listener's URL, the "
    "path, the body and the header), and Lambda keeps all of a function's environment variables, names and values "
    "together, within 4 KB",
    "shorten the {what}: the smoke test's environment must fit in 4,096 bytes",
    "Lambda guide: Lambda quotas (function environment variables, 4 KB in aggregate)",
)
DEPLOYMENT_ALARM_BEHAVIOR = Rule(
    "NEURON135",
    "Deployment alarms with two behaviors",
    "ECS takes one list and one behavior for all of a service's deployment alarms (DeploymentAlarms: alarmNames, "
    "enable, rollback): a rollout's alarms roll the deployment back, so alarms of the same service cannot only fail it",
    "give your alarms AlarmBehavior.ROLLBACK_ON_ALARM (the default), or roll the service out with alarms=False",
    "ECS API reference: DeploymentAlarms; ECS guide: how CloudWatch alarms detect Amazon ECS deployment failures",
)
OPEN_TEST_RULE = Rule(
    "NEURON136",
    "Smoke test through an internet-facing load balancer",
    "the smoke test's function runs in the VPC's private subnets and reaches an internet-facing load balancer only at "
    "its public addresses, through the NAT gateway: a security group rule that names the function's group admits that "
    "group's private addresses, not the NAT's public one, so the test request never arrives and every deployment "
    "rolls back; and a header rule there would let any client that sends the test header reach the green tasks before "
    "they passed the smoke test",
    "attach the smoke-tested service to an internal NeuronLoadBalancer (internet_facing=False, the default), and put "
    "the internet-facing entry point (a load balancer or CloudFront) in front of it; or drop smoke_test=",
    "Amazon EC2 guide: security group rules (a referenced security group admits the private IP addresses of its "
    "network interfaces, not public or Elastic IP addresses); Elastic Load Balancing guide: internet-facing load "
    "balancers (public IP addresses), listener rules for your Application Load Balancer (rule conditions)",
)

# -------------------------------------------------------------- warnings ---

EVERY_REPLICA_STOPS = Rule(
    "NEURON112",
    "Deployment that stops every replica",
    "with minimumHealthyPercent 0 ECS may stop every task of a service before it starts new ones; a Neuron service "
    "on capacity it fills has no room for a new task beside the old one",
    "give the capacity room for one more instance (max_capacity above the tasks it runs), or run two or more "
    "tasks, or slices, which deploy in two waves; acknowledge this warning id if a pause is acceptable",
    "ECS API reference: DeploymentConfiguration (minimumHealthyPercent)",
    severity="warning",
)
APPROVAL_CONTINUES = Rule(
    "NEURON181",
    "Approval that goes on unanswered",
    "Approval(on_timeout='CONTINUE') lets a deployment nobody approved reach production once the timeout passes",
    "pass on_timeout='ROLLBACK' (ECS's default), or acknowledge this warning id where going on unanswered is meant",
    "ECS API reference: DeploymentLifecycleHookTimeoutConfiguration (action)",
    severity="warning",
)
BLUE_GREEN_WITHOUT_TRAFFIC = Rule(
    "NEURON121",
    "Blue/green rollout that shifts no traffic",
    "a blue/green deployment of a service with neither a load balancer nor Service Connect starts green next to "
    "blue and then stops blue, but ECS manages no traffic shift between them and runs no test traffic",
    "attach the service to a listener (attach_to_listener) or Service Connect, or roll it out rolling; acknowledge "
    "this warning id if clients find the tasks another way",
    "ECS guide: required resources for Amazon ECS blue/green deployments",
    severity="warning",
)
ROLLOUT_WITHOUT_NEURON_ALARM = Rule(
    "NEURON122",
    "Rollout alarms without the chips' own signal",
    "the rollout's Neuron alarm watches the model's ExecutionErrors, which the NeuronMonitoring daemon publishes "
    "from neuron-monitor; with no monitoring of this app on the capacity the rollout rolls back only on the load "
    "balancer's 5xx answers and response time",
    "cover the capacity with NeuronMonitoring (NeuronMonitoring(cluster=...) or monitoring.cover(capacity)); "
    "acknowledge this warning id when the load balancer's alarms are enough",
    "ECS guide: how CloudWatch alarms detect Amazon ECS deployment failures",
    severity="warning",
)
SMOKE_TEST_TLS_NAME = Rule(
    "NEURON123",
    "Smoke test over HTTPS to the load balancer's own name",
    "the smoke test's function checks the listener's certificate against the URL's host name, as every HTTPS client "
    "does; an ACM certificate names a domain you validated, never the load balancer's own DNS name under "
    "elb.amazonaws.com, so a request to that name fails its TLS check and every deployment rolls back",
    "pass url= with a host name the listener's certificate covers (your domain's record for the load balancer), or "
    "a test listener on HTTP; acknowledge this warning id if the host, known only at deploy time, is such a name",
    "ACM user guide: domain validation for public certificates; Python documentation: ssl.create_default_context "
    "(check_hostname)",
    severity="warning",
)
