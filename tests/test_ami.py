"""Neuron AMIs that change on purpose: a pinned release's own SSM parameter, the warning for the recommended AMI, the
instance refresh that rolls a changed image with ECS draining, and ``neuron-ecs ami --releases`` against moto."""

from __future__ import annotations

import contextlib
import datetime
import io
import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from aws_cdk import Acknowledgment, App, Duration, Stack, Validations
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk.assertions import Annotations, Match
from conftest import imported_vpc, synth_warnings
from hypothesis import given
from hypothesis import strategies as st

from neuron_constructs import (
    AmiRollout,
    CapacityReservation,
    ManualNeuronTaskDefinition,
    NeuronAmi,
    NeuronCluster,
    NeuronConfigurationError,
    NeuronService,
)
from neuron_constructs.knowledge import ami as ami_module
from neuron_constructs.knowledge import rules
from neuron_constructs.knowledge.ami import (
    NEURON_AMI_IMAGE_ID_PARAMETER,
    NEURON_AMI_RELEASES_PATH,
    NotSsmAnswerError,
    list_neuron_ami_releases,
)
from neuron_constructs.local_endpoint.moto_server import public_parameter
from neuron_constructs.tools.cli import EXIT_AWS_ERROR, EXIT_OK, EXIT_USAGE, main

pytestmark = pytest.mark.xdist_group("moto")  # one worker loads moto

REGION = "us-east-1"
RELEASE = "2023.0.20261113"
RELEASE_PARAMETER = (
    "/aws/service/ecs/optimized-ami/amazon-linux-2023/neuron/"
    "al2023-ami-ecs-neuron-hvm-2023.0.20261113-kernel-6.1-x86_64/image_id"
)
IMAGE = ecs.ContainerImage.from_registry("public.ecr.aws/docker/library/busybox:1.37")


def _stack() -> Stack:
    return Stack(App(analytics_reporting=False), "Test", env={"account": "111111111111", "region": REGION})


def _template(stack: Stack) -> dict[str, Any]:
    app = stack.node.root
    assert isinstance(app, App)
    return app.synth().get_stack_by_name("Test").template  # type: ignore[no-any-return]


def _groups(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == "AWS::AutoScaling::AutoScalingGroup"}


def _image_parameter(template: dict[str, Any]) -> str:
    (template_resource,) = (v for v in template["Resources"].values() if v["Type"] == "AWS::EC2::LaunchTemplate")
    reference = template_resource["Properties"]["LaunchTemplateData"]["ImageId"]["Ref"]
    return str(template["Parameters"][reference]["Default"])


def _warnings(stack: Stack, rule: rules.Rule) -> list[str]:
    found = Annotations.from_stack(stack).find_warning("*", Match.string_like_regexp(rule.id))
    return [str(message.entry.data) for message in found]


# --- the AMI a capacity launches -------------------------------------------------------------------


def test_a_pinned_release_resolves_its_own_parameter_and_rolls_the_group_one_instance_at_a_time() -> None:
    stack = _stack()
    cluster = NeuronCluster(stack, "C", vpc=imported_vpc(stack))
    capacity = cluster.add_ec2_capacity(
        "Inf2", instance_type="inf2.xlarge", max_capacity=4, machine_image=NeuronAmi.release(RELEASE)
    )
    template = _template(stack)
    assert _image_parameter(template) == RELEASE_PARAMETER
    assert NeuronAmi.release(RELEASE).details_parameter == RELEASE_PARAMETER.removesuffix("/image_id")
    (group,) = _groups(template).values()
    refresh = group["UpdatePolicy"]["AutoScalingInstanceRefresh"]
    assert refresh["Strategy"] == "Rolling"
    # one of four instances at a time, launched before the old one is drained
    assert refresh["Preferences"]["MinHealthyPercentage"] == 100
    assert refresh["Preferences"]["MaxHealthyPercentage"] == 125
    # instances ECS protects from scale in are replaced, not waited on for an hour
    assert refresh["Preferences"]["ScaleInProtectedInstances"] == "Refresh"
    assert refresh["Preferences"]["InstanceWarmup"] == 600
    assert refresh["Preferences"]["SkipMatching"] is True  # instances already on the new template stay
    assert "AutoScalingRollingUpdate" not in group["UpdatePolicy"]
    # ECS drains every instance Auto Scaling terminates, the refresh's included
    (provider,) = (v for v in template["Resources"].values() if v["Type"] == "AWS::ECS::CapacityProvider")
    settings = provider["Properties"]["AutoScalingGroupProvider"]
    assert settings["ManagedDraining"] == "ENABLED"
    assert settings["ManagedTerminationProtection"] == "ENABLED"
    assert group["Properties"]["NewInstancesProtectedFromScaleIn"] is True
    assert capacity.ami == NeuronAmi.release(RELEASE) and capacity.ami_rollout == AmiRollout()
    assert _warnings(stack, rules.RECOMMENDED_AMI) == [] and _warnings(stack, rules.PINNED_AMI) == []


