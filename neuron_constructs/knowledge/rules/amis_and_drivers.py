"""Rules on the ECS Neuron AMI and the Neuron driver it carries: the Neuron AMI, its releases and the recommended
one, AMI rollouts, the driver against the runtime of an image's Neuron SDK release, and the images Neuron
supports on each instance family.
"""

from __future__ import annotations

from neuron_constructs.knowledge.rules.rule import ECS_NEURON_PAGE, Rule

__all__ = [
    "AMI_RELEASE",
    "AMI_ROLLOUT",
    "DRIVER_CHECK_INPUT",
    "DRIVER_CHECK_REFUSES_CURRENT",
    "DRIVER_OUTSIDE_RUNTIME",
    "IMAGE_BEHIND_NEWEST_DRIVER",
    "IMAGE_SDK",
    "IMAGE_UNSUPPORTED_ON_FAMILY",
    "INF1_OUT_OF_SUPPORT",
    "NEURON_TYPE_WITHOUT_NEURON_AMI",
    "PINNED_AMI",
    "RECOMMENDED_AMI",
    "REFRESH_INTO_RESERVED_CAPACITY",
    "UNKNOWN_IMAGE_SDK",
]

# ---------------------------------------------------------------- errors ---

NEURON_TYPE_WITHOUT_NEURON_AMI = Rule(
    "NEURON030",
    "Neuron instance on an AMI without the Neuron driver",
    "the EC2 launch type runs Neuron instances on the ECS-optimized Amazon Linux 2023 (Neuron) AMI, which "
    "carries the Neuron driver and runtime; the standard ECS AMI does not",
    "use NeuronCluster.add_ec2_capacity(instance_type={instance_type!r}) for Neuron instances",
    ECS_NEURON_PAGE,
    checked="both",
)
AMI_RELEASE = Rule(
    "NEURON086",
    "Not a release of the ECS Neuron AMI",
    "each release of the ECS-optimized Amazon Linux 2023 Neuron AMI has its own public SSM parameter, "
    "/aws/service/ecs/optimized-ami/amazon-linux-2023/neuron/al2023-ami-ecs-neuron-hvm-2023.0.<YYYYMMDD>-kernel-"
    "<kernel>-x86_64/image_id, named after the AMI",
    "pass a release as neuron-ecs ami --releases lists it, e.g. NeuronAmi.release('2023.0.20261113'), or "
    "NeuronAmi.recommended()",
    "ECS guide: retrieving Amazon ECS-optimized Linux AMI metadata; aws/amazon-ecs-ami al2023neu.pkr.hcl (AMI name)",
)
AMI_ROLLOUT = Rule(
    "NEURON087",
    "AMI rollout below the services' minimum healthy tasks",
    "an instance refresh replaces instances in batches of the group; with managed draining ECS stops an instance's "
    "tasks as its services' deployment settings allow, so a batch that takes away more instances than the rest can "
    "spare leaves a service below its minimum healthy tasks, or the refresh waiting on draining that cannot finish; "
    "a model whose copies are packed several to an instance loses that many tasks with each instance",
    "{fix}",
    "EC2 Auto Scaling guide: instance refresh (minimum and maximum healthy percentage); ECS guide: managed "
    "instance draining",
)
DRIVER_OUTSIDE_RUNTIME = Rule(
    "NEURON088",
    "Pinned Neuron AMI whose driver the image's runtime does not run on",
    "the Neuron runtime in a container and the Neuron driver on the host must match, both ways: runtime 2.32 and later "
    "do not run on driver 2.26 or earlier, and driver 2.29 and later require runtime 2.33 or later; a mismatch fails "
    "at nrt_init(), when the model loads",
    "pin an AMI release whose driver the image's runtime runs on, or move the image to a Neuron SDK release whose "
    "runtime runs on that driver (neuron_constructs.knowledge.neuron_releases lists both)",
    "Neuron runtime release notes 2.30.0 and 2.31.0 (Known Issues); aws/amazon-ecs-ami "
    "scripts/enable-ecs-agent-inferentia-support.sh (the AMI installs the newest driver at build)",
)
DRIVER_CHECK_INPUT = Rule(
    "NEURON089",
    "Driver start check without what it needs",
    "the start check compares the host's Neuron driver (/sys/module/neuron/version) with the driver range of the "
    "image's Neuron SDK release, then runs the container's own entry point; it needs both",
    "{fix}",
    "Neuron runtime release notes 2.30.0 and 2.31.0 (Known Issues)",
)
IMAGE_UNSUPPORTED_ON_FAMILY = Rule(
    "NEURON131",
    "Neuron container image Neuron does not support on its instance type",
    "Neuron no longer supports NxD Inference and the NxD Core inference APIs on Trn2 and Trn3 from Neuron 2.34.0, "
    "for any release: no further releases, bug fixes or security patches there; the legacy vLLM 0.16 image and the "
    "PyTorch inference image carry them (and the latter PyTorch/XLA inference, which ends there too). The runtime of "
    "Neuron SDK 2.21.0 and later removed Inf1",
    "run {fix_constant} ({fix_uri}) on this type, from neuron_constructs.knowledge.container_images; or place the "
    "model on a type it supports ({families})",
    "Neuron announcements: no support for NxD Inference and NxD Core inference APIs on Trn2 and Trn3 starting with "
    "Neuron 2.34 (November 17, 2026), no support for PyTorch/XLA inference on Trn2 and Trn3 starting with Neuron "
    "2.34; AWS Neuron SDK 2.34.0 release (vLLM Neuron generally available); Neuron runtime "
    "release notes 2.21.0",
)
IMAGE_SDK = Rule(
    "NEURON146",
    "Stated Neuron SDK release the table does not know, or that the image's tag contradicts",
    "the driver checks (NEURON088, NEURON127, the start check) compare the driver range of the image's Neuron SDK "
    "release with the host's driver: the release must be one whose runtime the release table knows, and an image "
    "whose tag names a release (-sdkX.Y.Z-) is built with that one",
    "{fix}",
    "Neuron runtime release notes 2.30.0 and 2.31.0 (Known Issues); knowledge.neuron_releases (the release table)",
)

