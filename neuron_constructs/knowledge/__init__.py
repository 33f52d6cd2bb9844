"""What AWS and the Neuron SDK define, as plain Python: the instance catalog, the rule table, the ECS Neuron AMI
parameters, Neuron device paths, the container images (with their Neuron SDK releases and sources) and the error
type. Imports neither the AWS CDK nor jsii."""
