"""Reading deployed stacks: each declared resource goes to the reader of its type
(:mod:`~neuron_constructs.tools.deployment_report.ecs`,
:mod:`~neuron_constructs.tools.deployment_report.load_balancing`,
:mod:`~neuron_constructs.tools.deployment_report.training`,
:mod:`~neuron_constructs.tools.deployment_report.cloudwatch`); any other type is checked for having been created.
"""

from __future__ import annotations

from collections.abc import Iterable

from neuron_constructs.tools.deployment_report.cloudwatch import CloudWatchReader
from neuron_constructs.tools.deployment_report.ecs import EcsReader
from neuron_constructs.tools.deployment_report.load_balancing import LoadBalancingReader
from neuron_constructs.tools.deployment_report.model import ClientFactory, ReportItem, StackReport
from neuron_constructs.tools.deployment_report.training import TrainingReader

__all__ = ["describe_stack", "describe_stacks"]


class _StackReader(EcsReader, LoadBalancingReader, TrainingReader, CloudWatchReader):
    """Reads one stack: the template says what to look for, the live APIs say what is there."""

    def read(self) -> StackReport:
        readers = {
            "AWS::ECS::Cluster": self.cluster,
            "AWS::AutoScaling::AutoScalingGroup": self.auto_scaling_group,
            "AWS::ECS::CapacityProvider": self.capacity_provider,
            "AWS::ECS::TaskDefinition": self.task_definition,
            "AWS::ECS::Service": self.service,
            "AWS::ElasticLoadBalancingV2::LoadBalancer": self.load_balancer,
            "AWS::ElasticLoadBalancingV2::Listener": self.listener,
            "AWS::ElasticLoadBalancingV2::ListenerRule": self.listener_rule,
            "AWS::ElasticLoadBalancingV2::TargetGroup": self.target_group,
            "AWS::Batch::ComputeEnvironment": self.compute_environment,
            "AWS::Batch::JobQueue": self.job_queue,
            "AWS::Batch::JobDefinition": self.job_definition,
            "AWS::FSx::FileSystem": self.file_system,
            "AWS::EC2::PlacementGroup": self.placement_group,
            "AWS::FSx::DataRepositoryAssociation": self.data_repository_association,
            "AWS::CloudWatch::Alarm": self.alarm,
            "AWS::CloudWatch::Dashboard": self.dashboard,
            "AWS::ECS::Daemon": self.daemon,
        }
        for logical_id, resource in self.declared.items():
            physical_id = self.physical_id(logical_id)
            reader = readers.get(resource["Type"])
            if reader is not None:
                reader(logical_id, resource.get("Properties", {}), physical_id)
            elif physical_id is None:
                self.gap(logical_id)
            elif str(resource["Type"]).startswith("Custom::") and not self.functions_run:
                self.gap(logical_id, "marked created without running its Lambda function (the endpoint runs none)")
        self.items.append(
            ReportItem(
                "iam",
                "created",
                (self.count("AWS::IAM::Role", "role"), self.count("AWS::IAM::InstanceProfile", "instance profile")),
            )
        )
        self.outputs()
        return StackReport(
            name=self.stack["StackName"],
            status=self.stack["StackStatus"],
            resources_declared=len(self.declared),
            resources_created=sum(1 for k in self.declared if k in self.created),
            items=self.items,
            gaps=self.gaps,
            services=self.services,
            clusters=list(dict.fromkeys(self.clusters)),
        )


def describe_stack(clients: ClientFactory, stack_name: str, *, functions_run: bool = True) -> StackReport:
    """Read one deployed stack through the AWS APIs that ``clients`` returns.

    ``functions_run=False`` (the local endpoint) lists every custom resource as not run: the
    endpoint marks them created without invoking their Lambda functions.
    """
    return _StackReader(clients, stack_name, functions_run=functions_run).read()


def describe_stacks(
    clients: ClientFactory, stack_names: Iterable[str], *, functions_run: bool = True
) -> list[StackReport]:
    return [describe_stack(clients, name, functions_run=functions_run) for name in stack_names]
