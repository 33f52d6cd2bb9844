"""``python -m neuron_constructs.local_endpoint``: deploy the app to a fresh local endpoint (``--help``)."""

import sys

from neuron_constructs.local_endpoint.deploy import main

sys.exit(main())