def test_the_recommended_ami_is_todays_template_and_warns_what_every_deploy_does() -> None:
    default, recommended = _stack(), _stack()
    NeuronCluster(default, "C", vpc=imported_vpc(default)).add_ec2_capacity("Inf2", instance_type="inf2.xlarge")
    NeuronCluster(recommended, "C", vpc=imported_vpc(recommended)).add_ec2_capacity(
        "Inf2", instance_type="inf2.xlarge", machine_image=NeuronAmi.recommended()
    )
    first, second = _template(default), _template(recommended)
    assert first == second
    assert _image_parameter(first) == NEURON_AMI_IMAGE_ID_PARAMETER
    (group,) = _groups(first).values()
    assert "AutoScalingInstanceRefresh" not in group.get("UpdatePolicy", {})
    for stack in (default, recommended):
        (warning,) = _warnings(stack, rules.RECOMMENDED_AMI)
        assert warning.startswith("Test/C/Inf2: launches the recommended Neuron AMI, resolved at every deploy")
        assert (
            "instances launched after it run the new AMI and its Neuron driver, and the running ones keep the old"
            in (warning)
        )
        assert "NeuronAmi.release('2023.0.YYYYMMDD')" in warning


def test_the_recommended_ami_warning_can_be_acknowledged() -> None:
    stack = _stack()
    capacity = NeuronCluster(stack, "C", vpc=imported_vpc(stack)).add_ec2_capacity("Inf2", instance_type="inf2.xlarge")
    Validations.of(capacity).acknowledge(
        Acknowledgment(id=rules.RECOMMENDED_AMI.warning_id, reason="the platform team rolls the AMI weekly")
    )
    assert not [w for w in synth_warnings(stack.node.root) if "NEURON125" in w]  # type: ignore[arg-type]


def test_the_recommended_ami_with_a_rollout_warns_that_a_new_ami_replaces_every_instance() -> None:
    stack = _stack()
    NeuronCluster(stack, "C", vpc=imported_vpc(stack)).add_ec2_capacity(
        "Inf2", instance_type="inf2.xlarge", machine_image=NeuronAmi.recommended(), ami_rollout=AmiRollout()
    )
    (group,) = _groups(_template(stack)).values()
    assert "AutoScalingInstanceRefresh" in group["UpdatePolicy"]
    (warning,) = _warnings(stack, rules.RECOMMENDED_AMI)
    assert "the first deploy after AWS publishes a new AMI replaces every instance of the group" in warning


def test_a_pinned_release_without_a_rollout_keeps_the_group_as_it_is() -> None:
    stack = _stack()
    NeuronCluster(stack, "C", vpc=imported_vpc(stack)).add_ec2_capacity(
        "Inf2", instance_type="inf2.xlarge", machine_image=NeuronAmi.release(RELEASE), ami_rollout=False
    )
    (group,) = _groups(_template(stack)).values()
    assert "AutoScalingInstanceRefresh" not in group.get("UpdatePolicy", {})


def test_an_other_machine_image_still_warns_as_a_pinned_ami_and_not_as_the_recommended_one() -> None:
    stack = _stack()
    NeuronCluster(stack, "C", vpc=imported_vpc(stack)).add_ec2_capacity(
        "Inf2", instance_type="inf2.xlarge", machine_image=ec2.MachineImage.generic_linux({REGION: "ami-0123456789"})
    )
    assert len(_warnings(stack, rules.PINNED_AMI)) == 1 and _warnings(stack, rules.RECOMMENDED_AMI) == []


