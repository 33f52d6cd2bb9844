"""cdk-nag's AwsSolutions and NIST 800-53 rev 5 packs on every example stack, counted.

``python examples/compliance_report.py`` prints the compliance table of the security page;
``python examples/compliance_report.py docs/security.md`` rewrites it between its
``<!-- compliance:start -->`` / ``<!-- compliance:end -->`` markers. The AwsSolutions pack must pass
(every finding fixed or acknowledged in ``neuron_constructs/base/compliance.py``); the NIST pack runs
report-only and every rule it still reports needs a reason below.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from aws_cdk import App, Validations

sys.path.insert(0, str(Path(__file__).resolve().parent))

from app import build_app

NIST_PACK = "NIST.800.53.R5"
REPORT_ONLY = "@aws-cdk/core:failSynthOnValidationErrors"

OPEN_NIST_FINDINGS = {
    "NIST.800.53.R5-CloudWatchLogGroupEncrypted": (
        "CloudWatch Logs encrypts every log group with its own key; a customer managed key is `log_encryption_key=` "
        "on `NeuronCluster` (its flow logs and the monitoring's logs) and on each task definition, sliced service or "
        "fleet model, left out of the examples to spare the key's monthly charge; the training queue's job logs and "
        "the flow logs of the VPC it makes take no key (give the queue a `vpc=` of yours for the latter)"
    ),
    "NIST.800.53.R5-IAMNoInlinePolicy": (
        "aws-cdk-lib writes each role's grants as an inline `AWS::IAM::Policy` scoped to this stack's resources; "
        "a managed policy per role would add resources and grant nothing less"
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
        "a third), the compile cache (graphs the compiler re-creates; CloudTrail records the task roles' calls) and "
        "the training datasets (nodes reach them only through FSx for Lustre); AwsSolutions-S1 is acknowledged "
        "with the same reasons"
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
    "NIST.800.53.R5-ECSTaskDefinitionUserForHostMode": (
        "the problem detector and recovery daemon runs as root in the host network: node-problem-detector reads "
        "the kernel log (/dev/kmsg) and AWS's recovery container reads its instance from the instance metadata "
        "service, which the instances block for awsvpc tasks; the instance role holds only the ECS agent's calls"
    ),
    "NIST.800.53.R5-VPCNoUnrestrictedRouteToIGW": (
        "the public subnets' default route to the internet gateway is what the NAT gateway in them needs; no "
        "instance or task runs there"
    ),
}
"""Why each NIST rule still reported stays open."""


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


def rewrite(text: str, report: dict[str, Any]) -> str:
    start, end = "<!-- compliance:start -->\n", "\n<!-- compliance:end -->"
    head, found, rest = text.partition(start)
    _, found_end, tail = rest.partition(end)
    if not (found and found_end):
        raise ValueError("missing <!-- compliance:start --> / <!-- compliance:end --> markers")
    return head + start + table(report) + end + tail


def main(argv: list[str]) -> None:
    assembly = nag_app().synth()
    report = json.loads((Path(assembly.directory) / "validation-report.json").read_text())
    if argv:
        path = Path(argv[0])
        path.write_text(rewrite(path.read_text(), report))
    else:
        print(table(report))


if __name__ == "__main__":
    main(sys.argv[1:])
