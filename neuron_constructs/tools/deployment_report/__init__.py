"""What a deployed stack created, read back through the AWS APIs (boto3), next to what its template asked.

For every ECS cluster, capacity (Auto Scaling group with its launch template, capacity
provider), task definition (with its Neuron settings), service, load balancer, AWS Batch compute
environment, job queue and job definition, FSx file system, placement group and data repository
association in a CloudFormation stack, one line from the live API. Anything the template declares
that the endpoint did not create, or a property it did not keep, is listed as a gap, so a partial
emulator (moto) is never mistaken for AWS: a service's deployment settings (percentages, circuit breaker,
deployment alarms) it did not keep, and an Auto Scaling group's ``UpdatePolicy`` (the instance refresh of an AMI
rollout), which no API reads back, among them. Works against AWS itself too:
``python -m neuron_constructs.tools.deployment_report STACK...`` after ``cdk deploy``.

:func:`~neuron_constructs.tools.deployment_report.rendering.format_reports` leads with the result: one line per stack
(created or failed, resources created of declared, services, tasks running of desired and placed, what to look at
next) and one line summarising what the endpoint did not create or keep; ``verbose=True`` (``--verbose``) adds every
resource's settings and every gap.

One module per concept, each name defined (and documented) in one of them; the report's names are importable from
here too:

* :mod:`~neuron_constructs.tools.deployment_report.model`: what a report holds (stacks, resources read, gaps,
  services' tasks);
* :mod:`~neuron_constructs.tools.deployment_report.reader`: what every area's reader shares: the template, what was
  created, the comparison that finds gaps;
* :mod:`~neuron_constructs.tools.deployment_report.ecs`,
  :mod:`~neuron_constructs.tools.deployment_report.load_balancing`,
  :mod:`~neuron_constructs.tools.deployment_report.training`,
  :mod:`~neuron_constructs.tools.deployment_report.cloudwatch`: the readers of each area;
* :mod:`~neuron_constructs.tools.deployment_report.stacks`: ``describe_stack``, which hands each declared resource to
  its reader;
* :mod:`~neuron_constructs.tools.deployment_report.rendering`: the report as text (``format_reports``,
  ``gap_summary``);
* :mod:`~neuron_constructs.tools.deployment_report.cli`: ``python -m neuron_constructs.tools.deployment_report``
  (``main``).

The comparison of a service's deployment settings and an Auto Scaling group's ``UpdatePolicy`` is
:mod:`neuron_constructs.tools.update_settings`.
"""

from __future__ import annotations

from neuron_constructs.tools.deployment_report.cli import main as main
from neuron_constructs.tools.deployment_report.model import ClientFactory as ClientFactory
from neuron_constructs.tools.deployment_report.model import Gap as Gap
from neuron_constructs.tools.deployment_report.model import ReportItem as ReportItem
from neuron_constructs.tools.deployment_report.model import ServiceState as ServiceState
from neuron_constructs.tools.deployment_report.model import StackReport as StackReport
from neuron_constructs.tools.deployment_report.rendering import endpoint_label as endpoint_label
from neuron_constructs.tools.deployment_report.rendering import format_reports as format_reports
from neuron_constructs.tools.deployment_report.rendering import gap_summary as gap_summary
from neuron_constructs.tools.deployment_report.rendering import result_line as result_line
from neuron_constructs.tools.deployment_report.stacks import describe_stack as describe_stack
from neuron_constructs.tools.deployment_report.stacks import describe_stacks as describe_stacks
from neuron_constructs.tools.deployment_report.training import EFA_DEVICE_PREFIX as EFA_DEVICE_PREFIX
