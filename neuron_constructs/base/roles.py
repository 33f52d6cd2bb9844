"""Roles the library makes whose own wildcard statements stay apart from what users grant them."""

from __future__ import annotations

from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from constructs import Construct

from neuron_constructs.base import compliance

__all__ = ["ExecutionRole"]

_ECS_TASKS = "ecs-tasks.amazonaws.com"
_REGISTRY_TOKEN = {"Action": "ecr:GetAuthorizationToken", "Effect": "Allow", "Resource": "*"}
"""The statement ``IRepository.grant_pull`` adds to the puller (ECR's token action has no resource-level
permissions)."""


class ExecutionRole(iam.Role):
    """A task (or job) execution role, assumed by ``ecs-tasks.amazonaws.com``, that keeps the registry token apart.

    Pulling any ECR image needs ``ecr:GetAuthorizationToken`` on ``*``; aws-cdk-lib adds that statement to the role
    for every ECR image (``ContainerImage.from_ecr_repository``, ``IRepository.grant_pull``). This role puts exactly
    that statement in a policy of its own, ``<role>/RegistryToken``, the one place its cdk-nag finding is
    acknowledged; every other statement, the user's included, lands in the role's ``DefaultPolicy``, where a
    wildcard is reported.
    """

    def __init__(self, scope: Construct, id: str) -> None:
        super().__init__(scope, id, assumed_by=iam.ServicePrincipal(_ECS_TASKS))
        self._token_policy: iam.Policy | None = None

    def add_to_principal_policy(self, statement: iam.PolicyStatement) -> iam.AddToPrincipalPolicyResult:
        """``statement`` in ``RegistryToken`` if it is the registry token statement, else in ``DefaultPolicy``."""
        # Its one action first: one call to the CDK's runtime rather than three for every other statement.
        if statement.actions != [_REGISTRY_TOKEN["Action"]]:
            return super().add_to_principal_policy(statement)
        rendered: Any = Stack.of(self).resolve(statement.to_statement_json())
        if rendered != _REGISTRY_TOKEN:
            return super().add_to_principal_policy(statement)
        policy = getattr(self, "_token_policy", None)
        if policy is None:
            policy = self._token_policy = iam.Policy(self, "RegistryToken", roles=[self])
            compliance.acknowledge_execution_role(policy)
        policy.add_statements(statement)
        return iam.AddToPrincipalPolicyResult(statement_added=True, policy_dependable=policy)
