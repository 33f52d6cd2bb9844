"""The moto server behind the local endpoint, with CloudFormation custom resources answered.

moto runs the Lambda function behind a custom resource (``Custom::*``) in Docker and waits for its
response; without Docker it never comes, and the stack stays ``CREATE_IN_PROGRESS`` forever. This
server marks each custom resource created, with no data, without running the function - the
example stacks' only custom resource is aws-cdk-lib's, which strips the rules of a new VPC's
default security group - and :mod:`neuron_constructs.tools.deployment_report` lists every custom
resource as not run, so the gap is stated rather than hidden.

moto's CloudFormation also creates nothing for some types the training stack declares, and then
fails every ``Fn::GetAtt`` on them. This server gives those types a CloudFormation model
(:func:`model_missing_types`): an FSx file system and a CloudWatch alarm are created in moto's FSx
and CloudWatch backends, so they can be described; a cluster placement group, an FSx data
repository association and ECS Managed Daemons (daemon and daemon task definition), which moto has
no backend for, are marked created with a name and nothing behind it, and the deployment report,
which describes them through the API, lists them as not created.

moto answers the public SSM parameters of the ECS-optimized AMIs from a copy it ships (moto 5.2.5's ends with the Neuron
AMI release 2023.0.20260922); :func:`publish_pinned_neuron_amis` adds the releases the examples pin that the copy lacks
(:data:`PINNED_NEURON_AMIS`) and every release a deploy asks for (the deploy reads them from its app's templates:
:mod:`neuron_constructs.local_endpoint.ami_releases`), so a launch template that resolves a pinned release's parameter
deploys here as in AWS.

``python -m neuron_constructs.local_endpoint.moto_server --host 127.0.0.1 --port PORT`` takes moto's server options.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from neuron_constructs.local_endpoint.ami_releases import stand_in_image_id

__all__ = [
    "PINNED_NEURON_AMIS",
    "accept_batch_compute_environments",
    "answer_custom_resources",
    "answer_efs_attributes",
    "answer_target_group_attributes",
    "export_what_change_sets_create",
    "main",
    "model_missing_types",
    "public_parameter",
    "publish_pinned_neuron_amis",
    "publish_releases",
    "register_multi_node_job_definitions",
]

_MODULE = "neuron_constructs.local_endpoint.moto_server"
"""The module moto's model registry files these models under (``python -m`` would make it ``__main__``)."""
_MODELS: list[type] = []


def answer_custom_resources() -> None:
    """Make moto create custom resources at once, without invoking their Lambda functions."""
    from moto.cloudformation import custom_model
    from moto.cloudformation.models import cloudformation_backends
    from moto.moto_api._internal import mock_random

    model: Any = custom_model.CustomModel

    def create_without_running(
        cls: Any,
        /,
        resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
        **kwargs: Any,
    ) -> Any:
        resource = model(region_name, str(mock_random.uuid4()), kwargs["LogicalId"], resource_name)
        stack = cloudformation_backends[account_id][region_name].get_stack(kwargs["StackId"])
        stack.add_custom_resource(resource)
        resource.set_data({})
        return resource

    model.create_from_cloudformation_json = classmethod(create_without_running)


class _CreateOnly:
    """What the endpoint's own CloudFormation models share: a stack is created and deleted, never updated, and
    deleting removes nothing from moto's backends (the endpoint is thrown away after each run)."""

    @classmethod
    def update_from_cloudformation_json(cls, *_: Any, **__: Any) -> Any:
        raise NotImplementedError(f"the local endpoint never updates {cls.__name__}")

    @classmethod
    def delete_from_cloudformation_json(cls, *_: Any, **__: Any) -> None:
        return None


