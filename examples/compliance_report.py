"""cdk-nag's AwsSolutions and NIST 800-53 rev 5 packs, and checkov, on every example stack, counted.

``make compliance-report`` runs ``python examples/compliance_report.py --checkov .venv-checkov/bin/checkov
docs/security.md README.md``: one synthesis of the example app into a temporary directory, cdk-nag's report of it,
checkov on its templates, then the security page's tables rewritten between ``<!-- compliance:start -->`` /
``<!-- compliance:end -->`` and ``<!-- checkov:start -->`` / ``<!-- checkov:end -->``, and the README's counts
between ``<!-- security-counts:start -->`` / ``<!-- security-counts:end -->``; without pages it prints them.

The AwsSolutions pack must pass (every finding fixed or acknowledged in ``neuron_constructs/base/compliance.py``);
the NIST pack runs report-only, and every rule it still reports needs a reason in :data:`OPEN_NIST_FINDINGS`, as
every check checkov fails does in :data:`OPEN_CHECKOV_FINDINGS`. An open AwsSolutions finding, a finding without a
reason or a reason without a finding fails the report (exit 1) and rewrites nothing.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aws_cdk import App, Validations

sys.path.insert(0, str(Path(__file__).resolve().parent))

from app import build_app

NIST_PACK = "NIST.800.53.R5"
REPORT_ONLY = "@aws-cdk/core:failSynthOnValidationErrors"
ROOT = Path(__file__).resolve().parent.parent
CHECKOV = ROOT / ".venv-checkov" / "bin" / "checkov"
"""Where ``make compliance-report`` installs checkov (pinned in ``requirements-checkov.txt``, a venv of its own)."""

OPEN_NIST_FINDINGS = {
    "NIST.800.53.R5-CloudWatchLogGroupEncrypted": (
        "CloudWatch Logs encrypts every log group with its own key; a customer managed key is `log_encryption_key=` "
        "on `NeuronCluster` (its flow logs and the monitoring's logs) and on each task definition, sliced service or "
        "fleet model, left out of the examples to spare the key's monthly charge; the training queue's job logs and "
        "the flow logs of the VPC it makes take no key (give the queue a `vpc=` of yours for the latter)"
    ),
    "NIST.800.53.R5-IAMNoInlinePolicy": (
        "aws-cdk-lib writes each role's grants as an inline `AWS::IAM::Policy` scoped to this stack's resources, and "
        "the library keeps its own `*` statements (the ECS agent's `EcsAgent`, the registry token's `RegistryToken`) "
        "in inline policies of their own so that a wildcard granted to the role is reported; a managed policy per "
        "role would add resources and grant nothing less"
    ),
    "NIST.800.53.R5-ALBHttpToHttpsRedirection": (
        "HTTPS needs a certificate for a domain you own: `NeuronLoadBalancer(certificate=...)` listens on 443 with "
        "TLS 1.3; the examples' internal load balancers listen on HTTP inside the VPC"
    ),
    "NIST.800.53.R5-ALBWAFEnabled": (
        "the examples' load balancers are internal, reachable from the VPC only; associate an AWS WAF web ACL with "
        "an internet-facing one (`wafv2.CfnWebACLAssociation`)"
    ),
    "NIST.800.53.R5-ELBDeletionProtectionEnabled": (
        "`make destroy` deletes the examples; `NeuronLoadBalancer(deletion_protection=True)` turns protection on"
    ),
    "NIST.800.53.R5-ELBv2ACMCertificateRequired": "as for HTTPS redirection: a certificate is yours to give",
    "NIST.800.53.R5-S3BucketLoggingEnabled": (
        "the load balancer's access-log bucket (logging access to it would need a second bucket, which would need "
        "a third), the compile cache (graphs the compiler re-creates; CloudTrail data events, where turned on, "
        "record the task roles' object calls) and the training datasets (nodes reach them only through FSx for "
        "Lustre); AwsSolutions-S1 is acknowledged with the same reasons"
    ),
    "NIST.800.53.R5-S3BucketReplicationEnabled": (
        "access logs, compiled graphs and training datasets are kept next to what uses them; replicating them to "
        "another Region doubles their cost, and a lost graph is compiled again"
    ),
    "NIST.800.53.R5-S3DefaultEncryptionKMS": (
        "Elastic Load Balancing writes access logs only to buckets encrypted with S3 managed keys (SSE-S3); the "
        "compile cache takes a customer managed key with `CompileCache.in_new_bucket(encryption_key=...)`, and "
        "training storage links any bucket, KMS-encrypted or not, with `LustreStorage(bucket=...)`"
    ),
    "NIST.800.53.R5-EC2RestrictedCommonPorts": (
        "the training nodes' security group admits all traffic from itself only: Neuron collectives over EFA and "
        "torchrun's rendezvous use ports the job picks, and EFA needs the group to allow all traffic within it; "
        "nothing outside the group is admitted"
    ),
    "NIST.800.53.R5-S3BucketVersioningEnabled": (
        "the compile cache holds graphs the compiler re-creates; versions would keep every graph it overwrites"
    ),
    "NIST.800.53.R5-VPCNoUnrestrictedRouteToIGW": (
        "the public subnets' default route to the internet gateway is what the NAT gateway in them needs; no "
        "instance or task runs there"
    ),
}
"""Why each NIST rule still reported stays open."""


OPEN_CHECKOV_FINDINGS = {
    "CKV_AWS_2": (
        "the listener of each internal load balancer (the managed, sliced, RAG and Trainium2 stacks) speaks plain HTTP "
        "on port 80, reachable from the VPC only; HTTPS needs a certificate for a domain you own: "
        "`NeuronLoadBalancer(certificate=...)` listens on 443 with the TLS 1.3 policy "
        "`ELBSecurityPolicy-TLS13-1-2-Res-2021-06`, which passes this check and CKV_AWS_103"
    ),
    "CKV_AWS_103": (
        "the same five HTTP listeners: without TLS there is no TLS version to check, and checkov passes an HTTP "
        "listener only if it redirects to HTTPS, which needs the certificate as for CKV_AWS_2"
    ),
    "CKV_AWS_115": (
        "two kinds of Lambda function: aws-cdk-lib's handler for `restrict_default_security_group` in each stack, "
        "which removes the rules of the VPC's default security group when CloudFormation creates, updates or deletes "
        "the VPC, and the Trainium2 stack's precompile function, which ECS calls at a rollout's PRE_SCALE_UP (and "
        "CloudFormation and EventBridge once per compile job); each runs a few times per deployment, so reserved "
        "concurrency would set account concurrency aside for an idle function and cap nothing"
    ),
    "CKV_AWS_116": (
        "the same functions: CloudFormation or ECS waits for the answer, and each function answers itself (FAILED "
        "with the reason when it fails, which fails the deployment or rolls it back), so a dead-letter queue would "
        "keep events nothing replays"
    ),
    "CKV_AWS_117": (
        "the same functions call AWS APIs (EC2; AWS Batch) and answer CloudFormation through a pre-signed S3 URL: "
        "outside the VPC they need neither the NAT gateway nor VPC endpoints, and nothing in the VPC calls them; "
        "every VPC the library makes has the handler, as it keeps the default security group empty, and a VPC you "
        "pass with `vpc=` has whatever you built"
    ),
    "CKV_AWS_173": (
        "the precompile function's environment holds its job queue's and job definition's ARNs, the model's "
        "construct path and two numbers, no secret; Lambda encrypts environment variables at rest with an AWS "
        "managed key"
    ),
    "CKV_AWS_136": (
        "the mixed stack's `Inf1ServingImages` repository (made by `examples/app.py`, not the library), where users "
        "push the Inf1 image: ECR encrypts it with AES-256, as every repository by default; "
        "`ecr.Repository(encryption=ecr.RepositoryEncryption.KMS)` uses the AWS managed `aws/ecr` key (or "
        "`encryption_key=` one of yours). ECR cannot change a repository's encryption, and this one is retained "
        "under a fixed name, so switching means deleting it by hand first"
    ),
    "CKV_AWS_158": (
        "every log group of the examples: each container's, the monitoring daemons' and the VPC flow logs'. "
        "CloudWatch Logs encrypts them with its own key; a customer managed key is `log_encryption_key=` on "
        "`NeuronCluster` (flow logs and monitoring) and on each task definition, sliced service or fleet model, left "
        "out of the examples to spare the key's monthly charge; the training queue's job logs and the flow logs of "
        "the VPC it makes take no key (give the queue a `vpc=` of yours for the latter)"
    ),
    "CKV_AWS_18": (
        "S3 server access logging is off on the load balancers' access-log buckets (5: logging access to them would "
        "need a second bucket, which would need a third; Elastic Load Balancing is their only writer), the compile "
        "caches (3: graphs the compiler re-creates, used only by task roles granted their one prefix) and the "
        "training datasets (1: nodes reach it only through FSx for Lustre); CloudTrail data events, where you turn "
        "them on, record the S3 calls on all of them. `CompileCache(bucket)` and `LustreStorage(bucket=...)` take a "
        "bucket of yours that logs access"
    ),
    "CKV_AWS_21": (
        "the compile caches (`CompileCache.in_new_bucket`) keep no versions: they hold graphs the compiler "
        "re-creates, and versions would keep every graph overwritten or expired; `CompileCache(bucket)` takes a "
        "versioned bucket of yours. The access-log and dataset buckets are versioned"
    ),
}
"""Why each checkov check that fails on the example templates stays open."""


def nag_app(outdir: str | None = None) -> App:
    """The example app with both packs; NIST reports only (the synth fails on neither pack)."""
    from cdk_nag import NIST80053R5Checks

    app = build_app(App(analytics_reporting=False, outdir=outdir, context={"cdkNag": "true", REPORT_ONLY: False}))
    Validations.of(app).add_plugins(NIST80053R5Checks(app))
    return app


def counts(report: dict[str, Any], pack: str) -> tuple[Counter[str], int]:
    """Open findings per rule of ``pack`` (one per violating construct), and how many are acknowledged."""
    plugin = next(p for p in report["pluginReports"] if p["pluginName"] == pack)
    found: Counter[str] = Counter()
    for violation in plugin["violations"]:
        found[violation["ruleName"]] += len(violation["violatingConstructs"])
    acknowledged = sum(len(v["violatingConstructs"]) for v in plugin.get("suppressedViolations", []))
    return found, acknowledged


@dataclass(frozen=True)
class CheckovScan:
    """checkov's counts on the example templates."""

    version: str
    resources: int
    """Resources checkov read, across the templates."""
    passed: int
    failed: Counter[str]
    """Failed resources per check ID, across the templates."""
    titles: dict[str, str]
    """Each failed check's title."""
    skipped: int
    parsing_errors: int

    @property
    def checks(self) -> int:
        """Checks run: passed and failed."""
        return self.passed + self.failed.total()


