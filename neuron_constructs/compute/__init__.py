"""The cluster and what runs on it: ``NeuronCluster``, its capacity (Managed Instances, Auto Scaling groups), the
Neuron task definitions and their warm-start sources."""
