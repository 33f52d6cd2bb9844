"""``python -m neuron_constructs.tools.deployment_report STACK...``: print what the stacks created."""

import sys

from neuron_constructs.tools.deployment_report.cli import main

if __name__ == "__main__":
    sys.exit(main())
