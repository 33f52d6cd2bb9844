"""A model engine's own Prometheus metrics to CloudWatch, as embedded metric format (EMF) lines on stdout: the
engine-metrics collector, a sidecar of the model's task.

It reads the engine's ``/metrics`` answer (the Prometheus text exposition format, version 0.0.4: "Exposition
formats", prometheus.io) every :data:`PERIOD_VARIABLE` seconds, keeps the metrics of the table it is given
(:data:`TABLE_VARIABLE`, JSON written by the construct from
:data:`neuron_constructs.knowledge.engine_metrics.ENGINE_METRICS`: one row per metric, so adding a metric is one row
there and nothing here) and writes them as EMF lines, which the container's ``awslogs`` driver sends to the task's log
group, where CloudWatch Logs extracts the metrics. No CloudWatch API call is made: the sidecar needs no permission,
only its log stream, like the neuron-monitor publisher (:mod:`neuron_constructs.programs.metric_publisher`).

What it writes, each metric under ``ClusterName, Model`` (a bucket's under ``ClusterName, Model, Bucket``):

* each row of the table, when the answer holds it: a start row (``"when": "start"``, a gauge the engine sets once
  per start) once per start, when the engine first reports it; an ``"every"`` row at every scrape;
* ``BucketsCompiled``: how many buckets took :data:`COMPILED_ABOVE_VARIABLE` seconds or more to compile (vLLM Neuron's
  ``compilation_time_seconds`` "Includes compile cache hits", so a bucket read from the cache still takes some time:
  the threshold tells a compile from a hit), and ``CompiledAtStart``: 1 when a copy that should be warm
  (:data:`EXPECT_WARM_VARIABLE` is ``1``) compiled at least one bucket, else 0;
* ``TimeToHealthy``: the seconds from the task's start to the engine's first ``200`` on :data:`HEALTH_PATH`. The
  task's start is its ``PullStartedAt``, "the timestamp for when the first container image pull began", in the ECS
  task metadata endpoint version 4 (``$ECS_CONTAINER_METADATA_URI_V4/task``, which the ECS agent gives every
  container without a permission; RFC 3339 with nanoseconds, ``2020-10-02T00:15:07.620912337Z``: ECS guide, "Amazon
  ECS task metadata V4 JSON response" and its examples, on EC2 and on Managed Instances), else the collector's own
  start (it starts with the task).

The engine is read at :data:`URL_VARIABLE`: ``http://127.0.0.1:<port>`` where the containers of a task share a
network namespace (awsvpc and host), ``http://<link alias>:<port>`` in the bridge network.

Bounded: an answer is read for at most :data:`TIMEOUT_SECONDS` and :data:`MAX_ANSWER_BYTES` (what is beyond is
dropped and counted), a line longer than :data:`MAX_LINE_CHARS` and the lines after :data:`MAX_LINES` are skipped,
at most :data:`MAX_SERIES` label sets per metric are kept. A line it cannot read is skipped and counted, never a
traceback: each scrape that skipped anything writes one line saying how many and why. Standard library only.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, TextIO

__all__ = [
    "CLUSTER_VARIABLE",
    "COMPILED_ABOVE_VARIABLE",
    "DEFAULT_COMPILED_ABOVE",
    "DEFAULT_PERIOD",
    "EXPECT_WARM_VARIABLE",
    "HEALTH_PATH",
    "MAX_ANSWER_BYTES",
    "MAX_LINES",
    "MAX_LINE_CHARS",
    "MAX_SERIES",
    "METADATA_VARIABLE",
    "METRICS_PATH",
    "MODEL_VARIABLE",
    "PERIOD_VARIABLE",
    "STARTS_WITHOUT_METRICS",
    "TABLE_VARIABLE",
    "TIMEOUT_SECONDS",
    "URL_VARIABLE",
    "Collector",
    "Scrape",
    "collect_once",
    "main",
    "parse",
    "read_answer",
    "task_started",
]

URL_VARIABLE = "ENGINE_METRICS_URL"
"""The engine's base URL (``http://127.0.0.1:8000``)."""
MODEL_VARIABLE = "ENGINE_METRICS_MODEL"
"""The model's name: the ``Model`` dimension (the model's ``NEURON_PROCESS_TAG``)."""
CLUSTER_VARIABLE = "ENGINE_METRICS_CLUSTER"
"""The cluster's name: the ``ClusterName`` dimension."""
PERIOD_VARIABLE = "ENGINE_METRICS_PERIOD"
"""Seconds between two scrapes (default 15)."""
TABLE_VARIABLE = "ENGINE_METRICS_TABLE"
"""The metric table, JSON: ``{"namespace": ..., "metrics": [row, ...]}``; each row ``{"prometheus": name, "name":
CloudWatch name, "unit": CloudWatch unit, "per": label or null, "aggregate": "max" | "sum", "when": "start" |
"every", "kind": "value" | "rate" | "mean", "scale": number}``. An ``every`` row of kind ``rate`` (a counter) is written
as its increase per second since the scrape before, summed over its label sets; of kind ``mean`` (a histogram), as the
increase of its ``_sum`` over the increase of its ``_count`` (the mean of the observations since the scrape before),
nothing when nothing was observed; a counter that went down (the engine restarted) is written from the next scrape.
``scale`` multiplies the value (default 1)."""
COMPILED_ABOVE_VARIABLE = "ENGINE_METRICS_COMPILED_ABOVE"
"""Seconds of compile time from which a bucket counts as compiled rather than read from the cache (default 60)."""
EXPECT_WARM_VARIABLE = "ENGINE_METRICS_EXPECT_WARM"
"""``1`` when this copy should start warm (its model has a compile cache): ``CompiledAtStart`` is then 1 when it
compiled."""
METADATA_VARIABLE = "ECS_CONTAINER_METADATA_URI_V4"
"""Set by the ECS agent in every container: the task metadata endpoint version 4."""
METRICS_PATH = "/metrics"
HEALTH_PATH = "/health"
"""vLLM's health route (``GET /health``: 200 once the engine serves)."""
TIMEOUT_SECONDS = 5.0
"""The longest a scrape, a health check or the metadata read takes, connection and answer together."""
MAX_ANSWER_BYTES = 2 * 1024 * 1024
"""The most of an answer read: vLLM's ``/metrics`` is some hundreds of kilobytes with every histogram, and the
sidecar's memory is held to 64 MiB."""
MAX_LINE_CHARS = 16 * 1024
"""A longer line is skipped."""
MAX_LINES = 100_000
"""The lines after these are skipped."""
MAX_SERIES = 64
"""The most label sets kept per metric (per-bucket metrics: the buckets written per start)."""
MAX_LABEL_CHARS = 255
"""A dimension value (a bucket's name) is cut to this length."""
DEFAULT_PERIOD = 15.0
"""Seconds between two scrapes when :data:`PERIOD_VARIABLE` is not set."""
DEFAULT_COMPILED_ABOVE = 60.0
"""The compile time from which a bucket counts as compiled when :data:`COMPILED_ABOVE_VARIABLE` is not set."""
STARTS_WITHOUT_METRICS = 8
"""Scrapes after the first healthy answer to wait for the start rows before writing what is there."""


