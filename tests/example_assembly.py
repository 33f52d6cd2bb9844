"""The example app, synthesized once per test session and shared by every worker.

``python tests/example_assembly.py DIR`` synthesizes the example app with cdk-nag's packs into ``DIR/examples``
(cdk-nag's findings on the examples, acknowledged one by one, show the packs at work). With
``--cloudformation-validation`` it adds aws-cdk-lib's built-in CloudFormation validation to that synthesis, then
synthesizes a probe that shows the validation reports what it should: one stack with a property CloudFormation does
not know, under the same validation plugin, into ``DIR/broken``. Last it writes ``DIR/ready.json``.

The validation runs only in a session with tests of it (:data:`VALIDATION_FIXTURES`): those are end-to-end tests
(``make test-e2e``, which CI runs), because the validation engine (a WebAssembly module) takes about 7 s of CPU time,
three times the rest of the synthesis, where the everyday loop holds to 45 s on two cores.

With workers, the session names ``DIR`` and one process synthesizes into it (:func:`provide`): the first worker, as
its first test starts, or whichever process needs the examples before anyone claimed them; every other process
waits for ``ready.json`` and reads the templates and the validation reports from disk.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path

READY = "ready.json"
"""Written last: ``{"ok": true}``, or ``{"ok": false, "error": <traceback>}``."""
CLAIMED = "claimed"
"""Made, atomically, by the one process that synthesizes into the directory."""
BROKEN = "broken"
"""The probe's directory, there only when the synthesis ran aws-cdk-lib's CloudFormation validation."""
VALIDATION_FIXTURES = frozenset({"cloudformation_validation_report", "broken_validation_report"})
"""The fixtures (``tests/conftest.py``) whose tests need the synthesis with aws-cdk-lib's CloudFormation validation."""


def synthesize(directory: Path, *, cloudformation_validation: bool = False) -> None:
    """Synthesize the examples into ``directory / "examples"``; with ``cloudformation_validation``, under aws-cdk-lib's
    CloudFormation validation, and the broken probe into ``directory / "broken"``."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
    from aws_cdk import App, CfnResource, CloudFormationValidatePlugin, Stack, Validations
    from compliance_report import nag_app

    app = nag_app(outdir=str(directory / "examples"))
    if not cloudformation_validation:
        app.synth()
        return
    validation = CloudFormationValidatePlugin()
    Validations.of(app).add_plugins(validation)
    app.synth()
    probe = App(analytics_reporting=False, outdir=str(directory / BROKEN))
    Validations.of(probe).add_plugins(validation)
    CfnResource(Stack(probe, "Broken"), "Bucket", type="AWS::S3::Bucket", properties={"NoSuchProperty": 1})
    probe.synth()


def wait_for(directory: Path, *, timeout_s: float = 600.0) -> Path:
    """``directory`` once its synthesis is done; an error with its traceback if it failed or never finished."""
    ready = directory / READY
    deadline = time.monotonic() + timeout_s
    while not ready.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"the example synthesis in {directory} did not finish within {timeout_s:.0f} s")
        time.sleep(0.05)
    state = json.loads(ready.read_text())
    if not state["ok"]:
        raise RuntimeError(f"the example synthesis failed:\n{state['error']}")
    return directory


def provide(directory: Path, *, cloudformation_validation: bool = False) -> Path:
    """``directory`` with the examples synthesized: here, unless another process claimed the synthesis first (every
    process of a session asks for the same ``cloudformation_validation``: it depends on the session's tests alone)."""
    try:
        os.close(os.open(directory / CLAIMED, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return wait_for(directory)
    main(directory, cloudformation_validation=cloudformation_validation)
    return wait_for(directory)


def main(directory: Path, *, cloudformation_validation: bool = False) -> int:
    try:
        synthesize(directory, cloudformation_validation=cloudformation_validation)
    except BaseException:
        state = {"ok": False, "error": traceback.format_exc()}
    else:
        state = {"ok": True}
    partial = directory / f"{READY}.partial"
    partial.write_text(json.dumps(state))
    partial.rename(directory / READY)
    return 0 if state["ok"] else 1


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), cloudformation_validation="--cloudformation-validation" in sys.argv[2:]))
