"""The example app, synthesized once per test session and shared by every worker.

``python tests/example_assembly.py DIR`` synthesizes the example app with cdk-nag's packs and aws-cdk-lib's built-in
CloudFormation validation into ``DIR/examples``, then a probe that shows the validation reports what it should: one
stack with a property CloudFormation does not know, under the same validation plugin, into ``DIR/broken`` (cdk-nag's
findings on the examples, acknowledged one by one, show that pack at work). Last it writes ``DIR/ready.json``.

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


def synthesize(directory: Path) -> None:
    """Synthesize the examples into ``directory / "examples"`` and the broken probe into ``directory / "broken"``."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
    from aws_cdk import App, CfnResource, CloudFormationValidatePlugin, Stack, Validations
    from compliance_report import nag_app

    validation = CloudFormationValidatePlugin()
    app = nag_app(outdir=str(directory / "examples"))
    Validations.of(app).add_plugins(validation)
    app.synth()
    probe = App(analytics_reporting=False, outdir=str(directory / "broken"))
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


def provide(directory: Path) -> Path:
    """``directory`` with the examples synthesized: here, unless another process claimed the synthesis first."""
    try:
        os.close(os.open(directory / CLAIMED, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return wait_for(directory)
    main(directory)
    return wait_for(directory)


def main(directory: Path) -> int:
    try:
        synthesize(directory)
    except BaseException:
        state = {"ok": False, "error": traceback.format_exc()}
    else:
        state = {"ok": True}
    partial = directory / f"{READY}.partial"
    partial.write_text(json.dumps(state))
    partial.rename(directory / READY)
    return 0 if state["ok"] else 1


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