def checkov_scan(output: dict[str, Any] | list[dict[str, Any]]) -> CheckovScan:
    """The counts of checkov's JSON report (``--output json``) on CloudFormation templates."""
    reports = output if isinstance(output, list) else [output]
    report = next((r for r in reports if r.get("check_type") == "cloudformation"), None)
    if report is None:
        raise ValueError("checkov reported no CloudFormation results")
    failed: Counter[str] = Counter()
    titles: dict[str, str] = {}
    for check in report["results"].get("failed_checks", []):
        failed[check["check_id"]] += 1
        titles[check["check_id"]] = check["check_name"]
    summary = report["summary"]
    return CheckovScan(
        version=summary["checkov_version"],
        resources=summary["resource_count"],
        passed=summary["passed"],
        failed=failed,
        titles=titles,
        skipped=summary["skipped"],
        parsing_errors=summary["parsing_errors"],
    )


def run_checkov(checkov: str, templates: list[Path]) -> CheckovScan:
    """checkov's CloudFormation checks on ``templates``: nothing downloaded, exit 0 on findings (they are counted)."""
    command = [checkov, "--framework", "cloudformation", "--output", "json", "--quiet", "--soft-fail"]
    command += ["--skip-download", "--file", *(str(template) for template in templates)]
    done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=templates[0].parent)
    if done.returncode != 0:
        raise RuntimeError(f"checkov exited with {done.returncode}:\n{done.stderr}")
    return checkov_scan(json.loads(done.stdout))


