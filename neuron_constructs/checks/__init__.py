"""The rules applied: the checks at the call that breaks a rule, the template checks by area, ``neuron-ecs lint``
and the cfn-lint rule pack. Pure functions of values and CloudFormation templates: no AWS CDK, no jsii."""
