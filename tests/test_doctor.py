"""``neuron-ecs doctor``: every check against the local endpoint (moto, with a stand-in for the EC2 quotas and
capacity reservations moto does not model), for a ready account and a staged one with a problem per check; the calls
it makes equal to the doctor policy; and what a hostile or closed endpoint gets."""

from __future__ import annotations

import functools
import io
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from conftest import MEASURED_IN_CI
from doctor_stand_in import StandIn

from neuron_constructs.knowledge.doctor_permissions import DOCTOR_PERMISSIONS, POLICY_FILE, policy_text
from neuron_constructs.tools.cli import main
from neuron_constructs.tools.doctor import CHECKS, run_doctor

REGION = "us-east-2"
REPOSITORY = "models"
ECR_IMAGE = f"123456789012.dkr.ecr.{REGION}.amazonaws.com/{REPOSITORY}:v1"
RESERVED = "cr-0123456789abcdef0"
MISSING_RELEASE = "2023.0.20250102"
"""An ECS Neuron AMI release the local endpoint does not publish."""


def _synthesize(outdir: Path, *, staged: bool) -> None:
    """One stack: an inf2.48xlarge group of at most 2 in a reservation, running a private ECR image, and a
    trn1.32xlarge training queue. ``staged``: no NAT gateway (isolated subnets, no endpoints), a pinned AMI release the
    Region does not publish."""
    from aws_cdk import App, Stack
    from aws_cdk import aws_ec2 as ec2
    from aws_cdk import aws_ecs as ecs

    from neuron_constructs import (
        CapacityReservation,
        ManualNeuronTaskDefinition,
        NeuronAmi,
        NeuronCluster,
        NeuronService,
        NeuronTrainingQueue,
    )

    app = App(analytics_reporting=False, outdir=str(outdir))
    stack = Stack(app, "Account")
    if staged:
        vpc = ec2.Vpc(
            stack,
            "Vpc",
            max_azs=2,
            nat_gateways=0,
            subnet_configuration=[
                ec2.SubnetConfiguration(name="Isolated", subnet_type=ec2.SubnetType.PRIVATE_ISOLATED)
            ],
        )
    else:
        vpc = ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=1)
    subnets = ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED) if staged else None
    cluster = NeuronCluster(stack, "Neuron", vpc=vpc, **({"capacity_subnets": subnets} if subnets else {}))
    capacity = cluster.add_ec2_capacity(
        "Inf2",
        instance_type="inf2.48xlarge",
        max_capacity=2,
        capacity_reservation=CapacityReservation.on_demand(RESERVED),
        **({"machine_image": NeuronAmi.release(MISSING_RELEASE)} if staged else {}),
    )
    task = ManualNeuronTaskDefinition(stack, "Task", instance_type="inf2.48xlarge", devices=[0], memory_mib=8192)
    task.add_neuron_container("model", image=ecs.ContainerImage.from_registry(ECR_IMAGE))
    NeuronService(stack, "Model", cluster=cluster, task_definition=task, capacity=capacity)
    if staged:
        isolated = vpc.isolated_subnets[0]  # us-east-2a: trn1.32xlarge is offered in use2-az3 only
        NeuronTrainingQueue(stack, "Train", instance_type="trn1.32xlarge", max_nodes=1, vpc=vpc, subnet=isolated)
    app.synth()


@functools.cache
def _assemblies(root: str) -> dict[str, Path]:
    made = {}
    for name in ("ready", "staged"):
        outdir = Path(root) / name
        _synthesize(outdir, staged=name == "staged")
        made[name] = outdir
    return made