@pytest.mark.parametrize(
    ("rollout", "expected"),
    [
        (AmiRollout(), (100, 125)),
        (AmiRollout(instances_at_a_time=2), (100, 150)),
        (AmiRollout(instances_at_a_time=4), (100, 200)),
        (AmiRollout(launch_before_terminate=False), (75, 100)),
        (AmiRollout(instances_at_a_time=3, launch_before_terminate=False), (25, 100)),
    ],
)
def test_a_rollout_replaces_the_stated_number_of_instances_of_a_full_group(
    rollout: AmiRollout, expected: tuple[int, int]
) -> None:
    assert rollout.percentages(4) == expected
    minimum, maximum = expected
    batch = (maximum - minimum) * 4 // 100
    assert batch == rollout.instances_at_a_time


@given(max_capacity=st.integers(1, 500), data=st.data())
def test_a_rollout_never_replaces_more_than_stated_nor_fewer_than_one(max_capacity: int, data: st.DataObject) -> None:
    batch = data.draw(st.integers(1, max_capacity))
    first = data.draw(st.booleans())
    minimum, maximum = AmiRollout(instances_at_a_time=batch, launch_before_terminate=first).percentages(max_capacity)
    assert 0 <= minimum <= 100 <= maximum <= 200 and 0 < maximum - minimum <= 100
    # instance refresh counts in whole percent: one percent of a group above 100 instances is more than one
    assert (maximum - minimum) * max_capacity // 100 <= max(batch, max_capacity // 100)


def test_a_rollout_refresh_waits_the_warmup_given() -> None:
    stack = _stack()
    NeuronCluster(stack, "C", vpc=imported_vpc(stack)).add_ec2_capacity(
        "Inf2",
        instance_type="inf2.xlarge",
        machine_image=NeuronAmi.release(RELEASE),
        ami_rollout=AmiRollout(instance_warmup=Duration.minutes(20)),
    )
    (group,) = _groups(_template(stack)).values()
    assert group["UpdatePolicy"]["AutoScalingInstanceRefresh"]["Preferences"]["InstanceWarmup"] == 1200


@pytest.mark.parametrize(
    ("reservation", "rollout", "warns"),
    [
        (CapacityReservation.capacity_block("cr-0123456789abcdef0"), AmiRollout(), True),
        (CapacityReservation.on_demand("cr-0123456789abcdef0"), AmiRollout(instances_at_a_time=2), True),
        (CapacityReservation.on_demand("cr-0123456789abcdef0", fallback_to_on_demand=True), AmiRollout(), False),
        (CapacityReservation.capacity_block("cr-0123456789abcdef0"), AmiRollout(launch_before_terminate=False), False),
    ],
    ids=["block", "reservation-only", "with-on-demand-fallback", "terminate-first"],
)
def test_a_refresh_that_launches_first_into_reserved_capacity_only_warns_that_it_may_find_no_room(
    reservation: CapacityReservation, rollout: AmiRollout, warns: bool
) -> None:
    """The extra instances of a launch-before-terminate batch need room the reservation may not have."""
    stack = _stack()
    NeuronCluster(stack, "C", vpc=imported_vpc(stack)).add_ec2_capacity(
        "Trn1",
        instance_type="trn1.32xlarge",
        max_capacity=2,
        machine_image=NeuronAmi.release(RELEASE),
        ami_rollout=rollout,
        capacity_reservation=reservation,
    )
    found = _warnings(stack, rules.REFRESH_INTO_RESERVED_CAPACITY)
    assert len(found) == int(warns)
    if warns:
        (warning,) = found
        assert warning.startswith(f"Test/C/Trn1: {rollout.describe()} launches up to {rollout.instances_at_a_time} ")
        assert f"the group launches only into {reservation.describe()}" in warning
        assert f"Fix: reserve {rollout.instances_at_a_time} more instance(s) than the group runs" in warning