def model_missing_types() -> None:
    """CloudFormation models for ``AWS::FSx::FileSystem`` and ``AWS::CloudWatch::Alarm`` (moto's backends), and
    ``AWS::EC2::PlacementGroup``, ``AWS::FSx::DataRepositoryAssociation``, ``AWS::ECS::DaemonTaskDefinition``,
    ``AWS::ECS::Daemon`` and ``AWS::ECS::CapacityProvider`` (no backend: a name only, which a model stack can import
    from the platform's)."""
    from moto.cloudformation.parsing import get_model_map
    from moto.core.common_models import CloudFormationModel
    from moto.fsx.models import fsx_backends
    from moto.moto_api._internal import mock_random

    class LustreFileSystem(_CreateOnly, CloudFormationModel):
        """An FSx file system created in moto's FSx backend. moto keeps no Lustre mount name, so ``LustreMountName``
        answers a name of the endpoint's own (the report compares what the API returns, never this)."""

        __module__ = _MODULE

        def __init__(self, file_system: Any) -> None:
            self.file_system = file_system

        @staticmethod
        def cloudformation_type() -> str:
            return "AWS::FSx::FileSystem"

        @staticmethod
        def cloudformation_name_type() -> str:
            return ""

        @classmethod
        def has_cfn_attr(cls, attr: str) -> bool:
            return attr in ("DNSName", "LustreMountName", "ResourceARN")

        @property
        def physical_resource_id(self) -> str:
            return str(self.file_system.file_system_id)

        def get_cfn_attribute(self, attribute_name: str) -> str:
            if attribute_name == "DNSName":
                return str(self.file_system.dns_name)
            if attribute_name == "ResourceARN":
                return str(self.file_system.resource_arn)
            return str(self.file_system.file_system_id).removeprefix("fs-")[:8]

        @classmethod
        def create_from_cloudformation_json(
            cls, resource_name: str, cloudformation_json: dict[str, Any], account_id: str, region_name: str, **_: Any
        ) -> LustreFileSystem:
            properties = cloudformation_json["Properties"]
            file_system = fsx_backends[account_id][region_name].create_file_system(
                client_request_token=str(mock_random.uuid4()),
                file_system_type=properties["FileSystemType"],
                storage_capacity=int(properties.get("StorageCapacity", 0)),
                storage_type=properties.get("StorageType", "SSD"),
                subnet_ids=properties.get("SubnetIds", []),
                security_group_ids=properties.get("SecurityGroupIds", []),
                tags=properties.get("Tags"),
                kms_key_id=properties.get("KmsKeyId"),
                windows_configuration=None,
                lustre_configuration=properties.get("LustreConfiguration"),
                ontap_configuration=None,
                file_system_type_version=properties.get("FileSystemTypeVersion"),
                open_zfs_configuration=None,
            )
            return cls(file_system)

    class MetricAlarm(_CreateOnly, CloudFormationModel):
        """A CloudWatch alarm created in moto's CloudWatch backend (moto's CloudFormation has no alarm model)."""

        __module__ = _MODULE

        def __init__(self, alarm: Any) -> None:
            self.alarm = alarm

        @staticmethod
        def cloudformation_type() -> str:
            return "AWS::CloudWatch::Alarm"

        @staticmethod
        def cloudformation_name_type() -> str:
            return "AlarmName"

        @classmethod
        def has_cfn_attr(cls, attr: str) -> bool:
            return attr == "Arn"

        @property
        def physical_resource_id(self) -> str:
            return str(self.alarm.name)

        def get_cfn_attribute(self, attribute_name: str) -> str:
            return str(self.alarm.alarm_arn)

        @classmethod
        def create_from_cloudformation_json(
            cls, resource_name: str, cloudformation_json: dict[str, Any], account_id: str, region_name: str, **_: Any
        ) -> MetricAlarm:
            from moto.cloudwatch.models import cloudwatch_backends

            p = cloudformation_json["Properties"]
            alarm = cloudwatch_backends[account_id][region_name].put_metric_alarm(
                name=p.get("AlarmName") or resource_name,
                namespace=p.get("Namespace", ""),
                metric_name=p.get("MetricName", ""),
                comparison_operator=p["ComparisonOperator"],
                evaluation_periods=int(p["EvaluationPeriods"]),
                period=int(p.get("Period", 60)),
                threshold=float(p.get("Threshold", 0)),
                statistic=p.get("Statistic", ""),
                description=p.get("AlarmDescription", ""),
                dimensions=[{"Name": d["Name"], "Value": d["Value"]} for d in p.get("Dimensions", [])],
                alarm_actions=list(p.get("AlarmActions", [])),
                treat_missing_data=p.get("TreatMissingData"),
            )
            return cls(alarm)

    def name_only(resource_type: str, prefix: str) -> type:
        class NameOnly(_CreateOnly, CloudFormationModel):
            __module__ = _MODULE

            def __init__(self, name: str) -> None:
                self.name = name

            @staticmethod
            def cloudformation_type() -> str:
                return resource_type

            @staticmethod
            def cloudformation_name_type() -> str:
                return ""

            @classmethod
            def has_cfn_attr(cls, attr: str) -> bool:
                return attr in ("GroupName", "AssociationId", "DaemonTaskDefinitionArn", "DaemonArn")

            @property
            def physical_resource_id(self) -> str:
                return self.name

            def get_cfn_attribute(self, attribute_name: str) -> str:
                return self.name

            @classmethod
            def create_from_cloudformation_json(cls, resource_name: str, *_: Any, **__: Any) -> Any:
                return cls(f"{prefix}{mock_random.get_random_hex(17)}")

        return NameOnly

    # The model map is built from CloudFormationModel.__subclasses__(), which holds classes weakly.
    _MODELS.extend(
        [
            LustreFileSystem,
            MetricAlarm,
            name_only("AWS::EC2::PlacementGroup", "pg-"),
            name_only("AWS::FSx::DataRepositoryAssociation", "dra-"),
            name_only("AWS::ECS::DaemonTaskDefinition", "daemon-task-definition-"),
            name_only("AWS::ECS::Daemon", "daemon-"),
            name_only("AWS::ECS::CapacityProvider", "capacity-provider-"),
        ]
    )
    get_model_map.cache_clear()