def _check_order(check_id: str) -> tuple[str, int]:
    """``CKV_AWS_2`` before ``CKV_AWS_18``."""
    prefix, _, number = check_id.rpartition("_")
    return (prefix, int(number)) if number.isdigit() else (check_id, 0)


def table(report: dict[str, Any]) -> str:
    """The compliance table of the security page."""
    aws_open, aws_acknowledged = counts(report, "AwsSolutions")
    nist_open, nist_acknowledged = counts(report, NIST_PACK)
    rows = [
        "| pack | rule | open findings | why it stays open |",
        "|---|---|---|---|",
        f"| AwsSolutions | all rules | {sum(aws_open.values())} | {aws_acknowledged} acknowledged with a reason each "
        "in `neuron_constructs/base/compliance.py` |",
    ]
    for rule, number in sorted(nist_open.items()):
        reason = OPEN_NIST_FINDINGS.get(rule, "**not reviewed**")
        rows.append(f"| NIST 800-53 rev 5 | {rule.removeprefix(NIST_PACK + '-')} | {number} | {reason} |")
    if nist_acknowledged:
        rows.append(f"| NIST 800-53 rev 5 | acknowledged | {nist_acknowledged} | |")
    return "\n".join(rows)


def checkov_table(scan: CheckovScan) -> str:
    """The checkov part of the security page: the counts, then each failed check with its reason."""
    rows = [
        f"checkov {scan.version} ran {scan.checks:,} checks on the {scan.resources:,} resources of the example "
        f"templates:\n{scan.passed:,} passed, {scan.failed.total():,} failed, of {len(scan.failed)} distinct checks.",
        "",
        "| check | title | failed resources | why it stays open |",
        "|---|---|---|---|",
    ]
    for check in sorted(scan.failed, key=_check_order):
        reason = OPEN_CHECKOV_FINDINGS.get(check, "**not reviewed**")
        rows.append(f"| {check} | {scan.titles[check]} | {scan.failed[check]} | {reason} |")
    return "\n".join(rows)


