"""The commands of ``neuron-ecs``, a module per command (:mod:`neuron_constructs.tools.cli` parses the command line
and runs the one asked for), and what they share: :mod:`~neuron_constructs.tools.commands.output` (the exit statuses
and the text every command writes) and :mod:`~neuron_constructs.tools.commands.aws` (the session and the sentences
of the commands that call AWS). Each module imports the standard library only; what a command needs beyond it
(boto3, the readers of templates) it imports when it runs, so that ``neuron-ecs catalog`` starts neither boto3 nor the
AWS CDK.
"""
