"""Neuron metrics in CloudWatch, a dashboard, alarms and hardware-problem recovery for a cluster."""