@pytest.mark.parametrize("batch", [0, 3, -1])
def test_a_rollout_batch_outside_the_group_is_refused(batch: int) -> None:
    with pytest.raises(NeuronConfigurationError, match=r"Test/C/Inf2: AmiRollout\(instances_at_a_time=.*NEURON087"):
        NeuronCluster(_stack(), "C").add_ec2_capacity(
            "Inf2",
            instance_type="inf2.xlarge",
            max_capacity=2,
            machine_image=NeuronAmi.release(RELEASE),
            ami_rollout=AmiRollout(instances_at_a_time=batch),
        )


def _manual_service(rollout: AmiRollout, *, max_capacity: int, desired: int, minimum: int) -> Stack:
    stack = _stack()
    cluster = NeuronCluster(stack, "C", vpc=imported_vpc(stack))
    cluster.add_ec2_capacity(
        "Inf2",
        instance_type="inf2.48xlarge",
        max_capacity=max_capacity,
        machine_image=NeuronAmi.release(RELEASE),
        ami_rollout=rollout,
    )
    task = ManualNeuronTaskDefinition(stack, "T", instance_type="inf2.48xlarge", devices=[0, 1], memory_mib=8192)
    task.add_neuron_container("model", image=IMAGE)
    NeuronService(
        stack, "Svc", cluster=cluster, task_definition=task, desired_count=desired, min_healthy_percent=minimum
    )
    return stack


def test_terminating_first_is_refused_where_the_instances_left_cannot_hold_the_minimum_healthy_tasks() -> None:
    stack = _manual_service(
        AmiRollout(instances_at_a_time=2, launch_before_terminate=False), max_capacity=3, desired=2, minimum=100
    )
    with pytest.raises(RuntimeError, match=r"leaves 1 of its 3 instances.*\[NEURON087: "):
        _template(stack)


def test_terminating_first_is_accepted_where_the_instances_left_hold_the_minimum_healthy_tasks() -> None:
    stack = _manual_service(AmiRollout(launch_before_terminate=False), max_capacity=3, desired=2, minimum=100)
    (group,) = _groups(_template(stack)).values()
    assert group["UpdatePolicy"]["AutoScalingInstanceRefresh"]["Preferences"]["MinHealthyPercentage"] == 67


def _packed_capacity(kind: str, batch: int, minimum: int) -> Any:
    """A group of four inf2.48xlarge refreshed terminate-first ``batch`` at a time, holding a fleet model of three
    copies an instance or a sliced service of three slices, on all four instances; no synth (the check is a
    validation of the capacity)."""
    from neuron_constructs import NeuronFleet, SlicedNeuronService

    stack = _stack()
    cluster = NeuronCluster(stack, "C", vpc=imported_vpc(stack))
    capacity = cluster.add_ec2_capacity(
        "Inf2",
        instance_type="inf2.48xlarge",
        max_capacity=4,
        machine_image=NeuronAmi.release(RELEASE),
        ami_rollout=AmiRollout(instances_at_a_time=batch, launch_before_terminate=False),
    )
    if kind == "fleet":
        fleet = NeuronFleet(stack, "Fleet", cluster=cluster, instance_type="inf2.48xlarge", instances=4)
        fleet.add_model("Llm", devices_per_task=4, copies=3, image=IMAGE, min_healthy_percent=minimum, image_size_gib=9)
    else:
        SlicedNeuronService(
            stack,
            "Fleet",
            cluster=cluster,
            instance_type="inf2.48xlarge",
            devices_per_task=4,
            image=IMAGE,
            instances=4,
            min_healthy_percent=minimum,
            image_size_gib=9,
        )
    return capacity