def accept_batch_compute_environments() -> None:
    """Create Batch compute environments as CloudFormation and AWS Batch accept them, where moto is stricter or
    answers less:
    ``Type`` in any case (aws-cdk-lib writes ``managed``), no ``ServiceRole`` (AWS Batch then uses its
    service-linked role, created here as Batch creates it), and no ``SecurityGroupIds`` when the launch template's
    network interfaces carry the groups (Batch takes them from there); and ``Fn::GetAtt`` of compute environments
    and job queues (their ARN)."""
    from moto.batch.models import ComputeEnvironment
    from moto.ec2.models import ec2_backends
    from moto.iam.models import iam_backends

    original = ComputeEnvironment.create_from_cloudformation_json.__func__  # type: ignore[attr-defined]

    def create(
        cls: Any,
        /,
        resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
        **kw: Any,
    ) -> Any:
        properties = dict(cloudformation_json["Properties"])
        properties["Type"] = str(properties["Type"]).upper()
        if not properties.get("ServiceRole"):
            iam = iam_backends[account_id]["global"]
            # moto names the role it creates AWSServiceRoleForbatch; a second compute environment takes that one.
            name = "awsserviceroleforbatch"
            role = next(
                (r for r in iam.roles.values() if r.name.lower() == name), None
            ) or iam.create_service_linked_role("batch.amazonaws.com", "AWS Batch", "")
            properties["ServiceRole"] = role.arn
        resources = dict(properties["ComputeResources"])
        template_id = (resources.get("LaunchTemplate") or {}).get("LaunchTemplateId")
        if not resources.get("SecurityGroupIds") and template_id:
            data = ec2_backends[account_id][region_name].get_launch_template(template_id).latest_version().data
            resources["SecurityGroupIds"] = sorted(
                {group for interface in data.get("NetworkInterfaces", []) for group in interface.get("Groups", [])}
            )
        properties["ComputeResources"] = resources
        return original(
            cls, resource_name, {**cloudformation_json, "Properties": properties}, account_id, region_name, **kw
        )

    ComputeEnvironment.create_from_cloudformation_json = classmethod(create)  # type: ignore[method-assign,assignment]
    # moto answers Ref (the ARN) but no Fn::GetAtt, which the instance role's policy and the outputs use.
    from moto.batch.models import JobQueue

    models: list[tuple[Any, str]] = [(ComputeEnvironment, "ComputeEnvironmentArn"), (JobQueue, "JobQueueArn")]
    for model, attribute in models:
        model.has_cfn_attr = classmethod(lambda cls, attr, name=attribute: attr == name)
        model.get_cfn_attribute = lambda self, attr: self.arn