class Scrape:
    """What one answer held: ``series[name][labels] = value`` for the metrics asked for, and what was skipped."""

    def __init__(self) -> None:
        self.series: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
        self.skipped: dict[str, int] = {}

    def skip(self, why: str) -> None:
        self.skipped[why] = self.skipped.get(why, 0) + 1


def _labels(text: str) -> tuple[tuple[str, str], ...] | None:
    """``name="value",...`` (the inside of ``{}``) as sorted pairs; ``None`` when it is not that."""
    pairs: list[tuple[str, str]] = []
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i] in " ,":
            i += 1
        if i >= n:
            break
        start = i
        while i < n and (text[i].isalnum() or text[i] == "_"):
            i += 1
        name = text[start:i]
        while i < n and text[i] == " ":
            i += 1
        if not name or i + 1 >= n or text[i] != "=" or text[i + 1] != '"':
            return None
        i += 2
        value: list[str] = []
        while True:
            if i >= n:
                return None
            c = text[i]
            if c == "\\" and i + 1 < n:
                value.append({"n": "\n", "\\": "\\", '"': '"'}.get(text[i + 1], "\\" + text[i + 1]))
                i += 2
            elif c == '"':
                i += 1
                break
            else:
                value.append(c)
                i += 1
        pairs.append((name, "".join(value)))
        while i < n and text[i] == " ":
            i += 1
        if i < n and text[i] != ",":
            return None
    return tuple(sorted(pairs))


