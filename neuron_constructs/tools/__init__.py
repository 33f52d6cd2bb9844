"""Tooling over boto3 and the finished templates: the ``neuron-ecs`` command line, cluster inspection and the device
map, NeuronCore utilization, the docs' generated tables and the deployment report. Never loads the AWS CDK."""
