"""``neuron-ecs digests``: each image's registry asked for the digest of the tag the library runs; a pinned tag
that moved is a finding."""

from __future__ import annotations

import argparse

from neuron_constructs.checks.terminal import terminal_safe
from neuron_constructs.tools.commands.output import EXIT_AWS_ERROR, EXIT_CONFLICT, EXIT_OK, _Output, _print_json


def _digests(args: argparse.Namespace, out: _Output) -> int:
    from neuron_constructs.tools.digests import DEADLINE_S, DigestLookupError, check_library_images

    try:
        found = check_library_images(endpoint_url=args.endpoint_url, deadline_s=args.deadline or DEADLINE_S)
    except DigestLookupError as error:
        args.stderr.write(f"neuron-ecs digests: {terminal_safe(error)}\n")
        return EXIT_AWS_ERROR
    if args.json:
        _print_json({"images": [d.to_json() for d in found]}, out)
    else:
        out.table(
            ("IMAGE", "REFERENCE", "REGISTRY DIGEST", "STATUS"),
            ((d.name, d.uri, d.registry, d.status) for d in found),
        )
        for d in found:
            if d.status == "tag moved":
                out.line(f"{d.name}: pinned to {d.pinned}, but {d.uri} is now {d.registry}")
    return EXIT_CONFLICT if any(d.status == "tag moved" for d in found) else EXIT_OK