def _sample(line: str) -> tuple[str, tuple[tuple[str, str], ...], float] | None:
    """One sample line: ``name{labels} value [timestamp]``; ``None`` when it is not one."""
    brace = line.find("{")
    if brace >= 0:
        close = line.rfind("}")
        if close < brace:
            return None
        name, labels, rest = line[:brace].strip(), _labels(line[brace + 1 : close]), line[close + 1 :]
        if labels is None:
            return None
    else:
        parts = line.split(None, 1)
        if len(parts) != 2:
            return None
        name, labels, rest = parts[0], (), parts[1]
    fields = rest.split()
    if not name or not fields or len(fields) > 2:
        return None
    if not all(c.isalnum() or c in "_:" for c in name) or name[0].isdigit():
        return None
    try:
        value = float(fields[0])
    except ValueError:
        return None
    return name, labels, value


def parse(text: str, wanted: Iterable[str]) -> Scrape:
    """The samples of ``text`` (a Prometheus text exposition) whose metric is in ``wanted``, bounded as the module
    says; comments, ``# HELP`` and ``# TYPE`` lines are read past, a line that is not a sample is skipped and
    counted."""
    names = set(wanted)
    scrape = Scrape()
    position, number = 0, 0
    while position < len(text):
        end = text.find("\n", position)
        end = len(text) if end < 0 else end
        start, position = position, end + 1
        if number >= MAX_LINES:
            scrape.skip(f"lines after the first {MAX_LINES}")
            break
        number += 1
        if end - start > MAX_LINE_CHARS:
            scrape.skip(f"lines longer than {MAX_LINE_CHARS} characters")
            continue
        line = text[start:end].strip()
        if not line or line.startswith("#"):
            continue
        found = _sample(line)
        if found is None:
            scrape.skip("lines that are not a Prometheus sample")
            continue
        name, labels, value = found
        if name not in names:
            continue
        if not math.isfinite(value):
            scrape.skip("values that are not finite numbers")
            continue
        series = scrape.series.setdefault(name, {})
        if labels not in series and len(series) >= MAX_SERIES:
            scrape.skip(f"label sets beyond {MAX_SERIES} per metric")
            continue
        series[labels] = value
    return scrape


def _direct() -> urllib.request.OpenerDirector:
    """HTTP straight to the engine: no proxy (a task's ``HTTP_PROXY`` is for the model hub, never for its own engine
    on ``127.0.0.1``), no redirect, an error status returned as a status."""
    opener = urllib.request.OpenerDirector()
    for handler in (urllib.request.ProxyHandler({}), urllib.request.HTTPHandler()):
        opener.add_handler(handler)
    return opener


def read_answer(url: str, timeout: float = TIMEOUT_SECONDS, limit: int = MAX_ANSWER_BYTES) -> tuple[int, str, bool]:
    """``(status, text, cut)``: the answer to ``GET url``, read for at most ``timeout`` seconds in all and ``limit``
    bytes (``cut``: there was more), sent directly (``_direct``). Raises ``OSError`` (and ``ValueError`` for a URL
    it cannot use), which the caller turns into a sentence; a status other than 200 is returned unread."""
    deadline = time.monotonic() + timeout
    request = urllib.request.Request(url, headers={"Accept": "text/plain"})
    answer = _direct().open(request, timeout=timeout)
    if answer is None:  # no handler for the URL's scheme
        raise ValueError(f"{url} is not an http:// URL")
    if answer.status != 200:
        answer.close()
        return answer.status, "", False
    with answer:
        chunks: list[bytes] = []
        size = 0
        cut = False
        while True:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the answer took longer than {timeout:g} s")
            chunk = answer.read1(65536)  # what has arrived: a server that dribbles bytes meets the deadline
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                cut = True
                break
        body = b"".join(chunks)[:limit]
        if cut:
            body = body[: body.rfind(b"\n") + 1]
        return answer.status, body.decode("utf-8", "replace"), cut


