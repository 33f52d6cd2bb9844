"""What a model stack tells a warm-pooled capacity of another stack to prefetch: Parameter Store entries under the
platform's published prefix, their format, and the part of the warm-up script that reads them at boot.

A capacity's stack cannot name the images and model prefixes of services another stack places on it: its template
would then depend on the model stack, which already depends on the platform. So the model stack writes what its
copies need as ``String`` parameters named ``<prefix>/warm-up/<capacity>/<stack>`` (:func:`needs_path`), where
``<prefix>`` is the prefix the capacity's cluster publishes under (``NeuronCluster.publish``), and the warm-up reads
that path on every boot with ``GetParametersByPath``. The platform's template names only the path, never the model
stack; a model deployed after an instance was warmed is fetched when the instance next boots (when it leaves the pool).

The value is one line (:func:`needs_value`): the format word :data:`NEEDS_FORMAT`, then one word per need,
``image=<reference>,<GiB>`` or ``s3=<bucket>/<prefix>,<GiB>`` (``-`` for a size nobody stated). At boot the values are
untrusted input to a root script (anyone allowed to write under the prefix writes them; the platform's deny statement,
``write_protection``, keeps everyone else out), so the script:

* reads at most :data:`MOST_PARAMETERS` parameters (``--page-size 10``, the most ``GetParametersByPath`` returns per
  call, and ``--max-items``; the AWS CLI paginates) of at most :data:`MOST_VALUE_CHARACTERS` characters each (a
  standard parameter's limit), at most :data:`MOST_ENTRIES` needs in all, one level below the path (not recursive);
* matches each parameter's name and each word whole against the patterns below (``grep -Ex`` in the C locale,
  globbing off; one ``grep`` takes all the words of a parameter, a word a line, and only the lines it prints are
  used), and skips what does not match with a log line that never repeats the value;
* uses what matched only as double-quoted shell words (never ``eval``, never unquoted): the AWS CLI and Docker get
  them as single arguments that cannot start with ``-``.

The same patterns decide at synthesis what a model stack publishes (:func:`image_needs`, :func:`artifact_needs`), so
what the stack writes is what the boot script accepts; anything else warns (NEURON124) and is fetched when its task
is placed. Parameter Store limits: a standard parameter's value is at most 4 KB, its name at most 1,011 characters and
15 levels (Systems Manager user guide, "Parameter Store quotas"/"Creating Parameter Store parameters");
``GetParametersByPath`` returns at most 10 per call (``MaxResults``) and is authorized against the path in the request,
not the parameters it returns (Systems Manager user guide, "How Parameter Store authorizes parameter retrieval"). No
AWS CDK import here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "IMAGE_PATTERN",
    "MOST_ENTRIES",
    "MOST_IMAGE_CHARACTERS",
    "MOST_PARAMETERS",
    "MOST_VALUE_CHARACTERS",
    "NAME_PATTERN",
    "NEEDS_FORMAT",
    "NEEDS_PATTERN",
    "S3_PATTERN",
    "Need",
    "artifact_needs",
    "image_needs",
    "needs_path",
    "needs_script",
    "needs_value",
    "parse_needs",
]

NEEDS_FORMAT = "neuron-warm-up/1"
"""The first word of every value: the format version the boot script reads."""
MOST_PARAMETERS = 50
"""The most parameters the warm-up reads under its path (one per model stack on the capacity)."""
MOST_VALUE_CHARACTERS = 4096
"""The longest value read: a standard parameter's limit (4 KB)."""
MOST_ENTRIES = 64
"""The most needs (images and prefixes) the warm-up fetches from all parameters together."""
MOST_IMAGE_CHARACTERS = 512
"""The longest image reference published or fetched."""