# -------------------------------------------------------------- warnings ---

PINNED_AMI = Rule(
    "NEURON105",
    "Pinned AMI instead of the recommended Neuron AMI",
    "the EC2 launch type uses the ECS-optimized Amazon Linux 2023 (Neuron) AMI resolved from "
    "/aws/service/ecs/optimized-ami/amazon-linux-2023/neuron/recommended",
    "make sure the pinned AMI carries the Neuron driver and runtime, and move it forward with each release",
    ECS_NEURON_PAGE,
    severity="warning",
    checked="both",
)
INF1_OUT_OF_SUPPORT = Rule(
    "NEURON113",
    "Inf1 on Neuron SDK releases that no longer support it",
    "Neuron SDK 2.21.0 (runtime 2.23) removed Inf1 support from the runtime (the last Inf1 container images are "
    "Neuron SDK 2.20.2's), Neuron no longer supports Inf1 environments and AMIs from 2.27, and the ECS Neuron AMI "
    "pins the Inf1 driver to 2.21 at boot (the last driver Neuron supports on Inf1 is 2.24, its correction of March "
    "12, 2026 says)",
    "run images of Neuron SDK 2.20.2 or earlier on Inf1 (public.ecr.aws/neuron/pytorch-inference-neuron:"
    "1.13.1-neuron-py310-sdk2.20.2-ubuntu20.04), or move the model to Inf2; acknowledge this warning id once you have",
    "Neuron runtime release notes 2.21.0; Neuron announcements: end of support for Inf1 virtual environments and "
    "AMIs; aws/amazon-ecs-ami scripts/al2023/neuron/neuron-inf1-downgrade.sh",
    severity="warning",
)
RECOMMENDED_AMI = Rule(
    "NEURON125",
    "The recommended Neuron AMI changes on deploys",
    "the launch template resolves /aws/service/ecs/optimized-ami/amazon-linux-2023/neuron/recommended/image_id at "
    "every deploy; AWS publishes a new ECS AMI about weekly, and the next deploy after one writes a new launch "
    "template version: instances launched after it run the new AMI (a new Neuron driver), those running keep the old",
    "pin a release, machine_image=NeuronAmi.release('2023.0.YYYYMMDD') (neuron-ecs ami --releases), which changes "
    "only when you change it and then rolls the group (ami_rollout); or acknowledge this warning id to follow the "
    "recommended AMI",
    "ECS guide: retrieving Amazon ECS-optimized Linux AMI metadata (the SSM parameter is checked on every deploy)",
    severity="warning",
)
DRIVER_CHECK_REFUSES_CURRENT = Rule(
    "NEURON126",
    "Driver start check that the newest Neuron driver fails",
    "an ECS Neuron AMI built today carries the newest Neuron driver, and the image's runtime does not run on it: "
    "every instance launched from a new recommended AMI will stop this container at its start check",
    "move the image to a Neuron SDK release whose runtime runs on the newest driver, or pin an AMI release "
    "(2023.0.YYYYMMDD) whose driver it runs on; acknowledge this warning id if the capacity keeps an older AMI",
    "Neuron runtime release notes 2.30.0 and 2.31.0 (Known Issues); aws/amazon-ecs-ami "
    "scripts/enable-ecs-agent-inferentia-support.sh",
    severity="warning",
)
IMAGE_BEHIND_NEWEST_DRIVER = Rule(
    "NEURON127",
    "Image the newest Neuron driver does not run, on capacity that follows the recommended AMI",
    "capacity that follows the recommended ECS Neuron AMI launches new instances with the newest Neuron driver (the "
    "AMI build installs it), and the runtime of the image's Neuron SDK release does not run on that driver: on such "
    "an instance the container fails at nrt_init(), when the model loads, minutes into its start",
    "pin an AMI release whose driver the image's runtime runs on, machine_image=NeuronAmi.release('2023.0.YYYYMMDD') "
    "(container_images.NEEDS_AMI_BEFORE gives the dates for the library's images), or move the image to a Neuron "
    "SDK release whose runtime runs on the newest driver; driver_check=True stops the container with one line "
    "instead (NEURON126 then warns in place of this); acknowledge this warning id if the instances keep an older AMI",
    "Neuron runtime release notes 2.31.0 (Known Issues: 'Neuron Driver 2.29 requires Neuron Runtime Library 2.33 or "
    "later'); aws/amazon-ecs-ami scripts/enable-ecs-agent-inferentia-support.sh",
    severity="warning",
)
REFRESH_INTO_RESERVED_CAPACITY = Rule(
    "NEURON128",
    "AMI rollout that launches before it terminates, into reserved capacity only",
    "an instance refresh whose MaxHealthyPercentage is above 100 launches each batch's new instances before it "
    "terminates the old ones, so it needs that many instances beyond those running; a group that launches only into "
    "a Capacity Reservation (capacity-reservations-only) or a Capacity Block gets none once the reservation is full, "
    "and the refresh waits for capacity until it fails",
    "reserve {batch} more instance(s) than the group runs, let the group fall back to On-Demand "
    "(CapacityReservation.on_demand(..., fallback_to_on_demand=True)), or terminate first "
    "(AmiRollout(launch_before_terminate=False), which NEURON087 checks against the services' minimum healthy tasks); "
    "acknowledge this warning id if the reservation keeps room for a batch",
    "EC2 Auto Scaling API: RefreshPreferences (MinHealthyPercentage, MaxHealthyPercentage); EC2 Auto Scaling guide: "
    "use Capacity Reservations (capacity-reservations-only); EC2 guide: Capacity Blocks for ML",
    severity="warning",
)
UNKNOWN_IMAGE_SDK = Rule(
    "NEURON147",
    "Image of unknown Neuron SDK on a pinned AMI: the driver check could not run",
    "the library compares the driver of a pinned ECS Neuron AMI release with the driver range of the image's Neuron "
    "SDK release (NEURON088), which it reads from a -sdkX.Y.Z- tag; an image whose tag names none (a team's own "
    "image, team/llm-server:v42) is not checked, and a mismatch fails at nrt_init(), when the model loads",
    "state the image's release where the image is given, neuron_sdk='2.31.1' (add_neuron_container, "
    "SlicedNeuronService, NeuronFleet.add_model, NeuronTrainingQueue.add_job); acknowledge this warning id if the "
    "image runs no Neuron runtime",
    "Neuron runtime release notes 2.30.0 and 2.31.0 (Known Issues)",
    severity="warning",
)
