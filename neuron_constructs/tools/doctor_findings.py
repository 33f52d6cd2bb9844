"""What ``neuron-ecs doctor``'s checks share: a finding (``ok``, ``problem`` with its fix, ``unknown`` with its
reason), the report, the app under check as the templates give it, the bounded reading of paginated answers, and the
sentence for an AWS error (:mod:`neuron_constructs.tools.doctor` runs the checks)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from neuron_constructs.checks.cfn_template import EcsTemplate
from neuron_constructs.tools.quota_planning import QuotaResult

__all__ = [
    "MAX_PAGES",
    "CheckedApp",
    "Finding",
    "Report",
    "Status",
    "error_sentence",
    "pages",
    "properties_of",
    "ref_of",
]

Status = Literal["ok", "problem", "unknown"]
MAX_PAGES = 10
"""The most pages any paginated call reads."""


@dataclass(frozen=True)
class Finding:
    """One check's answer about one subject."""

    check: str
    subject: str
    status: Status
    said: str
    fix: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"check": self.check, "subject": self.subject, "status": self.status, "said": self.said, "fix": self.fix}


@dataclass
class Report:
    """Every finding, in check order, and the files that could not be read."""

    findings: list[Finding] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)

    @property
    def problems(self) -> list[Finding]:
        return [f for f in self.findings if f.status == "problem"]


@dataclass
class CheckedApp:
    """What the checks read of the templates."""

    model: EcsTemplate
    quotas: QuotaResult
    manifests: list[dict[str, Any]]
    region: str


def properties_of(resource: object) -> dict[str, Any]:
    properties = resource.get("Properties") if isinstance(resource, dict) else None
    return properties if isinstance(properties, dict) else {}


def ref_of(value: object) -> str | None:
    return value.get("Ref") if isinstance(value, dict) and isinstance(value.get("Ref"), str) else None


def pages(call: Callable[..., Any], key: str, **request: Any) -> Iterator[Any]:
    """The items under ``key`` of at most :data:`MAX_PAGES` pages of ``call``."""
    for _ in range(MAX_PAGES):
        page = call(**request)
        yield from page.get(key) or []
        token = page.get("NextToken") or page.get("nextToken")
        if not token:
            return
        request["NextToken"] = token


def error_sentence(error: BaseException, action: str) -> str | None:
    """``unknown``'s reason for an AWS error, or ``None`` if ``error`` is not one."""
    from botocore.exceptions import BotoCoreError, ClientError

    if isinstance(error, ClientError):
        action = f"{action.split(':', 1)[0]}:{error.operation_name}" if error.operation_name else action
        code = str(error.response.get("Error", {}).get("Code", ""))
        message = str(error.response.get("Error", {}).get("Message", ""))[:300]
        if "AccessDenied" in code or code in ("UnauthorizedOperation", "AccessDeniedException"):
            return f"not allowed to call {action} (the doctor policy allows it): {message}"
        if code in ("Throttling", "ThrottlingException", "RequestLimitExceeded", "TooManyRequestsException"):
            return f"AWS kept throttling {action} after retries: run doctor again in a minute"
        return f"AWS refused {action} ({code}): {message}"
    from botocore.parsers import ResponseParserError

    if isinstance(error, BotoCoreError):
        return f"{action} did not complete: {error}"
    if isinstance(error, (ResponseParserError, ValueError, KeyError, IndexError, TypeError, AttributeError)):
        return f"{action} answered something that is not the AWS answer it should be ({type(error).__name__})"
    return None


# --- the subnets and zones of each capacity ----------------------------------------------------------------------