@pytest.mark.parametrize("kind", ["fleet", "sliced"])
def test_terminating_first_judges_a_packed_model_by_its_copies_per_instance(kind: str) -> None:
    """Three copies on each of four instances at 50 %: 6 of 12 tasks stay; a batch of 3 leaves room for 3."""
    (problem,) = _packed_capacity(kind, batch=3, minimum=50).node.validate()
    path = "Test/Fleet/Llm" if kind == "fleet" else "Test/Fleet"
    assert (
        f"leaves 1 of its 4 instances, and {path} keeps 6 of its 12 tasks running (min_healthy_percent=50)" in problem
    )
    assert "3 on each instance (its packing plan), so a batch of 3 takes away up to 9" in problem
    assert "hold at most 3" in problem and "at most 2" in problem and "[NEURON087: " in problem
    accepted = _packed_capacity(kind, batch=2, minimum=50)
    assert accepted.node.validate() == []
    # The image size stated once reaches every copy (the warm pool's root volume check reads it there).
    assert [s.task_definition.image_sizes_gib for s in accepted.services] == [{"model": 9.0}] * 3


def test_launching_first_keeps_every_task_so_it_is_never_refused() -> None:
    stack = _manual_service(AmiRollout(instances_at_a_time=3), max_capacity=3, desired=2, minimum=100)
    (group,) = _groups(_template(stack)).values()
    assert group["UpdatePolicy"]["AutoScalingInstanceRefresh"]["Preferences"]["MaxHealthyPercentage"] == 200


# --- NeuronAmi.release --------------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["2023.0.2026111", "2023.0.20261332", "2023.6.20261113", "20261113", "", " "])
def test_a_release_that_is_not_an_ami_release_is_refused(version: str) -> None:
    with pytest.raises(NeuronConfigurationError, match=r"\[NEURON086: .*Fix: pass a release as neuron-ecs ami"):
        NeuronAmi.release(version)


def test_a_release_on_another_kernel_names_that_kernel_s_ami() -> None:
    assert NeuronAmi.release(RELEASE, kernel="6.12").image_name == (
        "al2023-ami-ecs-neuron-hvm-2023.0.20261113-kernel-6.12-x86_64"
    )
    with pytest.raises(NeuronConfigurationError, match="kernel='six' is not a kernel line"):
        NeuronAmi.release(RELEASE, kernel="six")


@given(st.dates(datetime.date(2000, 1, 1), datetime.date(2026, 12, 7)))
def test_every_calendar_date_up_to_today_is_a_release_name(day: datetime.date) -> None:
    with _clock(datetime.date(2026, 12, 7)):
        ami = NeuronAmi.release(f"2023.0.{day:%Y%m%d}")
    assert ami.parameter_name == f"{NEURON_AMI_RELEASES_PATH}/{ami.image_name}/image_id"


@contextlib.contextmanager
def _clock(day: datetime.date) -> Iterator[None]:
    """The AMI module's clock reads ``day`` within."""
    real = ami_module.today
    ami_module.today = lambda: day
    try:
        yield
    finally:
        ami_module.today = real


@pytest.mark.parametrize("version", ["2023.0.20261208", "2023.0.20270101", "2023.0.20991231"])
def test_a_release_dated_after_today_is_refused_before_the_deploy_that_would_fail(version: str) -> None:
    """GIVEN today is 2026-12-07 (UTC), WHEN a release of a later date is named, THEN NEURON086 refuses it: its SSM
    parameter does not exist, and CloudFormation would fail to resolve it at deploy."""
    with (
        _clock(datetime.date(2026, 12, 7)),
        pytest.raises(
            NeuronConfigurationError, match=r"dated 20\d\d-\d\d-\d\d, after today \(2026-12-07 UTC\).*NEURON086"
        ),
    ):
        NeuronAmi.release(version)
    with _clock(datetime.date(2026, 12, 7)):
        assert NeuronAmi.release("2023.0.20261207").version == "2023.0.20261207"  # today's is fine


def test_the_release_clock_is_today_in_utc() -> None:
    assert ami_module.today() == datetime.datetime.now(datetime.UTC).date()


@given(st.text(max_size=40))
def test_any_text_is_a_release_or_the_library_s_error(text: str) -> None:
    try:
        NeuronAmi.release(text)
    except NeuronConfigurationError as error:
        assert "[NEURON086: " in str(error)


# --- neuron-ecs ami --releases on the local endpoint --------------------------------------------------


