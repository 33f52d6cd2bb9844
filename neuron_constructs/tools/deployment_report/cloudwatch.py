"""What a deployed stack's CloudWatch resources are, read back: alarms (a metric or metric math) and dashboards."""

from __future__ import annotations

import json
from typing import Any

from neuron_constructs.tools.deployment_report.model import ReportItem
from neuron_constructs.tools.deployment_report.reader import StackReaderBase

__all__ = ["CloudWatchReader"]


class CloudWatchReader(StackReaderBase):
    """Reads a stack's CloudWatch alarms and dashboards."""

    def alarm(self, logical_id: str, properties: dict[str, Any], physical_id: str | None) -> None:
        alarms = self.described(
            lambda: self.clients("cloudwatch").describe_alarms(AlarmNames=[str(physical_id)])["MetricAlarms"]
        )
        if not alarms:
            self.gap(logical_id)
            return
        alarm = alarms[0]
        self.compare(logical_id, "MetricName", properties.get("MetricName"), alarm.get("MetricName"))
        if properties.get("Metrics") and not alarm.get("Metrics"):
            self.gap(logical_id, "Metrics: the metric math is not kept", attribute="Metrics")
        actions = len(alarm.get("AlarmActions", []))
        watched = (
            f"{alarm.get('Namespace')} {alarm.get('MetricName')} {alarm.get('Statistic')}"
            if alarm.get("MetricName")
            else f"metric math of {len(alarm.get('Metrics', []))} queries"
        )
        details = (watched, f"{actions} action(s)")
        self.items.append(ReportItem("alarm", alarm["AlarmName"], details))

    def dashboard(self, logical_id: str, properties: dict[str, Any], physical_id: str | None) -> None:
        dashboards = self.described(lambda: [self.clients("cloudwatch").get_dashboard(DashboardName=str(physical_id))])
        if not dashboards:
            self.gap(logical_id)
            return
        widgets = json.loads(dashboards[0].get("DashboardBody") or "{}").get("widgets", [])
        self.items.append(ReportItem("dashboard", str(physical_id), (f"{len(widgets)} widgets",)))
