"""``neuron-ecs catalog``: the Neuron instance types, as a table or JSON."""

from __future__ import annotations

import argparse

from neuron_constructs.tools.commands.output import EXIT_OK, _Output, _print_json


def _catalog(args: argparse.Namespace, out: _Output) -> int:
    from neuron_constructs.knowledge.catalog import NeuronInstanceType
    from neuron_constructs.tools.tables import CATALOG_HEADERS, catalog_rows

    if args.json:
        _print_json([entry.to_json() for entry in NeuronInstanceType.all()], out)
    else:
        out.table(CATALOG_HEADERS, catalog_rows())
    return EXIT_OK