def register_multi_node_job_definitions() -> None:
    """Register Batch job definitions of the template's ``Type`` (moto's CloudFormation registers every one as a
    single-node ``container`` definition, and then refuses a multi-node one for its missing container), and describe
    their node properties."""
    from moto.batch.models import JobDefinition, batch_backends
    from moto.batch.utils import lowercase_first_key

    def create(
        cls: Any,
        /,
        resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
        **_: Any,
    ) -> Any:
        properties = cloudformation_json["Properties"]

        def optional(key: str) -> Any:
            return lowercase_first_key(properties[key]) if key in properties else None

        return batch_backends[account_id][region_name].register_job_definition(
            def_name=resource_name,
            parameters=lowercase_first_key(properties.get("Parameters", {})),
            _type=properties["Type"],
            tags=lowercase_first_key(properties.get("Tags", {})),
            retry_strategy=lowercase_first_key(properties.get("RetryStrategy", {})),
            container_properties=optional("ContainerProperties"),
            node_properties=optional("NodeProperties"),
            eks_properties=optional("EksProperties"),
            timeout=lowercase_first_key(properties.get("Timeout", {})),
            platform_capabilities=properties.get("PlatformCapabilities"),
            propagate_tags=properties.get("PropagateTags"),
        )

    JobDefinition.create_from_cloudformation_json = classmethod(create)  # type: ignore[method-assign,assignment]
    describe = JobDefinition.describe

    def describe_with_nodes(self: Any) -> dict[str, Any]:
        # moto keeps a multi-node definition's nodeProperties but leaves them out of DescribeJobDefinitions.
        result: dict[str, Any] = describe(self)
        if self.node_properties:
            result["nodeProperties"] = self.node_properties
        return result

    JobDefinition.describe = describe_with_nodes  # type: ignore[method-assign]


def answer_target_group_attributes() -> None:
    """``Fn::GetAtt`` of target groups (moto answers only ``Ref``): the full name and name a CloudWatch dashboard's
    load balancer metrics use, read from the ARN (``...:targetgroup/<name>/<id>``)."""
    from moto.elbv2.models import FakeTargetGroup

    def attribute(self: Any, name: str) -> Any:
        full = str(self.arn).split(":")[-1]
        if name == "TargetGroupFullName":
            return full
        if name == "TargetGroupName":
            return full.split("/")[1]
        if name == "TargetGroupArn":
            return self.arn
        raise NotImplementedError(f"Fn::GetAtt {name} of a target group")

    model: Any = FakeTargetGroup
    model.has_cfn_attr = classmethod(
        lambda cls, attr: attr in ("TargetGroupFullName", "TargetGroupName", "TargetGroupArn")
    )
    model.get_cfn_attribute = attribute


