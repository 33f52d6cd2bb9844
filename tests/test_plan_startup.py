"""``neuron-ecs plan --startup``: the steps a new copy takes before it serves, each duration stated or "measure it";
``Startup`` on ``add_neuron_container``; and NEURON167, a grace period shorter than the compile a copy runs."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Duration, Stack, Token
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_s3 as s3
from conftest import imported_vpc, synth_warnings

from neuron_constructs import (
    CompileCache,
    ManualNeuronTaskDefinition,
    ModelArtifacts,
    NeuronCluster,
    NeuronConfigurationError,
    NeuronLoadBalancer,
    NeuronService,
    Startup,
)
from neuron_constructs.knowledge import rules as r
from neuron_constructs.tools.cli import EXIT_CONFLICT, EXIT_OK, main

IMAGE = ecs.ContainerImage.from_registry("public.ecr.aws/docker/library/busybox:1.37")
PORT = [ecs.PortMapping(container_port=8080)]


def _app(
    tmp_path: Path,
    *,
    startup: Startup | None = None,
    grace: Duration | None = None,
    load_balanced: bool = True,
    cache: bool = False,
    precompiled: bool = False,
    warm_pool: bool = False,
) -> App:
    """One inf2.xlarge service with a stated image size and model artifacts, optionally behind a load balancer."""
    from neuron_constructs import WarmPool

    app = App(analytics_reporting=False, outdir=str(tmp_path / "cdk.out"))
    stack = Stack(app, "Models")
    cluster = NeuronCluster(stack, "Cluster", vpc=imported_vpc(stack))
    cluster.add_ec2_capacity(
        "Inf2", instance_type="inf2.xlarge", max_capacity=2, warm_pool=WarmPool() if warm_pool else None
    )
    task = ManualNeuronTaskDefinition(stack, "Llm", instance_type="inf2.xlarge", memory_mib=8192)
    bucket = s3.Bucket(stack, "Models", enforce_ssl=True)
    task.add_neuron_container(
        "model",
        image=IMAGE,
        port_mappings=PORT,
        image_size_gib=9.5,
        model_artifacts=ModelArtifacts(bucket, "llama", size_gib=16),
        compile_cache=CompileCache.in_new_bucket(stack, "Cache") if cache else None,
        startup=startup,
    )
    if precompiled:
        task.record_precompile("Models/Precompile", cache_hit_only=True)
    options: dict[str, Any] = {} if grace is None else {"health_check_grace_period": grace}
    service = NeuronService(stack, "Service", cluster=cluster, task_definition=task, **options)
    if load_balanced:
        service.attach_to_listener(NeuronLoadBalancer(stack, "Lb", cluster=cluster).listener)
    return app


def _plan(app: App, *args: str) -> tuple[int, str]:
    directory = app.synth().directory
    out = io.StringIO()
    status = main(["plan", directory, "--startup", *args], stdout=out, stderr=io.StringIO())
    return status, out.getvalue()


def _ours(app: App) -> list[str]:
    return [w for w in synth_warnings(app) if f"[{r.GRACE_SHORTER_THAN_COMPILE.id}: " in w]


# --- Startup: the stated durations -------------------------------------------------------------------


def test_startup_records_each_stated_step_in_seconds() -> None:
    stated = Startup(compile=Duration.minutes(40), load=Duration.minutes(5), image_pull=Duration.seconds(90))
    assert stated.seconds == {"image": 90.0, "compile": 2400.0, "load": 300.0}


@pytest.mark.parametrize(
    ("given", "refusal"),
    [
        ({"compile": 40}, r"Startup: compile=40\. \[NEURON026: .*Fix: pass compile=Duration\.minutes"),
        ({"load": Duration.seconds(0)}, r"Startup: load=0 seconds\. \[NEURON027: .*more than 0 s to 2,147,483,647 s"),
        ({"load": Duration.days(30_000)}, r"\[NEURON027: "),
        ({"compile": Duration.seconds(Token.as_number({"Ref": "P"}))}, r"compile is a CDK token\. \[NEURON028: "),
    ],
)
def test_startup_refuses_a_duration_that_is_not_one(given: dict[str, Any], refusal: str) -> None:
    with pytest.raises(NeuronConfigurationError, match=refusal):
        Startup(**given)


def test_add_neuron_container_refuses_a_startup_that_is_not_one() -> None:
    stack = Stack(App(analytics_reporting=False), "Models")
    task = ManualNeuronTaskDefinition(stack, "Llm", instance_type="inf2.xlarge", memory_mib=8192)
    with pytest.raises(NeuronConfigurationError, match=r"startup.*\[NEURON026: "):
        task.add_neuron_container("model", image=IMAGE, startup=Duration.minutes(40))  # type: ignore[arg-type]


def test_a_negative_duration_is_refused_by_the_cdk_before_startup_sees_it() -> None:
    with pytest.raises(Exception, match="negative"):
        Startup(compile=Duration.minutes(-1))


# --- NEURON167 at synth ------------------------------------------------------------------------------


def test_a_grace_period_shorter_than_the_stated_compile_and_load_warns_naming_both(tmp_path: Path) -> None:
    app = _app(tmp_path, startup=Startup(compile=Duration.minutes(40), load=Duration.minutes(5)))
    (found,) = _ours(app)
    assert found.startswith(
        "Models/Service/Service: a copy compiles at start (with no compile cache, no precompile) for compile 40 min + "
        "load 5 min = 45 min stated, and the health check grace period is 30 min: ECS stops the copy before it serves."
    )
    assert "Fix: pass health_check_grace_period=Duration.minutes(45) or longer, precompile the model" in found


def test_the_warning_is_acknowledged_by_its_id_on_the_service(tmp_path: Path) -> None:
    from aws_cdk import Acknowledgment, Validations

    app = _app(tmp_path, startup=Startup(compile=Duration.hours(1)), cache=True)
    service = app.node.find_child("Models").node.find_child("Service")
    reason = "the compile cache is filled before every rollout"
    Validations.of(service).acknowledge(Acknowledgment(id=r.GRACE_SHORTER_THAN_COMPILE.warning_id, reason=reason))
    assert _ours(app) == []


def test_the_weights_copy_counts_inside_the_grace_period(tmp_path: Path) -> None:
    stated = Startup(weights=Duration.minutes(10), compile=Duration.minutes(25))
    (found,) = _ours(_app(tmp_path, startup=stated))
    assert "for weights 10 min + compile 25 min = 35 min stated" in found


def test_a_grace_period_that_covers_the_stated_start_does_not_warn(tmp_path: Path) -> None:
    app = _app(tmp_path, startup=Startup(compile=Duration.minutes(40)), grace=Duration.minutes(50))
    assert _ours(app) == []


def test_no_stated_compile_does_not_warn(tmp_path: Path) -> None:
    assert _ours(_app(tmp_path, startup=Startup(load=Duration.hours(2)))) == []


def test_a_precompiled_model_does_not_warn(tmp_path: Path) -> None:
    stated = Startup(compile=Duration.minutes(40), cache_fetch=Duration.minutes(2))
    assert _ours(_app(tmp_path, startup=stated, precompiled=True)) == []


def test_a_service_no_health_check_watches_does_not_warn(tmp_path: Path) -> None:
    assert _ours(_app(tmp_path, startup=Startup(compile=Duration.hours(2)), load_balanced=False)) == []


def test_with_a_compile_cache_the_warning_says_the_first_copy_of_a_revision_misses(tmp_path: Path) -> None:
    (found,) = _ours(_app(tmp_path, startup=Startup(compile=Duration.hours(1)), cache=True))
    assert "a copy compiles at start (and the first copy of each revision misses its cache, no precompile)" in found


# --- plan --startup ---------------------------------------------------------------------------------


def test_plan_startup_lists_every_step_with_sizes_and_measure_it_where_nothing_is_stated(tmp_path: Path) -> None:
    status, out = _plan(_app(tmp_path))
    assert status == EXIT_OK
    lines = out.splitlines()
    assert lines[0] == "What a new copy of each model does before it serves"
    assert lines[2] == "Models/Service on Models/Cluster/Inf2/Provider"
    assert lines[3] == "  instance    cold start of a new instance (no warm pool): measure it"
    assert lines[4] == "  image pull  public.ecr.aws/docker/library/busybox:1.37 [9.5 GiB]: measure it [2]"
    assert lines[5].startswith("  weights     s3://<Models")  # the bucket's name: a reference
    assert lines[5].endswith("/llama (ModelArtifacts) [16 GiB]: measure it")
    assert lines[6] == (
        "  compile     engine unknown (an image the image table does not hold): every copy compiles every graph (no "
        "compile cache, no precompile): measure it [3]"
    )
    assert lines[7] == "  load        the model load until the server answers: measure it"
    assert (
        lines[8] == "  health      health check grace period 30 min against weights + compile + load: measure them [1]"
    )
    assert '[3] vLLM Neuron documentation, "Compilation Cache" (date-modified 2026-06-22)' in out
    assert "sometimes exceeding several minutes for large graphs" in out


def test_plan_startup_shows_stated_durations_and_exits_3_when_the_grace_period_is_short(tmp_path: Path) -> None:
    stated = Startup(weights=Duration.minutes(3), compile=Duration.minutes(40), load=Duration.minutes(5))
    status, out = _plan(_app(tmp_path, startup=stated))
    assert status == EXIT_CONFLICT
    assert "  compile     engine unknown" in out and ": 40 min, stated (Startup)\n" in out
    assert (
        "  health      health check grace period 30 min is SHORTER than the 48 min stated for weights + compile + load"
    ) in out


def test_plan_startup_shows_the_cache_fetch_of_a_precompiled_model(tmp_path: Path) -> None:
    stated = Startup(compile=Duration.minutes(40), cache_fetch=Duration.minutes(2), load=Duration.minutes(5))
    status, out = _plan(_app(tmp_path, startup=stated, cache=True, precompiled=True), "--json")
    assert status == EXIT_OK
    (model,) = json.loads(out)["models"]
    steps = {step["step"]: step for step in model["steps"]}
    assert "compile" not in steps
    assert steps["cacheFetch"]["what"].startswith("engine unknown (an image the image table does not hold): compiled ")
    assert "(precompiled by Models/Precompile, cache-hit-only: a miss fails the start)" in steps["cacheFetch"]["what"]
    assert "NEURON_COMPILE_CACHE_URL=s3://" in steps["cacheFetch"]["what"]
    assert (model["in_task_seconds_stated"], model["in_task_unknown"]) == (420.0, ["weights"])
    assert model["grace_period_short"] is None  # the weights copy is not stated


def test_plan_startup_json_shape(tmp_path: Path) -> None:
    status, out = _plan(_app(tmp_path, startup=Startup(compile=Duration.minutes(10)), cache=True), "--json")
    document = json.loads(out)
    assert (status, set(document)) == (EXIT_OK, {"models", "unreadable"})
    (model,) = document["models"]
    assert set(model) == {
        "model",
        "copies",
        "capacity",
        "steps",
        "health_check_grace_period_seconds",
        "health_checked",
        "in_task_steps",
        "in_task_seconds_stated",
        "in_task_unknown",
        "grace_period_short",
        "verdict",
        "to_serve_seconds_stated",
        "to_serve_unknown",
    }
    assert [step["step"] for step in model["steps"]] == [
        "instance",
        "image",
        "weights",
        "cacheFetch",
        "compile",
        "load",
    ]
    compile_step = model["steps"][4]
    assert set(compile_step) == {
        "step",
        "what",
        "size_gib",
        "seconds",
        "source",
        "reference",
        "fetched_ahead",
        "absent",
    }
    assert (compile_step["seconds"], compile_step["source"]) == (600.0, "stated (Startup)")
    assert model["steps"][3]["source"] == "measure it"  # the cache fetch: not stated
    assert model["health_check_grace_period_seconds"] == 1800
    assert model["in_task_steps"] == ["weights", "compile", "load"]  # the longest way: a miss compiles
    assert (model["in_task_seconds_stated"], model["in_task_unknown"]) == (600.0, ["weights", "load"])


def test_plan_startup_on_a_warm_pool_shows_what_the_warm_up_fetched_ahead(tmp_path: Path) -> None:
    _, out = _plan(_app(tmp_path, warm_pool=True))
    assert (
        "  instance    from the warm pool (at least 1): initialized ahead, started on scale-out: measure it [2]" in out
    )
    assert (
        "  image pull  public.ecr.aws/docker/library/busybox:1.37: pulled at warm-up, on the instance [9.5 GiB]: "
        in out
    )
    assert "copied at warm-up; the task's sync copies only what changed [16 GiB]: measure it" in out


def test_templates_without_a_neuron_service_say_so(tmp_path: Path) -> None:
    path = tmp_path / "app.template.json"
    path.write_text(json.dumps({"Resources": {"Bucket": {"Type": "AWS::S3::Bucket"}}}))
    out = io.StringIO()
    assert main(["plan", str(path), "--startup"], stdout=out, stderr=io.StringIO()) == EXIT_OK
    assert out.getvalue() == "No Neuron service in these templates, so no start to plan.\n"


# --- the examples -----------------------------------------------------------------------------------


def _example_models(example_assembly_dir: Path) -> dict[str, dict[str, Any]]:
    out, err = io.StringIO(), io.StringIO()
    status = main(["plan", str(example_assembly_dir / "examples"), "--startup", "--json"], stdout=out, stderr=err)
    assert (status, err.getvalue()) == (EXIT_OK, "")
    return {model["model"]: model for model in json.loads(out.getvalue())["models"]}


def _steps(model: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {step["step"]: step for step in model["steps"]}


def test_plan_startup_on_the_examples(example_assembly_dir: Path) -> None:
    models = _example_models(example_assembly_dir)
    # Every Neuron service of the example app, a fleet model or sliced service once; the training stack has none.
    assert {name: model["copies"] for name, model in models.items()} == {
        "NeuronInferenceEc2/Service": 1,
        "NeuronInferenceManaged/Service": 1,
        "NeuronInferenceTrn2/Service": 1,
        "NeuronMixedCluster/Inf2Service/Service": 1,
        "NeuronMixedCluster/Trn1Service/Service": 1,
        "NeuronMixedCluster/Inf1Service/Service": 1,
        "NeuronRagFleet/Fleet/Llm": 2,
        "NeuronRagFleet/Fleet/Embedding": 8,
        "NeuronSlicedInf2/Vllm": 6,
        "NeuronSlicedTrn1/Vllm": 4,
    }
    # No example states a duration: every one the copy waits for is "measure it".
    for model in models.values():
        for step in model["steps"]:
            assert step["seconds"] is None
            assert step["source"] in ("measure it", "fetched ahead", "-")
    # Inference on EC2: a cold instance, vLLM on NxD Inference compiling with no cache, no health check to race.
    ec2 = models["NeuronInferenceEc2/Service"]
    assert _steps(ec2)["instance"]["what"] == "cold start of a new instance (no warm pool)"
    assert _steps(ec2)["compile"]["what"].startswith("vLLM on NxD Inference: every copy compiles every graph")
    assert (ec2["health_checked"], ec2["grace_period_short"]) == (False, False)
    # Managed Instances: ECS launches the instance; the load balancer's grace period against compile + load.
    managed = models["NeuronInferenceManaged/Service"]
    assert _steps(managed)["instance"]["what"].startswith("Managed Instances: ECS launches an instance")
    assert (managed["health_check_grace_period_seconds"], managed["in_task_unknown"]) == (1800, ["compile", "load"])
    # Trainium2: a warm pool whose warm-up pulled the vLLM Neuron image; the model is precompiled on CPU into its
    # EFS cache, so a copy fetches its graphs and serves cache-hit-only instead of compiling.
    trn2 = _steps(models["NeuronInferenceTrn2/Service"])
    assert trn2["instance"]["what"].startswith("from the warm pool (at least 1)")
    assert trn2["image"]["fetched_ahead"] and trn2["image"]["what"].endswith(": pulled at warm-up, on the instance")
    assert "compile" not in trn2
    assert trn2["cacheFetch"]["what"].startswith("vLLM Neuron (native route): ")
    assert "(precompiled by NeuronInferenceTrn2/Service/Precompile, cache-hit-only" in trn2["cacheFetch"]["what"]
    # The mixed cluster: Inf1's image is named at deploy time, so its engine is unknown.
    inf1 = _steps(models["NeuronMixedCluster/Inf1Service/Service"])
    assert inf1["image"]["what"] == "<computed at deploy time>"
    assert inf1["compile"]["what"].startswith("engine unknown")
    assert _steps(models["NeuronMixedCluster/Trn1Service/Service"])["instance"]["what"].startswith("cold start")
    assert models["NeuronMixedCluster/Inf2Service/Service"]["capacity"].endswith("/ManagedInstances/Provider")
    # The RAG fleet's LLM and the sliced services read their own prefix of an S3 compile cache: a miss compiles.
    for name, prefix in (
        ("NeuronRagFleet/Fleet/Llm", "NeuronRagFleet/Fleet/Llm"),
        ("NeuronSlicedInf2/Vllm", "NeuronSlicedInf2/Vllm"),
        ("NeuronSlicedTrn1/Vllm", "NeuronSlicedTrn1/Vllm"),
    ):
        steps = _steps(models[name])
        assert steps["cacheFetch"]["what"].endswith(f"/neuron-compile-cache/{prefix}/"), name
        assert "NEURON_COMPILE_CACHE_URL=s3://<CompileCache" in steps["cacheFetch"]["what"], name
        assert steps["compile"]["what"].startswith("vLLM on NxD Inference: a miss (the first copy"), name
    assert "cacheFetch" not in _steps(models["NeuronRagFleet/Fleet/Embedding"])


@pytest.mark.parametrize(
    "metadata",
    [
        {"startupSeconds": "40 min"},
        {"startupSeconds": {"model": [2400]}},
        {"startupSeconds": {"model": {"compile": True, "load": -5, "weights": float("inf"), "other": 3}}},
        {"startupSeconds": {str(i): {"compile": 1} for i in range(10_000)}},
        {"precompiled": "yes"},
        {"precompiled": {"by": ["x"], "cacheHitOnly": "true"}},
    ],
)
@pytest.mark.parametrize("grace", ["600", True, -1, {"Ref": "Grace"}, None])
def test_hostile_metadata_and_grace_periods_are_read_as_not_stated(
    tmp_path: Path, metadata: dict[str, Any], grace: Any
) -> None:
    from cfn import ecs_template, manual_task, service, with_resources

    from neuron_constructs.checks.template_checks import check_template

    options = {} if grace is None else {"HealthCheckGracePeriodSeconds": grace}
    template = with_resources(
        ecs_template(),
        Task={**manual_task(), "Metadata": {"NeuronConstructs": metadata}},
        Svc=service("Task", LoadBalancers=[{"ContainerName": "model", "ContainerPort": 80}], **options),
    )
    assert not [f for f in check_template(template) if f.rule is r.GRACE_SHORTER_THAN_COMPILE]
    path = tmp_path / "app.template.json"
    path.write_text(json.dumps(template))
    out, err = io.StringIO(), io.StringIO()
    assert main(["plan", str(path), "--startup", "--json"], stdout=out, stderr=err) in (EXIT_OK, EXIT_CONFLICT)
    (model,) = json.loads(out.getvalue())["models"]
    assert all(step["seconds"] is None for step in model["steps"]) and err.getvalue() == ""


def test_the_cli_page_s_startup_sample_is_what_plan_startup_prints(tmp_path: Path) -> None:
    """docs/cli.md's LLM, built from the page's own code and synthesized: plan --startup prints the page's sample."""
    from neuron_constructs.knowledge.container_images import VLLM

    page = (Path(__file__).resolve().parent.parent / "docs" / "cli.md").read_text()
    section = page.split("## `neuron-ecs plan --startup`", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    sample = section.split("$ .venv/bin/neuron-ecs plan --startup cdk.out\n", 1)[1].split("```", 1)[0]
    app = App(analytics_reporting=False, outdir=str(tmp_path / "cdk.out"))
    stack = Stack(app, "Models")
    namespace: dict[str, Any] = {
        "stack": stack,
        "image": ecs.ContainerImage.from_registry(VLLM.uri),
        "port": PORT,
        "bucket": s3.Bucket(stack, "Weights", enforce_ssl=True),
        "Duration": Duration,
        "CompileCache": CompileCache,
        "ManualNeuronTaskDefinition": ManualNeuronTaskDefinition,
        "ModelArtifacts": ModelArtifacts,
        "NeuronCluster": NeuronCluster,
        "NeuronLoadBalancer": NeuronLoadBalancer,
        "NeuronService": NeuronService,
        "Startup": Startup,
    }
    exec(code, namespace)
    status, out = _plan(app)
    assert (status, out) == (EXIT_CONFLICT, sample)


def test_a_copy_that_runs_cache_hit_only_does_not_compile_even_without_a_recorded_precompile(tmp_path: Path) -> None:
    """vLLM Neuron's two cache-hit-only variables ("CPU Compilation"): the copy never compiles, a miss fails it."""
    from cfn import container, ecs_template, manual_task, service, with_resources

    from neuron_constructs.checks.template_checks import check_template

    environment = [
        {"Name": "NEURON_LIBTORCH_DISABLE_GRAPH_CAPTURE_BACKEND", "Value": "1"},
        {"Name": "VLLM_NEURON_DISABLE_WARMUP_COMPILE", "Value": "1"},
        {"Name": "NEURON_LIBTORCH_REMOTE_CACHE", "Value": "/mnt/neuron-compile-cache"},
    ]
    task = manual_task(containers=[container(devices=[0, 1], Environment=environment)])
    stated = {"NeuronConstructs": {"startupSeconds": {"model": {"compile": 2400, "cacheFetch": 60}}}}
    lb = [{"ContainerName": "model", "ContainerPort": 80}]
    template = with_resources(
        ecs_template(),
        Task={**task, "Metadata": stated},
        Svc=service("Task", LoadBalancers=lb, HealthCheckGracePeriodSeconds=600),
    )
    assert not [f for f in check_template(template) if f.rule is r.GRACE_SHORTER_THAN_COMPILE]
    without = copy.deepcopy(template)
    del without["Resources"]["Task"]["Properties"]["ContainerDefinitions"][0]["Environment"][1]
    assert [f for f in check_template(without) if f.rule is r.GRACE_SHORTER_THAN_COMPILE]  # one variable is not enough
    path = tmp_path / "app.template.json"
    path.write_text(json.dumps(template))
    out = io.StringIO()
    assert main(["plan", str(path), "--startup", "--json"], stdout=out, stderr=io.StringIO()) == EXIT_OK
    (model,) = json.loads(out.getvalue())["models"]
    steps = _steps(model)
    assert "compile" not in steps
    assert steps["cacheFetch"]["what"] == (
        "engine unknown (an image the image table does not hold): compiled graphs fetched from "
        "NEURON_LIBTORCH_REMOTE_CACHE=/mnt/neuron-compile-cache (cache-hit-only: a miss fails the start)"
    )
    assert (steps["cacheFetch"]["seconds"], model["grace_period_short"]) == (60.0, None)  # the load: to measure


def test_a_sliced_service_s_startup_reaches_every_copy_and_plan_shows_the_model_once(tmp_path: Path) -> None:
    from neuron_constructs import SlicedNeuronService

    app = App(analytics_reporting=False, outdir=str(tmp_path / "cdk.out"))
    stack = Stack(app, "Models")
    cluster = NeuronCluster(stack, "Cluster", vpc=imported_vpc(stack))
    cluster.add_ec2_capacity("Inf2", instance_type="inf2.24xlarge", max_capacity=2)
    sliced = SlicedNeuronService(
        stack,
        "Sliced",
        cluster=cluster,
        instance_type="inf2.24xlarge",
        devices_per_task=2,
        image=IMAGE,
        instances=2,
        startup=Startup(compile=Duration.minutes(20)),
    )
    assert [t.startup_seconds for t in sliced.task_definitions] == [{"model": {"compile": 1200.0}}] * 3
    status, out = _plan(app, "--json")
    (model,) = json.loads(out)["models"]
    assert (status, model["model"], model["copies"]) == (EXIT_OK, "Models/Sliced", 3)  # a service per slice
    assert _steps(model)["compile"]["seconds"] == 1200.0


def test_plan_startup_names_vllm_neuron_s_two_cache_tiers(tmp_path: Path) -> None:
    """A vLLM Neuron image with an Amazon EFS cache: the engine from the image table, the remote tier (its access
    point's mount) and the local tier on the instance."""
    from neuron_constructs.knowledge.container_images import VLLM_TRN2

    app = App(analytics_reporting=False, outdir=str(tmp_path / "cdk.out"))
    stack = Stack(app, "Models")
    cluster = NeuronCluster(stack, "Cluster", vpc=imported_vpc(stack))
    capacity = cluster.add_ec2_capacity("Trn2", instance_type="trn2.48xlarge", max_capacity=1)
    cache = CompileCache.in_new_file_system(stack, "Cache", vpc=cluster.vpc, clients=[capacity.auto_scaling_group])
    task = ManualNeuronTaskDefinition(stack, "Llm", instance_type="trn2.48xlarge", memory_mib=65536)
    task.add_neuron_container(
        "vllm",
        image=ecs.ContainerImage.from_registry(VLLM_TRN2.reference),
        compile_cache=cache,
        startup=Startup(cache_fetch=Duration.minutes(3), compile=Duration.minutes(50)),
    )
    NeuronService(stack, "Service", cluster=cluster, task_definition=task)
    status, out = _plan(app, "--json")
    (model,) = json.loads(out)["models"]
    steps = _steps(model)
    assert status == EXIT_OK
    assert steps["cacheFetch"]["what"].startswith(
        "vLLM Neuron (native route): a hit fetches compiled graphs from NEURON_LIBTORCH_REMOTE_CACHE="
    )
    assert ", local tier VLLM_CACHE_ROOT=" in steps["cacheFetch"]["what"]
    assert (steps["cacheFetch"]["seconds"], steps["compile"]["seconds"]) == (180.0, 3000.0)
    assert model["in_task_steps"] == ["compile", "load"]  # a miss, the longest way; no weights the template shows


def test_the_stated_instance_start_and_the_time_to_serve_are_shown(tmp_path: Path) -> None:
    """The instance duration stated for the model's capacity is its step's, and "to serve" sums every step taken."""
    stated = Startup(
        instance=Duration.minutes(6),
        image_pull=Duration.minutes(5),
        compile=Duration.minutes(40),
        load=Duration.minutes(4),
    )
    _, out = _plan(_app(tmp_path, startup=stated), "--json")
    (model,) = json.loads(out)["models"]
    steps = {step["step"]: step for step in model["steps"]}
    assert (steps["instance"]["seconds"], steps["instance"]["source"]) == (360.0, "stated (Startup)")
    assert model["to_serve_seconds_stated"] == 55 * 60.0
    assert "instance" not in model["to_serve_unknown"] and "compile" not in model["to_serve_unknown"]