_LABEL = r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?"
_COMPONENT = r"[a-z0-9]+((\.|_|__|-{1,8})[a-z0-9]+)*"
IMAGE_PATTERN = (
    rf"({_LABEL}(\.{_LABEL}){{0,8}}(:[0-9]{{1,5}})?/)?{_COMPONENT}(/{_COMPONENT}){{0,8}}"
    r"(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[a-f0-9]{64})?"
)
"""An image reference, as Docker's reference grammar writes one (distribution/reference: an optional registry host
and port, lowercase path components joined by ``.``, ``_``, ``__`` or dashes, an optional tag of at most 128
characters, an optional sha256 digest) without what the grammar allows and the warm-up does not need (IPv6 hosts,
uppercase hosts, more than nine path components). It starts with a letter or digit, so no argument can read as an
option, and holds no character a shell treats specially. A POSIX extended regular expression that Python reads the
same way."""
_BUCKET = r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]"
_SEGMENT = r"[A-Za-z0-9_.-]{1,255}"
S3_PATTERN = rf"{_BUCKET}/{_SEGMENT}(/{_SEGMENT}){{0,31}}"
"""``<bucket>/<prefix>``: an S3 bucket name (3-63 lowercase letters, digits, ``.`` and ``-``, starting and ending
with a letter or digit: S3 user guide, "General purpose bucket naming rules") and a prefix of letters, digits, ``_``,
``.`` and ``-`` in at most 32 ``/``-separated segments. Also refused, outside the pattern: ``..`` in the bucket
(S3 forbids adjacent periods) and a ``.`` or ``..`` segment in the prefix (the copy's directory,
``<MODELS_DIRECTORY>/<bucket>/<prefix>``, would climb out of the models directory)."""
_SIZE = r"(-|[0-9]{1,5}(\.[0-9]{1,3})?)"
NEEDS_PATTERN = rf"(image={IMAGE_PATTERN}|s3={S3_PATTERN}),{_SIZE}"
"""One word of a value after the format word."""
NAME_PATTERN = r"[A-Za-z0-9_.-]{1,128}"
"""The last level of a parameter's name under the path (a stack's name), and a capacity's level of the path."""


@dataclass(frozen=True)
class Need:
    """One thing a model stack's copies need on the capacity: ``kind`` ``image`` (``what`` its reference) or
    ``artifacts`` (``what`` ``<bucket>/<prefix>``), ``size_gib`` as stated (``None`` when not)."""

    kind: str
    what: str
    size_gib: float | None = None

    @property
    def word(self) -> str:
        """The need as one word of the value."""
        size = "-" if self.size_gib is None else f"{self.size_gib:.3f}".rstrip("0").rstrip(".")
        return f"{'image' if self.kind == 'image' else 's3'}={self.what},{size}"

    @property
    def url(self) -> str:
        """The image reference, or the ``s3://`` URL of the prefix."""
        return self.what if self.kind == "image" else f"s3://{self.what}"


def _size_ok(size_gib: float | None) -> bool:
    return size_gib is None or 0 < size_gib < 100_000


def image_needs(reference: str, size_gib: float | None = None) -> Need | None:
    """The need of an image named ``reference``, or ``None`` when the boot script would not accept it
    (:data:`IMAGE_PATTERN`, at most :data:`MOST_IMAGE_CHARACTERS`)."""
    if len(reference) > MOST_IMAGE_CHARACTERS or not re.fullmatch(IMAGE_PATTERN, reference) or not _size_ok(size_gib):
        return None
    return Need("image", reference, size_gib)


def artifact_needs(bucket: str, prefix: str, size_gib: float | None = None) -> Need | None:
    """The need of the model artifacts under ``s3://<bucket>/<prefix>``, or ``None`` when the boot script would not
    accept them (:data:`S3_PATTERN` and the checks outside it)."""
    what = f"{bucket}/{prefix}"
    if not re.fullmatch(S3_PATTERN, what) or ".." in bucket or not _size_ok(size_gib):
        return None
    if any(segment in (".", "..") for segment in prefix.split("/")):
        return None
    return Need("artifacts", what, size_gib)


