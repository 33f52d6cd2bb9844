"""Serving models: ``NeuronService``, fleets and slices of one Neuron type, the load balancer, and attaching and
scaling services on it."""