def _publish(session: boto3.Session, name: str, value: str) -> None:
    """Put a public ``/aws/service`` parameter into moto's SSM (the API refuses that prefix to accounts)."""
    from moto.core.models import DEFAULT_ACCOUNT_ID
    from moto.ssm.models import ssm_backends

    session.client("ssm").get_parameters_by_path(Path=NEURON_AMI_RELEASES_PATH, MaxResults=1)  # loads moto's own
    backend = ssm_backends[DEFAULT_ACCOUNT_ID][REGION]
    modified = datetime.datetime(2026, 11, 13, tzinfo=datetime.UTC)
    backend._parameters[name].append(public_parameter(DEFAULT_ACCOUNT_ID, name, value, modified))


def _publish_release(session: boto3.Session, release: str, image_id: str) -> None:
    name = f"{NEURON_AMI_RELEASES_PATH}/al2023-ami-ecs-neuron-hvm-{release}-kernel-6.1-x86_64"
    details = {"image_id": image_id, "image_name": name.rsplit("/", 1)[1], "ecs_agent_version": "1.110.0"}
    _publish(session, name, json.dumps(details))
    _publish(session, f"{name}/image_id", image_id)


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(list(argv), stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


def test_ami_releases_lists_the_newest_first_with_how_to_pin_each(aws: boto3.Session) -> None:
    _publish_release(aws, "2023.0.20261030", "ami-0000000000000a030")
    _publish_release(aws, RELEASE, "ami-0000000000000b113")
    _publish(aws, f"{NEURON_AMI_RELEASES_PATH}/al2023-ami-ecs-neuron-hvm-2023.0.20991399-kernel-6.1-x86_64", "{}")
    status, out, err = run("ami", "--releases", "--limit", "2")
    assert (status, err) == (EXIT_OK, "")
    lines = out.splitlines()
    assert lines[0] == f"ECS-optimized Amazon Linux 2023 Neuron AMI releases in {REGION}, newest first"
    assert lines[1].split() == [
        "release",
        "image",
        "id",
        "ECS",
        "agent",
        "kernel",
        "Neuron",
        "driver",
        "pin",
        "it",
        "with",
    ]
    assert lines[2].split() == [
        RELEASE,
        "ami-0000000000000b113",
        "1.110.0",
        "6.1",
        "2.31",
        "or",
        "later",
        f"NeuronAmi.release('{RELEASE}')",
    ]
    assert lines[3].split()[:2] == ["2023.0.20261030", "ami-0000000000000a030"]
    assert lines[4].endswith("older releases not shown (--limit 0 shows every one)")
    assert "recommended" not in out and "image_id" not in out and "20991399" not in out


def test_ami_releases_show_each_release_s_driver_as_the_library_derives_it(aws: boto3.Session) -> None:
    """GIVEN a release after the newest SDK release whose driver a source gives (SDK 2.33.1, November 11, 2026, no
    driver version published) and one before it WHEN listed THEN each shows its derived driver, the newer as a floor
    ('or later'), in the table and in JSON, and a line says where the column comes from."""
    _publish_release(aws, "2023.0.20261203", "ami-0000000000000c203")
    _publish_release(aws, "2023.0.20261104", "ami-0000000000000b104")
    status, out, _ = run("ami", "--releases", "--limit", "2")
    rows = {line.split()[0]: line for line in out.splitlines()[2:4]}
    assert (
        status == EXIT_OK and "  2.31 or later  " in rows["2023.0.20261203"] and "  2.31  " in rows["2023.0.20261104"]
    )
    assert "'or later' is a floor" in out and "run driver 2.21" in out
    document = json.loads(run("ami", "--releases", "--limit", "2", "--json")[1])
    assert [r["neuron_driver"] for r in document["releases"]] == ["2.31 or later", "2.31"]


def test_ami_releases_json_is_every_release_read_and_its_parameter(aws: boto3.Session) -> None:
    _publish_release(aws, RELEASE, "ami-0000000000000b113")
    status, out, _ = run("ami", "--releases", "--limit", "0", "--json")
    document = json.loads(out)
    assert status == EXIT_OK and document["region"] == REGION and document["note"] is None
    releases = [entry["release"] for entry in document["releases"]]
    assert releases == sorted(releases, reverse=True) and len(releases) > 10
    assert document["releases"][0]["parameter"] == RELEASE_PARAMETER
    assert document["releases"][0]["image_id"] == "ami-0000000000000b113"


def test_ami_releases_stop_at_the_page_bound_and_say_so(aws: boto3.Session) -> None:
    _publish_release(aws, RELEASE, "ami-0000000000000b113")
    releases, note = list_neuron_ami_releases(aws.client("ssm"), max_pages=1)
    assert note == "stopped after 1 pages: older releases may be missing"
    assert 1 <= len(releases) <= 10


def test_ami_releases_stop_at_the_time_bound_and_say_so(aws: boto3.Session) -> None:
    ticks = iter(range(0, 1000, 40))
    releases, note = list_neuron_ami_releases(aws.client("ssm"), max_seconds=30, clock=lambda: next(ticks))
    assert note == "stopped after 1 pages and 30 s: older releases may be missing" and releases


def test_ami_releases_of_an_answer_that_is_not_ssm_s_is_a_sentence() -> None:
    class Proxy:
        def get_parameters_by_path(self, **_: object) -> object:
            return {"html": "<html>"}

    with pytest.raises(NotSsmAnswerError, match="not the SSM API's: no Parameters list"):
        list_neuron_ami_releases(Proxy())

    class Looping:
        def get_parameters_by_path(self, **_: object) -> object:
            return {"Parameters": [], "NextToken": "same"}

    with pytest.raises(NotSsmAnswerError, match="a NextToken that is not a new string"):
        list_neuron_ami_releases(Looping())


def test_ami_releases_of_a_region_without_any_is_a_sentence(
    monkeypatch: pytest.MonkeyPatch, fake_aws_credentials: None
) -> None:
    from neuron_constructs.knowledge import ami

    monkeypatch.setattr(ami, "list_neuron_ami_releases", lambda ssm: ([], None))
    status, out, err = run("ami", "--releases", "--region", "eu-south-2")
    assert status == EXIT_AWS_ERROR and not out
    assert err.startswith("neuron-ecs ami: Region eu-south-2 does not publish /aws/service/ecs/optimized-ami/")


def test_ami_releases_limit_is_a_count() -> None:
    assert run("ami", "--releases", "--limit", "many")[0] == EXIT_USAGE


def test_the_bounds_the_cli_page_states_are_the_code_s() -> None:
    from pathlib import Path

    from neuron_constructs.knowledge.ami import MAX_RELEASE_PAGES, MAX_RELEASE_SECONDS

    page = (Path(__file__).parent.parent / "docs" / "cli.md").read_text()
    assert (MAX_RELEASE_PAGES, MAX_RELEASE_SECONDS) == (40, 60.0)
    assert "at most 40 pages of 10 and 60 s" in page


def test_the_local_endpoint_publishes_every_release_the_examples_pin(
    aws: boto3.Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GIVEN the local endpoint's SSM (moto, with the releases its copy lacks added); THEN the release parameters the
    example stacks resolve are there, and a release added here is listed like any other."""
    from app import OLDER_DRIVER_AMI, TRN2_AMI
    from moto.moto_api._internal import urls
    from moto.ssm.models import ParameterDict

    from neuron_constructs.local_endpoint.moto_server import PINNED_NEURON_AMIS, publish_pinned_neuron_amis

    monkeypatch.setattr(ParameterDict, "_load_tree_parameters", ParameterDict._load_tree_parameters)
    monkeypatch.setattr(urls, "url_paths", dict(urls.url_paths))
    publish_pinned_neuron_amis()
    ssm = aws.client("ssm")
    for release in (OLDER_DRIVER_AMI, TRN2_AMI):
        image_id = ssm.get_parameter(Name=NeuronAmi.release(release).parameter_name)["Parameter"]["Value"]
        assert image_id.startswith("ami-"), release
    details = json.loads(ssm.get_parameter(Name=NeuronAmi.release(TRN2_AMI).details_parameter)["Parameter"]["Value"])
    assert details["image_id"] == PINNED_NEURON_AMIS[TRN2_AMI] and details["image_version"] == TRN2_AMI
    releases, _ = list_neuron_ami_releases(ssm)
    assert TRN2_AMI in [r.release for r in releases]