def security_counts(report: dict[str, Any], scan: CheckovScan) -> str:
    """The README's counts: NIST's open findings and rules, checkov's failed and run checks."""
    nist_open, _ = counts(report, NIST_PACK)
    return (
        f"Left open on the example stacks: cdk-nag's NIST 800-53 rev 5 pack reports {nist_open.total()} findings "
        f"({len(nist_open)} rules) and\ncheckov fails {scan.failed.total()} of {scan.checks:,} checks "
        f"({len(scan.failed)} distinct checks); [Security](docs/security.md) gives each one's reason."
    )


def sections(report: dict[str, Any], scan: CheckovScan | None) -> dict[str, str]:
    """Each generated part by the name its markers use; checkov's parts only with its scan."""
    made = {"compliance": table(report)}
    if scan is not None:
        made["checkov"] = checkov_table(scan)
        made["security-counts"] = security_counts(report, scan)
    return made


MARKED = ("compliance", "checkov", "security-counts")
"""The names of the markers this report rewrites."""


def rewrite(text: str, report: dict[str, Any], scan: CheckovScan | None = None) -> str:
    """``text`` with each part it marks generated anew (checkov's parts only with ``scan``, else kept as they are);
    a page that marks none, or a start marker without its end, is an error."""
    if not any(f"<!-- {name}:start -->" in text for name in MARKED):
        raise ValueError("no <!-- compliance|checkov|security-counts:start --> markers")
    for name, content in sections(report, scan).items():
        start, end = f"<!-- {name}:start -->\n", f"\n<!-- {name}:end -->"
        head, found, rest = text.partition(start)
        if not found:
            continue
        _, found_end, tail = rest.partition(end)
        if not found_end:
            raise ValueError(f"{start.strip()} without {end.strip()}")
        text = head + start + content + end + tail
    return text


def unexplained(found: Mapping[str, int], reasons: Mapping[str, str], what: str, where: str) -> list[str]:
    """What keeps ``reasons`` from being the reasons of exactly what is ``found``."""
    missing = [
        f"{what} {name} fails {found[name]} time(s), without a reason in {where}"
        for name in found
        if name not in reasons
    ]
    stale = [f"{where} has a reason for {what} {name}, which fails nowhere" for name in reasons if name not in found]
    return missing + stale


def problems(report: dict[str, Any], scan: CheckovScan, resources: int) -> list[str]:
    """Why the report is not true: an open AwsSolutions finding, a NIST rule or checkov check failing without a
    reason or a reason without its failure, or checkov not reading every one of the templates' ``resources``."""
    aws_open, _ = counts(report, "AwsSolutions")
    found = [
        f"AwsSolutions rule {rule} has {number} open finding(s): fix or acknowledge them with a reason"
        for rule, number in aws_open.items()
    ]
    found += unexplained(counts(report, NIST_PACK)[0], OPEN_NIST_FINDINGS, "NIST rule", "OPEN_NIST_FINDINGS")
    found += unexplained(scan.failed, OPEN_CHECKOV_FINDINGS, "checkov check", "OPEN_CHECKOV_FINDINGS")
    if scan.parsing_errors or scan.resources != resources:
        found.append(f"checkov read {scan.resources} of {resources} resources ({scan.parsing_errors} parsing errors)")
    if scan.skipped:
        found.append(f"checkov skipped {scan.skipped} check(s): give a reason in OPEN_CHECKOV_FINDINGS instead")
    return found


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument("--checkov", default=str(CHECKOV), help="checkov's executable (default: %(default)s)")
    parser.add_argument("pages", nargs="*", type=Path, help="pages to rewrite; none: print the generated parts")
    args = parser.parse_args(argv)
    checkov = shutil.which(args.checkov)
    if checkov is None:
        parser.error(f"no checkov at {args.checkov}: `make compliance-report` installs it")
    with tempfile.TemporaryDirectory(prefix="compliance-report-") as directory:
        assembly = nag_app(outdir=directory).synth()
        report = json.loads((Path(assembly.directory) / "validation-report.json").read_text())
        templates = [Path(stack.template_full_path) for stack in assembly.stacks_recursively]
        resources = sum(len(json.loads(template.read_text()).get("Resources", {})) for template in templates)
        scan = run_checkov(checkov, templates)
    found = problems(report, scan, resources)
    if found or not args.pages:
        print("\n\n".join(sections(report, scan).values()))
    if found:
        print("\n".join(["", "The report is not true:", *found]), file=sys.stderr)
        return 1
    for page in args.pages:
        page.write_text(rewrite(page.read_text(), report, scan))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