def answer_efs_attributes() -> None:
    """``Fn::GetAtt`` of Amazon EFS file systems and access points (moto models both but answers no attribute): the
    ``Arn`` and id a compile cache's IAM statements and task volumes name; and ``Ref`` of an access point, its id (moto
    would put the access point object itself where a job definition's volume names it)."""
    from moto.efs.models import AccessPoint, FileSystem

    def file_system(self: Any, name: str) -> Any:
        if name == "Arn":
            return self.file_system_arn
        if name == "FileSystemId":
            return self.file_system_id
        raise NotImplementedError(f"Fn::GetAtt {name} of an Amazon EFS file system")

    def access_point(self: Any, name: str) -> Any:
        if name == "Arn":
            return self.access_point_arn
        if name == "AccessPointId":
            return self.access_point_id
        raise NotImplementedError(f"Fn::GetAtt {name} of an Amazon EFS access point")

    for model, attribute, names in (
        (FileSystem, file_system, ("Arn", "FileSystemId")),
        (AccessPoint, access_point, ("Arn", "AccessPointId")),
    ):
        patched: Any = model
        patched.has_cfn_attr = classmethod(lambda cls, attr, names=names: attr in names)
        patched.get_cfn_attribute = attribute
    access_points: Any = AccessPoint
    access_points.physical_resource_id = property(lambda self: self.access_point_id)


def export_what_change_sets_create() -> None:
    """Exports across stacks deployed through change sets, as the cdk CLI deploys: moto resolves
    ``Fn::ImportValue`` and registers a stack's exports for ``CreateStack`` only, so a model stack importing the
    platform's listener would find nothing. Every stack's template now resolves against its region's exports, and
    executing a change set registers the stack's outputs and exports."""
    from moto.cloudformation.models import CloudFormationBackend, Stack, cloudformation_backends

    stack_type: Any = Stack
    create_resource_map = stack_type._create_resource_map

    def resource_map_seeing_exports(self: Any) -> Any:
        if not self.cross_stack_resources:
            self.cross_stack_resources = cloudformation_backends[self.account_id][self.region_name].exports
        return create_resource_map(self)

    stack_type._create_resource_map = resource_map_seeing_exports

    backend: Any = CloudFormationBackend
    execute = backend.execute_change_set

    def execute_and_export(self: Any, change_set_name: str, stack_name: str | None = None) -> None:
        execute(self, change_set_name, stack_name)
        change_set = self.change_sets.get(change_set_name) or next(
            c for c in self.change_sets.values() if c.change_set_name == change_set_name
        )
        stack = self.stacks[change_set.stack_id]
        stack._parse_template()
        stack.output_map = stack._create_output_map()
        for name in [n for n, e in self.exports.items() if e.exporting_stack_id == stack.stack_id]:
            del self.exports[name]
        self._validate_export_uniqueness(stack)
        for export in stack.exports:
            self.exports[export.name] = export

    backend.execute_change_set = execute_and_export


def public_parameter(account_id: str, name: str, value: str, modified: Any = None) -> Any:
    """A moto SSM ``String`` parameter as AWS publishes its public ones (``/aws/service/...``, which moto's API
    refuses to accounts), last modified at ``modified`` (a ``datetime``; default now)."""
    from moto.core.utils import utcnow
    from moto.ssm.models import Parameter

    return Parameter(  # type: ignore[abstract]
        account_id=account_id,
        name=name,
        value=value,
        parameter_type="String",
        description=None,
        allowed_pattern=None,
        keyid=None,
        last_modified_date=modified or utcnow(),
        version=1,
        data_type="text",
    )


PINNED_NEURON_AMIS: dict[str, str] = {"2023.0.20261113": stand_in_image_id("2023.0.20261113")}
"""ECS Neuron AMI releases an example pins that moto's copy of the public parameters lacks, each with a stand-in
image id (the real one differs by Region and is not in that copy): published from the start. The deploy asks for
every other release its app pins (:data:`~neuron_constructs.local_endpoint.ami_releases.PUBLISH_PATH`)."""