@pytest.fixture(scope="module")
def assemblies(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return _assemblies(str(tmp_path_factory.mktemp("doctor")))


@pytest.fixture(scope="module")
def account(assemblies: dict[str, Path]) -> Iterator[dict[str, Any]]:
    """A moto server behind the stand-in, the ready account's state seeded: quotas, the reservation, the image, the
    service-linked roles and the CDK bootstrap version."""
    from neuron_constructs.local_endpoint.start_or_attach import local_aws_endpoint

    with local_aws_endpoint(region=REGION) as endpoint:
        stand_in = StandIn(behind=endpoint.url)
        try:
            session = endpoint.session()
            ecr = session.client("ecr", endpoint_url=endpoint.url, region_name=REGION)
            ecr.create_repository(repositoryName=REPOSITORY)
            manifest = json.dumps(
                {"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json"}
            )
            ecr.put_image(repositoryName=REPOSITORY, imageManifest=manifest, imageTag="v1")
            iam = session.client("iam", endpoint_url=endpoint.url, region_name=REGION)
            for role, service in (("AWSServiceRoleForECS", "ecs"), ("AWSServiceRoleForAutoScaling", "autoscaling")):
                trust = {"Statement": [{"Effect": "Allow", "Principal": {"Service": f"{service}.amazonaws.com"}}]}
                iam.create_role(
                    RoleName=role,
                    Path=f"/aws-service-role/{service}.amazonaws.com/",
                    AssumeRolePolicyDocument=json.dumps(trust),
                )
            ssm = session.client("ssm", endpoint_url=endpoint.url, region_name=REGION)
            ssm.put_parameter(Name="/cdk-bootstrap/hnb659fds/version", Value="27", Type="String")
            yield {"endpoint": endpoint, "stand_in": stand_in, "session": session}
        finally:
            stand_in.close()


def _ready_state(stand_in: StandIn) -> None:
    stand_in.quotas = {"L-1945791B": 1024, "L-2C3B7624": 512, "L-B5D1601B": 0, "L-6B0D517C": 0}
    now = datetime.now(UTC)
    stand_in.reservations = [
        {
            "capacityReservationId": RESERVED,
            "instanceType": "inf2.48xlarge",
            "availabilityZone": f"{REGION}a",
            "availabilityZoneId": "use2-az1",
            "state": "active",
            "totalInstanceCount": 2,
            "availableInstanceCount": 2,
            "reservationType": "default",
            "startDate": (now - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%S.000Z"),
        }
    ]


def _doctor(account: dict[str, Any], assembly: Path) -> tuple[Any, list[str]]:
    """run_doctor against the stand-in, with every operation the clients call recorded as its IAM action."""
    called: list[str] = []
    session = account["session"]
    prefixes = {"service-quotas": "servicequotas"}

    @functools.cache
    def clients(service: str) -> Any:
        client = session.client(service, endpoint_url=account["stand_in"].url, region_name=REGION)
        client.meta.events.register(
            "before-call",
            lambda model, **_: called.append(f"{prefixes.get(service, service)}:{model.name}"),
        )
        return client

    return run_doctor([str(assembly)], clients, region=REGION), called


def _by_check(report: Any) -> dict[str, list[Any]]:
    found: dict[str, list[Any]] = {}
    for finding in report.findings:
        found.setdefault(finding.check, []).append(finding)
    return found


@pytest.mark.e2e
def test_a_ready_account_answers_every_check_ok(account: dict[str, Any], assemblies: dict[str, Path]) -> None:
    _ready_state(account["stand_in"])
    report, called = _doctor(account, assemblies["ready"])
    found = _by_check(report)
    assert set(found) == set(CHECKS), found
    assert [f for f in report.findings if f.status != "ok"] == []
    assert "inf2.48xlarge offered in its subnets' zones use2-az1, use2-az2" in found["zones"][0].said
    assert found["quota"][0].said == "1024 vCPUs, the app needs 384 at a rollout's peak"
    assert found["reservation"][0].said.startswith("active, inf2.48xlarge in use2-az1, 2 available")
    # THEN every call it made is one of the doctor policy's actions (the staged run below makes the rest)
    assert set(called) <= {p.action for p in DOCTOR_PERMISSIONS}


@pytest.mark.e2e
def test_a_staged_account_gets_a_problem_with_its_fix_for_each_check(
    account: dict[str, Any], assemblies: dict[str, Path]
) -> None:
    stand_in = account["stand_in"]
    _ready_state(stand_in)
    stand_in.quotas["L-1945791B"] = 0  # a new account
    stand_in.reservations[0] |= {"availabilityZoneId": "use2-az3", "availabilityZone": f"{REGION}c"}
    report, called = _doctor(account, assemblies["staged"])
    problems = {f.check: f for f in report.problems}
    assert problems["quota"].fix == (
        "aws service-quotas request-service-quota-increase --service-code ec2 --quota-code L-1945791B "
        "--desired-value 384"
    )
    assert "it is in use2-az3, the capacity's subnets in use2-az1, use2-az2" in problems["reservation"].said
    assert (
        problems["ami"].subject.endswith(MISSING_RELEASE + "-kernel-6.1-x86_64")
        or MISSING_RELEASE in problems["ami"].subject
    )
    assert "neuron-ecs ami --releases" in (problems["ami"].fix or "")
    assert "no NAT or internet route" in problems["pull path"].said and "ecr.api" in (problems["pull path"].fix or "")
    assert "trn1.32xlarge is not offered in use2-az1" in problems["zones"].said  # the queue's zones; trn1 is in az3
    assert problems["service-linked role"].subject in ("AWSServiceRoleForBatch", "AWSServiceRoleForEC2Spot")
    # THEN the runs together (the ready one, and one whose capacity names a subnet by id) make every call the policy
    # allows, and no other
    _ready_state(stand_in)
    _, ready_calls = _doctor(account, assemblies["ready"])
    imported, imported_calls = _doctor(account, _with_a_subnet_named_by_id(account, assemblies["ready"]))
    assert set(called) | set(ready_calls) | set(imported_calls) == {p.action for p in DOCTOR_PERMISSIONS}
    (path,) = [f for f in imported.findings if f.check == "pull path"]
    assert path.status == "problem" and "subnet-" in path.said  # a new VPC's subnet: no route out, no endpoints
    assert any(f.check == "zones" and f.status == "ok" and "use2-az1" in f.said for f in imported.findings)


def _with_a_subnet_named_by_id(account: dict[str, Any], assembly: Path) -> Path:
    """A copy of ``assembly`` whose Auto Scaling group launches into a subnet of a new VPC of the local endpoint, named
    by id, as a template of a platform made elsewhere would."""
    ec2 = account["session"].client("ec2", endpoint_url=account["endpoint"].url, region_name=REGION)
    vpc = ec2.create_vpc(CidrBlock="10.9.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.9.1.0/24", AvailabilityZone=f"{REGION}a")["Subnet"]["SubnetId"]
    copy = assembly.parent / "imported"
    copy.mkdir(exist_ok=True)
    template = json.loads((assembly / "Account.template.json").read_text())
    for resource in template["Resources"].values():
        if resource["Type"] == "AWS::AutoScaling::AutoScalingGroup":
            resource["Properties"]["VPCZoneIdentifier"] = [subnet]
    (copy / "Account.template.json").write_text(json.dumps(template))
    return copy


@pytest.mark.e2e
def test_the_command_line_prints_each_answer_and_exits_3_on_a_problem(
    account: dict[str, Any], assemblies: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    _ready_state(account["stand_in"])
    for name, value in account["endpoint"].credentials().items():
        monkeypatch.setenv(name, value)
    out, err = io.StringIO(), io.StringIO()
    argv = ["doctor", str(assemblies["staged"]), "--region", REGION, "--endpoint-url", account["stand_in"].url]
    assert main(argv, stdout=out, stderr=err) == 3
    text = out.getvalue()
    assert text.startswith(f"What would stop this app's Neuron capacity starting in {REGION}")
    assert "problem  pull path" in text and "fix: give the VPC a NAT gateway" in text
    assert "neuron-ecs doctor: checking quota" in err.getvalue()
    out = io.StringIO()
    assert main([*argv[:1], str(assemblies["ready"]), *argv[2:], "--json"], stdout=out, stderr=io.StringIO()) == 0
    assert {f["status"] for f in json.loads(out.getvalue())["findings"]} == {"ok"}


@pytest.fixture
def hostile(fake_aws_credentials: None) -> Iterator[StandIn]:
    server = StandIn()
    yield server
    server.close()


ACCOUNT_TEMPLATE = Path(__file__).parent / "data" / "doctor-account.template.json"
"""The ready account's capacity, service and VPC as synthesized (its other resources and metadata left out): what the
tests of a hostile endpoint check, without a synth."""


@pytest.mark.parametrize(
    ("canned", "sentence"),
    [
        (
            (400, "application/x-amz-json-1.1", b'{"__type": "AccessDeniedException", "message": "no"}'),
            "not allowed to call servicequotas:GetServiceQuota (the doctor policy allows it)",
        ),
        pytest.param(
            (400, "application/x-amz-json-1.1", b'{"__type": "ThrottlingException", "message": "slow down"}'),
            "AWS kept throttling servicequotas:GetServiceQuota after retries",
            marks=MEASURED_IN_CI,  # waits out botocore's backoff between attempts
        ),
        ((200, "application/x-amz-json-1.1", b"<html>a captive portal</html>"), "servicequotas:GetServiceQuota"),
    ],
)
def test_a_refusal_throttling_or_garbage_is_an_unknown_with_a_sentence_never_a_traceback(
    hostile: StandIn, canned: tuple[int, str, bytes], sentence: str
) -> None:
    import boto3
    from botocore.config import Config

    hostile.canned = canned
    session = boto3.Session(region_name=REGION)
    config = Config(retries={"mode": "standard", "total_max_attempts": 2}, connect_timeout=2, read_timeout=2)
    report = run_doctor(
        [str(ACCOUNT_TEMPLATE)],
        lambda service: session.client(service, endpoint_url=hostile.url, config=config),
        region=REGION,
    )
    (quota,) = [f for f in report.findings if f.check == "quota"]
    assert quota.status == "unknown" and sentence in quota.said
    # THEN every check that asks AWS is unknown, with its sentence; the pull path of subnets the template makes is read
    # from the template alone, and a template file has no manifest to read a bootstrap version from
    asked = [f for f in report.findings if (f.check != "pull path" and f.subject != "-") or f.status != "ok"]
    assert {f.status for f in asked if f.check != "pull path"} == {"unknown"}
    assert all(f.said for f in report.findings)


@MEASURED_IN_CI
def test_an_endpoint_that_drips_its_answer_is_cut_off_at_the_deadline(hostile: StandIn) -> None:
    """A byte every 0.2 s never trips a socket timeout; the run's deadline ends the check waiting on it."""
    import time

    import boto3

    hostile.canned = (200, "application/x-amz-json-1.1", b'{"Quota": {"Value": 4096}}' + b" " * 200)
    hostile.drip_s = 0.2
    session = boto3.Session(region_name=REGION)
    began = time.monotonic()
    report = run_doctor(
        [str(ACCOUNT_TEMPLATE)], lambda service: session.client(service, endpoint_url=hostile.url), region=REGION,
        deadline_s=3,
    )  # fmt: skip
    assert time.monotonic() - began < 6
    (quota,) = [f for f in report.findings if f.check == "quota"]
    assert quota.said == "did not finish within the 3 s deadline: servicequotas:GetServiceQuota was slow"
    assert all(f.said.startswith("not run: the run passed its 3 s deadline") for f in report.findings[1:])


def test_a_run_past_its_deadline_says_which_checks_it_did_not_run() -> None:
    ticks = iter(range(0, 1000, 100))
    report = run_doctor(
        [str(ACCOUNT_TEMPLATE)], lambda _: None, region=REGION, deadline_s=50, clock=lambda: next(ticks)
    )
    assert [f.check for f in report.findings] == list(CHECKS)
    assert {f.said for f in report.findings} == {"not run: the run passed its 50 s deadline"}


def test_the_policy_file_is_the_policy_the_library_writes() -> None:
    assert POLICY_FILE.read_text() == policy_text()
    document = json.loads(POLICY_FILE.read_text())
    assert all(s["Effect"] == "Allow" for s in document["Statement"])
    actions = [s["Action"] for s in document["Statement"]]
    assert all(a.split(":")[1].startswith(("Get", "Describe")) for a in actions)  # read only


def test_the_doctor_policy_construct_allows_the_file_s_actions_on_its_resources_to_whom_it_is_given() -> None:
    from aws_cdk import App, Stack
    from aws_cdk import aws_iam as iam

    from neuron_constructs import DoctorPolicy

    stack = Stack(App(analytics_reporting=False), "Pipeline")
    role = iam.Role(stack, "Runner", assumed_by=iam.AccountRootPrincipal())
    DoctorPolicy(stack, "Doctor", roles=[role])
    template = stack.node.root.synth().get_stack_by_name("Pipeline").template  # type: ignore[attr-defined]
    (policy,) = [r["Properties"] for r in template["Resources"].values() if r["Type"] == "AWS::IAM::ManagedPolicy"]
    statements = policy["PolicyDocument"]["Statement"]
    assert [s["Action"] for s in statements] == [p.action for p in DOCTOR_PERMISSIONS]
    assert policy["Roles"] == [
        {"Ref": next(k for k, r in template["Resources"].items() if r["Type"] == "AWS::IAM::Role")}
    ]
    quota = statements[0]["Resource"]
    assert quota[0] == {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":servicequotas:*:*:ec2/L-1945791B"]]}


@pytest.mark.parametrize(
    ("route", "out"),
    [
        ({"DestinationCidrBlock": "0.0.0.0/0", "NatGatewayId": "nat-1", "State": "active"}, True),
        ({"DestinationCidrBlock": "0.0.0.0/0", "NatGatewayId": "nat-1", "State": "blackhole"}, False),  # NAT deleted
        ({"DestinationCidrBlock": "0.0.0.0/0", "TransitGatewayId": "tgw-1"}, True),
        ({"DestinationCidrBlock": "0.0.0.0/0", "InstanceId": "i-1"}, True),  # a NAT instance
        ({"DestinationCidrBlock": "0.0.0.0/0", "GatewayId": "igw-1"}, True),
        ({"DestinationCidrBlock": "0.0.0.0/0", "GatewayId": "vgw-1"}, False),
        ({"DestinationCidrBlock": "10.0.0.0/16", "GatewayId": "local"}, False),
    ],
)
def test_a_way_out_is_an_active_default_route_through_a_nat_a_transit_gateway_or_the_internet(
    route: dict[str, str], out: bool
) -> None:
    from neuron_constructs.tools.doctor_launch import _route_out

    assert _route_out(route) is out


# --- the zones Fn::GetAZs lists ------------------------------------------------------------------------------------


def _capacity_in_get_azs_zones(outdir: Path) -> Path:
    """An inf2.48xlarge group in the VPC a cluster makes without an environment: its subnets' zones are ``Fn::Select``
    0 and 1 of ``Fn::GetAZs``."""
    from aws_cdk import App, Stack

    from neuron_constructs import NeuronCluster

    app = App(analytics_reporting=False, outdir=str(outdir))
    NeuronCluster(Stack(app, "Zones"), "Neuron").add_ec2_capacity("Inf2", instance_type="inf2.48xlarge")
    app.synth()
    return outdir


@pytest.mark.xdist_group("moto")
@pytest.mark.parametrize(
    ("default_subnets_in", "subnets_in"),
    [
        ("abcdef", "ab"),  # every zone has its default subnet: the first two zones
        ("cef", "ce"),  # only zones with a default subnet are listed
        ("", "ab"),  # none has one: every zone is listed
    ],
)
def test_subnets_made_in_the_zones_fn_getazs_lists_are_placed_as_cloudformation_lists_them(
    aws: Any, tmp_path: Path, default_subnets_in: str, subnets_in: str
) -> None:
    """CloudFormation's ``Fn::GetAZs`` "returns only Availability Zones that have a default subnet unless none of the
    Availability Zones has a default subnet; in that case, all Availability Zones are returned", in alphabetical
    order: the zones check names the zones the capacity's subnets will be in."""
    ec2 = aws.client("ec2")
    zone_ids = {z["ZoneName"]: z["ZoneId"] for z in ec2.describe_availability_zones()["AvailabilityZones"]}
    assert sorted(zone_ids) == [f"us-east-1{letter}" for letter in "abcdef"]  # moto's Region, a default subnet each
    for subnet in ec2.describe_subnets(Filters=[{"Name": "default-for-az", "Values": ["true"]}])["Subnets"]:
        if subnet["AvailabilityZone"][-1] not in default_subnets_in:
            ec2.delete_subnet(SubnetId=subnet["SubnetId"])
    report = run_doctor(
        [str(_capacity_in_get_azs_zones(tmp_path / "cdk.out"))], lambda service: aws.client(service), region="us-east-1"
    )
    (zones,) = [f for f in report.findings if f.check == "zones"]
    expected = sorted(zone_ids[f"us-east-1{letter}"] for letter in subnets_in)
    if zones.status == "ok":  # "... offered in its subnets' zones use1-az1, use1-az2"
        named = zones.said.split("its subnets' zones ", 1)[1].split(", ")
        assert named == expected, zones
    else:  # "... is not offered in use1-az2, a zone of its subnets; it is in ..."
        assert zones.status == "problem", zones
        missing = zones.said.split(" is not offered in ", 1)[1].split(", a zone of its subnets", 1)[0].split(", ")
        assert missing and set(missing) <= set(expected), zones