def needs_path(prefix: str, capacity: str) -> str:
    """The Parameter Store path a capacity's warm-up reads: ``<prefix>/warm-up/<capacity>``."""
    return f"{prefix}/warm-up/{capacity}"


def needs_value(needs: Sequence[Need]) -> str:
    """The value of one parameter: :data:`NEEDS_FORMAT` and each need's word, each once, space-separated."""
    words = list(dict.fromkeys(need.word for need in needs))
    return " ".join([NEEDS_FORMAT, *words])


def parse_needs(value: str) -> tuple[list[Need], int]:
    """What the boot script takes from one value, read the same way (for ``neuron-ecs plan`` and the checks): the
    needs, and how many words it skips. A value that is too long or not of :data:`NEEDS_FORMAT` gives nothing (and
    counts as one skipped)."""
    if len(value) > MOST_VALUE_CHARACTERS:
        return [], 1
    words = value.split()
    if not words or words[0] != NEEDS_FORMAT:
        return [], 1
    needs: list[Need] = []
    skipped = 0
    for word in words[1 : MOST_ENTRIES + 1]:
        if not re.fullmatch(NEEDS_PATTERN, word):
            skipped += 1
            continue
        kind, _, rest = word.partition("=")
        what, _, size = rest.rpartition(",")
        stated = None if size == "-" else float(size)
        bucket, _, prefix = what.partition("/")
        need = image_needs(what, stated) if kind == "image" else artifact_needs(bucket, prefix, stated)
        if need is None:
            skipped += 1
        else:
            needs.append(need)
    return needs, skipped + max(0, len(words) - 1 - MOST_ENTRIES)