def _timestamp(text: object) -> float | None:
    """An RFC 3339 time of the task metadata (``2026-12-07T15:31:52.123456789Z``) in seconds, ``None`` if not one."""
    if not isinstance(text, str) or not 20 <= len(text) <= 64:
        return None
    value = text.strip().replace("Z", "+00:00")
    if "." in value:
        head, _, tail = value.partition(".")
        count = 0
        while count < len(tail) and tail[count].isdigit():
            count += 1
        digits = tail[:count]
        zone = tail[len(digits) :]
        value = f"{head}.{digits[:6].ljust(6, '0')}{zone}"
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed.timestamp() if parsed.tzinfo is not None else None


def task_started(environment: Mapping[str, str], fallback: float) -> float:
    """The task's ``PullStartedAt`` from the task metadata endpoint, else ``fallback``."""
    base = environment.get(METADATA_VARIABLE, "")
    if not base.startswith("http://"):
        return fallback
    try:
        status, text, _ = read_answer(base.rstrip("/") + "/task", limit=256 * 1024)
        document = json.loads(text) if status == 200 else None
    except (OSError, ValueError, RecursionError):
        return fallback
    started = _timestamp(document.get("PullStartedAt")) if isinstance(document, dict) else None
    return started if started is not None and started <= fallback + 60 else fallback


def _aggregate(values: Iterable[float], how: str) -> float:
    found = list(values)
    return sum(found) if how == "sum" else max(found)