_RELEASES: set[tuple[str, str]] = {(release, "6.1") for release in PINNED_NEURON_AMIS}
"""Every (release, kernel) this server publishes, in every account and Region."""


def _add_releases(parameters: Any, releases: Any) -> None:
    """Put ``releases`` into one SSM backend's parameters (a moto ``ParameterDict``), as AWS publishes them; a name
    moto's copy has, or that is there already, is left as it is."""
    import collections

    from neuron_constructs.local_endpoint.ami_releases import release_parameters

    for release, kernel in sorted(releases):
        for name, value in release_parameters(release, kernel).items():
            if not dict.get(parameters, name):
                collections.defaultdict.__getitem__(parameters, name).append(
                    public_parameter(parameters.account_id, name, value)
                )


def publish_releases(releases: Any) -> None:
    """Publish ``releases`` ((release, kernel) pairs) from now on, and at once in every SSM backend that exists."""
    from moto.ssm.models import ssm_backends

    new = set(releases) - _RELEASES
    _RELEASES.update(new)
    for regions in ssm_backends.values():
        for backend in list(regions.values()):
            if backend._parameters.latest_ecs_amis_loaded:
                _add_releases(backend._parameters, new)


def _publish_route(request: Any, full_url: str, headers: Any) -> tuple[int, dict[str, str], str]:
    """``POST`` :data:`~neuron_constructs.local_endpoint.ami_releases.PUBLISH_PATH`: a JSON list of [release, kernel]
    pairs to publish; 400 with a sentence for anything else, or a release the endpoint does not publish."""
    import datetime
    import json

    from neuron_constructs.local_endpoint.ami_releases import refusal

    body = request.get_data()[:65536] if hasattr(request, "get_data") else b""
    try:
        pairs = json.loads(body)
        wanted = {(str(release), str(kernel)) for release, kernel in pairs}
    except (ValueError, TypeError):
        return 400, {}, "the body is not a JSON list of [release, kernel] pairs"
    today = datetime.datetime.now(datetime.UTC).date()
    for release, kernel in sorted(wanted):
        refused = refusal(release, kernel, ["(asked of the endpoint)"], today)
        if refused:
            return 400, {}, refused
    publish_releases(wanted)
    return 200, {}, json.dumps(sorted(_RELEASES))


def publish_pinned_neuron_amis() -> None:
    """Publish each release this server publishes (:data:`PINNED_NEURON_AMIS`, and those the deploys ask for) as AWS
    does, under ``/aws/service/ecs/optimized-ami/amazon-linux-2023/neuron/``: the AMI's name with a JSON description,
    and the same with ``/image_id``; in every Region, when moto first loads the ECS AMI parameters of that Region, and
    at once where it has; and answer the deploys' route
    (:data:`~neuron_constructs.local_endpoint.ami_releases.PUBLISH_PATH`)."""
    from moto.moto_api._internal import urls
    from moto.ssm.models import ParameterDict

    from neuron_constructs.local_endpoint.ami_releases import PUBLISH_PATH

    original = ParameterDict._load_tree_parameters

    def load_tree_parameters(self: Any, path: str) -> None:
        original(self, path)
        if path.startswith("ecs/optimized_amis/"):
            _add_releases(self, _RELEASES)

    ParameterDict._load_tree_parameters = load_tree_parameters  # type: ignore[method-assign]
    urls.url_paths["{0}" + PUBLISH_PATH] = _publish_route


def main(argv: Sequence[str] | None = None) -> None:
    from moto import server

    answer_custom_resources()
    export_what_change_sets_create()
    model_missing_types()
    accept_batch_compute_environments()
    register_multi_node_job_definitions()
    answer_target_group_attributes()
    answer_efs_attributes()
    publish_pinned_neuron_amis()
    server.main(list(argv) if argv is not None else sys.argv[1:])


if __name__ == "__main__":
    main()