def _q(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"


_ECR_REGISTRY = r"[0-9]{12}\.dkr\.ecr(-fips)?\.[a-z0-9-]+\.amazonaws\.com(\.cn)?"
"""A private ECR registry's host, the one kind of registry the warm-up logs in to (with the instance role's token)."""


def needs_script(path: str) -> list[str]:
    """The lines of the warm-up that read ``path`` and fetch what the parameters under it name (inside the script's
    ``if docker started`` block; uses its ``aws_cli``, ``aws_sync``, ``log``, ``REGION``, ``MODELS`` and ``failed``).
    Every value is checked as the module says before it is used, and used only in double quotes.

    The checks fork a fixed number of processes per parameter, none per word: the words of a parameter (up to the
    bound of needs) go to one ``grep -Ex`` as a list of one word a line, and only the lines it prints are used, so a
    word is used exactly when it matches whole; one ``sed`` over those lines names the private ECR registry of each
    image (a line per word, empty when none), and the warm-up logs in to each registry until a login succeeds, then
    no more. Both run in the C locale, so a bracket expression means the ASCII characters it lists, as in Python.
    Each parameter's name is one ``grep -Eqx``."""
    return [
        "  set -f",  # no pathname expansion of anything read from Parameter Store
        f"  NEEDS={_q(path)}",
        "  nl='",  # a newline: separates the words given to grep and the registries sed names
        "'",
        '  logged_in=""',
        "  pull_need() {",  # $1 the image, $2 the parameter, $3 its private ECR registry or empty
        '    if [ -n "$3" ]; then',
        '      case " $logged_in " in',
        '        *" $3 "*) ;;',
        "        *)",
        "          region=${3#*.*.*.}; region=${region%%.*}",  # <account>.dkr.ecr[-fips].<region>.amazonaws.com
        '          if aws_cli ecr get-login-password --region "$region" | docker login --username AWS '
        '--password-stdin "$3" >/dev/null; then logged_in="$logged_in $3"; '
        'else log "could not log in to $3"; failed=$((failed + 1)); fi ;;',
        "      esac",
        "    fi",
        '    if docker pull --quiet "$1" >/dev/null; then log "pulled $1 (from $2)"; '
        'else log "could not pull $1 (from $2)"; failed=$((failed + 1)); fi',
        "  }",
        "  copy_need() {",
        '    bucket=${1%%/*}; key=${1#*/}; target="$MODELS/$bucket/$key"',
        '    case "$bucket" in *..*) log "skipped a bucket of $2 with \'..\'"; return ;; esac',
        '    case "/$key/" in */./*|*/../*) log "skipped a prefix of $2 with a . or .. segment"; return ;; esac',
        '    if mkdir -p "$target" && aws_sync "s3://$1" "$target"; then log "copied s3://$1 (from $2)"; '
        'else log "could not copy s3://$1 (from $2)"; failed=$((failed + 1)); fi',
        "  }",
        "  read_needs() {",
        '    if [ "${#2}" -gt '
        + str(MOST_VALUE_CHARACTERS)
        + ' ]; then log "skipped $1: longer than '
        + str(MOST_VALUE_CHARACTERS)
        + ' characters"; return; fi',
        "    name=$1",
        "    set -- $2",
        f'    if [ "${{1:-}}" != {_q(NEEDS_FORMAT)} ]; then log "skipped $name: not {NEEDS_FORMAT}"; return; fi',
        "    shift",
        '    words=""; taken=0',
        '    for word in "$@"; do',
        f'      if [ "$entries" -ge {MOST_ENTRIES} ]; then log "skipped the needs after the first {MOST_ENTRIES}"; '
        "break; fi",
        '      entries=$((entries + 1)); taken=$((taken + 1)); words="$words$word$nl"',
        "    done",
        '    [ "$taken" -gt 0 ] || return 0',
        # Only what grep prints is used: each line one word that matched whole.
        f"    matched=$(printf '%s' \"$words\" | LC_ALL=C grep -Ex {_q(NEEDS_PATTERN)})",
        "    IFS=$nl; set -- $matched; unset IFS",
        "    skipped=$((taken - $#))",
        '    while [ "$skipped" -gt 0 ]; do log "skipped a need of $name that matches no pattern"; '
        "skipped=$((skipped - 1)); done",
        '    [ "$#" -gt 0 ] || return 0',
        "    registries=$(printf '%s\\n' \"$@\" | LC_ALL=C sed -E -e "
        + _q(f"s#^image=({_ECR_REGISTRY})/.*#\\1#")
        + " -e t -e 's#.*##')$nl",
        '    for word in "$@"; do',
        '      registry=${registries%%"$nl"*}; registries=${registries#*"$nl"}',
        "      rest=${word#*=}; what=${rest%,*}",
        '      case "$word" in',
        f'        image=*) if [ "${{#what}}" -le {MOST_IMAGE_CHARACTERS} ]; then pull_need "$what" "$name" '
        '"$registry"; else log "skipped an image of $name: too long"; fi ;;',
        '        s3=*) copy_need "$what" "$name" ;;',
        "      esac",
        "    done",
        "  }",
        "  entries=0",
        '  listed=$(mktemp) || listed=""',
        '  if [ -z "$listed" ]; then log "could not make a temporary file"; failed=$((failed + 1));',
        '  elif aws_cli ssm get-parameters-by-path --region "$REGION" --path "$NEEDS" --no-recursive '
        f"--page-size 10 --max-items {MOST_PARAMETERS} --query 'Parameters[].[Name,Value]' --output text "
        '> "$listed"; then',
        "    tab=$(printf '\\t')",
        '    while IFS="$tab" read -r name value; do',
        '      case "$name" in ""|None) continue ;; esac',
        '      key=${name#"$NEEDS"/}',
        '      if [ "$key" = "$name" ] || ! printf \'%s\\n\' "$key" | LC_ALL=C grep -Eqx '
        + _q(NAME_PATTERN)
        + '; then log "skipped a parameter not named $NEEDS/<stack>"; continue; fi',
        '      read_needs "$key" "$value"',
        '    done < "$listed"',
        "  else",
        '    log "could not read $NEEDS"; failed=$((failed + 1))',
        "  fi",
        '  [ -n "$listed" ] && rm -f "$listed"',
        "  set +f",
    ]