def _scale(value: object) -> float:
    """A row's ``scale``: a finite number other than a boolean, else 1."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return 1.0
    return float(value)


def _dimension(value: str) -> str:
    shown = "".join(c if 32 < ord(c) < 127 else "_" for c in value)[:MAX_LABEL_CHARS]
    return shown or "unnamed"


class Collector:
    """The collector's state over a task's life: what it has written, and when the engine first answered healthy."""

    def __init__(
        self,
        *,
        table: Mapping[str, Any],
        model: str,
        cluster: str,
        compiled_above: float = DEFAULT_COMPILED_ABOVE,
        expect_warm: bool = False,
        started: float,
    ) -> None:
        self.namespace = str(table.get("namespace") or "NeuronConstructs/Neuron")
        self.rows: list[Mapping[str, Any]] = [r for r in table.get("metrics") or [] if _row(r)]
        self.model, self.cluster = model, cluster
        self.compiled_above, self.expect_warm = compiled_above, expect_warm
        self.started = started
        self.healthy_at: float | None = None
        self.start_written = False
        self.scrapes_since_healthy = 0
        self.before: dict[str, tuple[int, float, float]] = {}
        """Per ``rate`` or ``mean`` row (by its CloudWatch name), the scrape before: its time (ms), total and count."""

    @property
    def wanted(self) -> list[str]:
        names: list[str] = []
        for row in self.rows:
            name = str(row["prometheus"])
            names += [f"{name}_sum", f"{name}_count"] if row.get("kind") == "mean" else [name]
        return names

    def _change(self, row: Mapping[str, Any], scrape: Scrape, timestamp_ms: int) -> float | None:
        """A ``rate`` row's increase per second, a ``mean`` row's mean observation, since the scrape before; ``None``
        at the first scrape, when nothing was observed, when the counter went down, or when the quotient is not a
        finite number (a garbled answer)."""
        name = str(row["prometheus"])
        if row.get("kind") == "mean":
            sums, counts = scrape.series.get(f"{name}_sum"), scrape.series.get(f"{name}_count")
            if not sums or not counts:
                return None
            total, count = sum(sums.values()), sum(counts.values())
        else:
            series = scrape.series.get(name)
            if not series:
                return None
            total, count = sum(series.values()), 0.0
        key = str(row["name"])
        before = self.before.get(key)
        self.before[key] = (timestamp_ms, total, count)
        if before is None or timestamp_ms <= before[0] or total < before[1] or count < before[2]:
            return None
        if row.get("kind") == "mean":
            change = (total - before[1]) / (count - before[2]) if count > before[2] else None
        else:
            change = (total - before[1]) * 1000.0 / (timestamp_ms - before[0])
        return change if change is not None and math.isfinite(change) else None

    def _record(self, values: Mapping[str, float], units: Mapping[str, str], timestamp_ms: int, **more: str) -> str:
        dimensions = ["ClusterName", "Model", *more]
        document = {
            "_aws": {
                "Timestamp": timestamp_ms,
                "CloudWatchMetrics": [
                    {
                        "Namespace": self.namespace,
                        "Dimensions": [dimensions],
                        "Metrics": [{"Name": name, "Unit": units[name]} for name in values],
                    }
                ],
            },
            "ClusterName": self.cluster,
            "Model": self.model,
            **more,
            **values,
        }
        return json.dumps(document, separators=(",", ":"))

    def records(self, scrape: Scrape, timestamp_ms: int) -> list[str]:
        """The EMF lines of one scrape: the ``every`` rows always, the ``start`` rows (and the derived compile
        metrics) once, when the engine first reports them or :data:`STARTS_WITHOUT_METRICS` scrapes after it
        answered healthy."""
        lines: list[str] = []
        every = [r for r in self.rows if r.get("when") == "every"]
        lines += self._rows(every, scrape, timestamp_ms)
        start = [r for r in self.rows if r.get("when") != "every"]
        if start and not self.start_written:
            reported = [r for r in start if scrape.series.get(str(r["prometheus"]))]
            waited = self.healthy_at is not None and self.scrapes_since_healthy >= STARTS_WITHOUT_METRICS
            if len(reported) == len(start) or (reported and waited):
                lines += self._rows(start, scrape, timestamp_ms)
                lines.append(self._compiled(start, scrape, timestamp_ms))
                self.start_written = True
            elif waited:
                names = ", ".join(str(r["prometheus"]) for r in start)
                lines.append(f"engine-metrics: the engine answers healthy but reports none of {names}")
                self.start_written = True
        return lines

    def _rows(self, rows: Sequence[Mapping[str, Any]], scrape: Scrape, timestamp_ms: int) -> list[str]:
        lines: list[str] = []
        values: dict[str, float] = {}
        units: dict[str, str] = {}
        for row in rows:
            name, unit, how = str(row["name"]), str(row["unit"]), str(row.get("aggregate") or "max")
            scale = _scale(row.get("scale"))
            if row.get("kind") in ("rate", "mean"):
                change = self._change(row, scrape, timestamp_ms)
                if change is not None:
                    values[name], units[name] = change * scale, unit
                continue
            series = scrape.series.get(str(row["prometheus"]))
            if not series:
                continue
            per = _per(series, str(row["per"])) if row.get("per") else {}
            values[name] = _aggregate((per or series).values(), how) * scale
            units[name] = unit
            for bucket, value in sorted(per.items()):
                lines.append(self._record({name: value * scale}, {name: unit}, timestamp_ms, Bucket=bucket))
        if values:
            lines.insert(0, self._record(values, units, timestamp_ms))
        return lines

    def _compiled(self, rows: Sequence[Mapping[str, Any]], scrape: Scrape, timestamp_ms: int) -> str:
        compiled = 0
        for row in rows:
            if row.get("compile") and row.get("per"):
                per = _per(scrape.series.get(str(row["prometheus"])) or {}, str(row["per"]))
                compiled += sum(1 for value in per.values() if value >= self.compiled_above)
        values = {"BucketsCompiled": float(compiled), "CompiledAtStart": 1.0 if compiled and self.expect_warm else 0.0}
        return self._record(values, {"BucketsCompiled": "Count", "CompiledAtStart": "Count"}, timestamp_ms)

    def healthy(self, now: float, timestamp_ms: int) -> str | None:
        """The ``TimeToHealthy`` line at the first healthy answer, else ``None``."""
        if self.healthy_at is not None:
            return None
        self.healthy_at = now
        seconds = max(0.0, round(now - self.started, 3))
        return self._record({"TimeToHealthy": seconds}, {"TimeToHealthy": "Seconds"}, timestamp_ms)

    @property
    def done(self) -> bool:
        """Nothing is left to write: healthy, the start written, and no ``every`` row."""
        every = any(r.get("when") == "every" for r in self.rows)
        start = any(r.get("when") != "every" for r in self.rows)
        return self.healthy_at is not None and (self.start_written or not start) and not every


def _per(series: Mapping[tuple[tuple[str, str], ...], float], label: str) -> dict[str, float]:
    """``series`` by the value of ``label``, the largest over its other labels: the ranks (``rank_id``) of one
    bucket compile it side by side, so the bucket took as long as its slowest rank."""
    grouped: dict[str, float] = {}
    for labels, value in series.items():
        found = dict(labels).get(label)
        if found is not None:
            bucket = _dimension(found)
            grouped[bucket] = max(grouped.get(bucket, value), value)
    return grouped


def _row(row: object) -> bool:
    return isinstance(row, dict) and all(isinstance(row.get(k), str) and row.get(k) for k in ("prometheus", "name"))


def _number(text: str | None, default: float, low: float, high: float) -> float:
    try:
        value = float(text) if text else default
    except ValueError:
        return default
    return min(max(value, low), high) if math.isfinite(value) else default


def _say(stdout: TextIO, text: str) -> None:
    stdout.write(f"engine-metrics: {text}\n")
    stdout.flush()


def collect_once(collector: Collector, base: str, stdout: TextIO, now: float, timeout: float = TIMEOUT_SECONDS) -> None:
    """One round: the health check until the first healthy answer, then the scrape; each line written, each problem
    one sentence."""
    timestamp_ms = int(now * 1000)
    if collector.healthy_at is None:
        try:
            status, _, _ = read_answer(base + HEALTH_PATH, timeout, limit=4096)
        except (OSError, ValueError) as error:
            status = 0
            reason = str(error) or type(error).__name__
            _say(stdout, f"{base}{HEALTH_PATH} does not answer yet ({reason[:200]})")
        if status == 200:
            line = collector.healthy(time.time(), timestamp_ms)
            if line:
                stdout.write(line + "\n")
        elif status:
            _say(stdout, f"{base}{HEALTH_PATH} answered {status}: not healthy yet")
    else:
        collector.scrapes_since_healthy += 1
    try:
        status, text, cut = read_answer(base + METRICS_PATH, timeout)
    except (OSError, ValueError) as error:
        reason = str(error) or type(error).__name__
        _say(stdout, f"{base}{METRICS_PATH} could not be read ({reason[:200]})")
        return
    if status != 200:
        _say(stdout, f"{base}{METRICS_PATH} answered {status}")
        return
    scrape = parse(text, collector.wanted)
    if cut:
        scrape.skip(f"bytes beyond {MAX_ANSWER_BYTES}")
    for line in collector.records(scrape, timestamp_ms):
        stdout.write(line + "\n")
    if scrape.skipped:
        said = "; ".join(f"{count} {why}" for why, count in sorted(scrape.skipped.items()))
        _say(stdout, f"skipped in {base}{METRICS_PATH}: {said}")
    stdout.flush()


def main(environment: Mapping[str, str] | None = None, stdout: TextIO = sys.stdout, rounds: int | None = None) -> int:
    """Scrape until nothing is left to write (or ``rounds`` rounds), one round each period. Returns 0; a table it
    cannot read is one sentence and exit code 2."""
    env = os.environ if environment is None else environment
    started = time.time()
    try:
        table = json.loads(env.get(TABLE_VARIABLE) or "{}")
    except (ValueError, RecursionError):
        table = None
    if not isinstance(table, dict):
        _say(stdout, f"{TABLE_VARIABLE} is not the JSON metric table; nothing is collected")
        return 2
    base = (env.get(URL_VARIABLE) or "http://127.0.0.1:8000").rstrip("/")
    collector = Collector(
        table=table,
        model=_dimension(env.get(MODEL_VARIABLE) or "unknown"),
        cluster=_dimension(env.get(CLUSTER_VARIABLE) or "unknown"),
        compiled_above=_number(env.get(COMPILED_ABOVE_VARIABLE), DEFAULT_COMPILED_ABOVE, 0.0, 86_400.0),
        expect_warm=env.get(EXPECT_WARM_VARIABLE) == "1",
        started=task_started(env, started),
    )
    period = _number(env.get(PERIOD_VARIABLE), DEFAULT_PERIOD, 0.01, 3600.0)
    done = 0
    while rounds is None or done < rounds:
        collect_once(collector, base, stdout, time.time())
        done += 1
        if collector.done:
            _say(stdout, "the start is written and no metric is read at every scrape: stopping")
            break
        time.sleep(period)
    return 0


if __name__ == "__main__":
    sys.exit(main())
