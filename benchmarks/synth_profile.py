"""Where a warm synth's time goes: the reference stack of ``synth_overhead_benchmark.py`` (library and plain
aws-cdk-lib) and the team app (``examples/team_app``), split into construction and synthesis, with the calls to
jsii's JavaScript runtime and the time the runtime spends calling back into Python (aspects, validations, the
template checks' validation plugin).

``python benchmarks/synth_profile.py [--runs 15] [--no-team-app]`` (``make bench-synth-profile``): after a warm-up,
each stack is built and synthesized ``--runs`` times in one process; each figure is the median over the runs.

* ``construct`` / ``synth``: seconds in the stack's construction and in ``app.synth()``;
* ``calls``: requests Python sends to the JavaScript runtime (each a round trip over a pipe), and how many of them
  were made during ``synth``;
* ``callbacks``: seconds the runtime spent in Python during ``synth`` (aspects' ``visit``, ``IValidation.validate``,
  validation plugins), by the class of the Python object called; ``template checks`` is
  ``NeuronTemplateChecks.validate`` alone (reading the templates, the checks, naming the constructs).
"""

from __future__ import annotations

import argparse
import collections
import gc
import importlib.util
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("JSII_NODE", str(ROOT / "node_modules" / ".bin" / "node"))
sys.path.insert(0, str(Path(__file__).resolve().parent))


class _Meter:
    """Counts jsii round trips and times the Python callbacks of one run."""

    def __init__(self) -> None:
        self.calls = 0
        self.callbacks: collections.Counter[str] = collections.Counter()
        self.depth = 0
        self.checks = 0.0

    @contextmanager
    def installed(self) -> Iterator[None]:
        import jsii._kernel as kernel
        from jsii._kernel.providers import process

        from neuron_constructs.base import synth_checks

        send, callback, validate = (
            process._NodeProcess.send,
            kernel._handle_callback,
            synth_checks.NeuronTemplateChecks.validate,
        )
        meter = self

        def counted_send(self: Any, request: Any, response_type: Any) -> Any:
            meter.calls += 1
            return send(self, request, response_type)

        def timed_callback(k: Any, cb: Any) -> Any:
            ref = (cb.invoke or cb.get or cb.set).objref.ref
            name = type(kernel._reference_map.resolve_id(ref)).__name__
            meter.depth += 1
            started = time.perf_counter()
            try:
                return callback(k, cb)
            finally:
                meter.depth -= 1
                if meter.depth == 0:
                    meter.callbacks[name] += time.perf_counter() - started

        def timed_validate(self: Any, context: Any) -> Any:
            started = time.perf_counter()
            try:
                return validate(self, context)
            finally:
                meter.checks += time.perf_counter() - started

        process._NodeProcess.send = counted_send  # type: ignore[method-assign]
        kernel._handle_callback = timed_callback  # type: ignore[assignment]
        synth_checks.NeuronTemplateChecks.validate = timed_validate  # type: ignore[method-assign]
        try:
            yield
        finally:
            process._NodeProcess.send = send  # type: ignore[method-assign]
            kernel._handle_callback = callback
            synth_checks.NeuronTemplateChecks.validate = validate  # type: ignore[method-assign]


def _team_app(app: Any) -> None:
    spec = importlib.util.spec_from_file_location("team_app", ROOT / "examples" / "team_app" / "app.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.build_app(app, split=module.SPLITS[0])


def _team_context() -> dict[str, Any]:
    return json.loads((ROOT / "examples" / "team_app" / "cdk.json").read_text())["context"]  # type: ignore[no-any-return]


def measure(build: Callable[[Any], Any], runs: int, context: dict[str, Any] | None = None) -> dict[str, Any]:
    from aws_cdk import App

    def once(meter: _Meter | None) -> dict[str, Any]:
        app = App(analytics_reporting=False, context=context or {})
        gc.collect()
        gc.disable()
        try:
            started = time.perf_counter()
            build(app)
            built = time.perf_counter()
            before = meter.calls if meter else 0
            app.synth()
            done = time.perf_counter()
        finally:
            gc.enable()
        return {
            "construct": built - started,
            "synth": done - built,
            "synth_calls": (meter.calls - before) if meter else 0,
        }

    for _ in range(2):
        once(None)
    results = []
    for _ in range(runs):
        meter = _Meter()
        with meter.installed():
            result = once(meter)
        result.update(calls=meter.calls, callbacks=dict(meter.callbacks), checks=meter.checks)
        results.append(result)
    names = sorted({name for r in results for name in r["callbacks"]})
    return {
        "construct_s": statistics.median(r["construct"] for r in results),
        "synth_s": statistics.median(r["synth"] for r in results),
        "calls": statistics.median(r["calls"] for r in results),
        "synth_calls": statistics.median(r["synth_calls"] for r in results),
        "template_checks_s": statistics.median(r["checks"] for r in results),
        "callbacks_s": {n: statistics.median(r["callbacks"].get(n, 0.0) for r in results) for n in names},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--no-team-app", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    import synth_overhead_benchmark as reference

    targets: dict[str, tuple[Callable[[Any], Any], dict[str, Any] | None]] = {
        "reference stack, library": (reference.library_stack, None),
        "reference stack, plain aws-cdk-lib": (reference.plain_stack, None),
    }
    if not args.no_team_app:
        targets["team app (4 stacks)"] = (_team_app, _team_context())
    results = {name: measure(build, args.runs, context) for name, (build, context) in targets.items()}
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for name, r in results.items():
        callbacks = ", ".join(f"{n} {s * 1000:.1f}" for n, s in sorted(r["callbacks_s"].items(), key=lambda x: -x[1]))
        print(
            f"{name}: construct {r['construct_s'] * 1000:.0f} ms, synth {r['synth_s'] * 1000:.0f} ms; "
            f"{r['calls']:.0f} calls to the JavaScript runtime ({r['synth_calls']:.0f} in synth); "
            f"template checks {r['template_checks_s'] * 1000:.1f} ms; callbacks (ms): {callbacks or 'none'}"
        )


if __name__ == "__main__":
    main()
