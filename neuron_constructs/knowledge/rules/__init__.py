"""Every ECS Neuron rule the library enforces, as data: the rule table.

Each :class:`Rule` is one entry: an id, the AWS sentence it enforces, the fix,
and where the sentence comes from. Errors raise
:class:`~neuron_constructs.knowledge.errors.NeuronConfigurationError` at the call that
broke them (or fail ``cdk synth`` through ``node.add_validation`` when only the
finished task definition shows them); warnings become CDK warnings whose id a
user can acknowledge with ``Validations.of(scope).acknowledge(...)``.

The table is a folder of small tables, one module per area of the domain, behind this one index: each rule lives
where a reader looks for it, and this module gathers them into :data:`RULES` and :data:`BY_ID` (and every rule's
name can be imported from here too):

* :mod:`.instances_and_capacity`: Neuron instance types, Managed Instances capacity, Auto Scaling bounds and subnets,
  Spot, Capacity Reservations and Capacity Blocks, the root volume;
* :mod:`.task_definitions_and_devices`: one task definition on its own: its Neuron container, its devices, the
  fields Managed Instances take, its CPU and memory;
* :mod:`.placement_and_slices`: capacity that fits a task, pins and one task per instance, NeuronCores no two
  services share, slices, fleets, NeuronCores and logical NeuronCores;
* :mod:`.serving_and_load_balancing`: load balancer targets, listener rules, health checks, network options,
  scalable targets and the grace period of a service;
* :mod:`.rollouts`: rolling deployments, blue/green, canary and linear rollouts, their alarms and the smoke test;
* :mod:`.monitoring`: Neuron monitoring, the model names it publishes under, scaling on its metrics;
* :mod:`.training`: multi-node jobs, EFA, the training queue, parallel degrees, checkpoints, the job's image;
* :mod:`.amis_and_drivers`: the ECS Neuron AMI, its releases and rollouts, the Neuron driver against an image's
  Neuron SDK release, the images Neuron supports per instance family;
* :mod:`.compile_caches`: a compile cache against the engine of the image it is given to;
* :mod:`.model_servers`: the model server a container runs (``VllmServer``): its options, its tensor-parallel degree
  against the NeuronCores held, what the engine release serves;
* :mod:`.precompile`: compiling a model's graphs on CPU before its Neuron tasks start, and serving cache-hit-only;
* :mod:`.warm_pools`: warm pools and what their warm-up fetches;
* :mod:`.platform`: parts across stacks, apps, accounts, Regions and VPCs, imported clusters, published platforms;
* :mod:`.inputs`: the shape of a value: wrong type, out of range, a token where a literal is needed, bounds
  reversed, S3 locations, removal policies;
* :mod:`.security`: privileged and host-network containers and their pins, instance metadata, public subnets,
  secrets in the environment, plain HTTP open to the internet.

:class:`Rule` itself, and the sources several areas cite, live in :mod:`.rule`.

The checks at the call live in :mod:`neuron_constructs.checks.inputs`, the checks on templates in
:mod:`neuron_constructs.checks.template_checks`; the docs' rule table is generated from :data:`RULES`.
No AWS CDK import here.
"""

from __future__ import annotations

from neuron_constructs.knowledge.rules.amis_and_drivers import AMI_RELEASE as AMI_RELEASE
from neuron_constructs.knowledge.rules.amis_and_drivers import AMI_ROLLOUT as AMI_ROLLOUT
from neuron_constructs.knowledge.rules.amis_and_drivers import DRIVER_CHECK_INPUT as DRIVER_CHECK_INPUT
from neuron_constructs.knowledge.rules.amis_and_drivers import (
    DRIVER_CHECK_REFUSES_CURRENT as DRIVER_CHECK_REFUSES_CURRENT,
)
from neuron_constructs.knowledge.rules.amis_and_drivers import DRIVER_OUTSIDE_RUNTIME as DRIVER_OUTSIDE_RUNTIME
from neuron_constructs.knowledge.rules.amis_and_drivers import IMAGE_BEHIND_NEWEST_DRIVER as IMAGE_BEHIND_NEWEST_DRIVER
from neuron_constructs.knowledge.rules.amis_and_drivers import IMAGE_SDK as IMAGE_SDK
from neuron_constructs.knowledge.rules.amis_and_drivers import (
    IMAGE_UNSUPPORTED_ON_FAMILY as IMAGE_UNSUPPORTED_ON_FAMILY,
)
from neuron_constructs.knowledge.rules.amis_and_drivers import INF1_OUT_OF_SUPPORT as INF1_OUT_OF_SUPPORT
from neuron_constructs.knowledge.rules.amis_and_drivers import (
    NEURON_TYPE_WITHOUT_NEURON_AMI as NEURON_TYPE_WITHOUT_NEURON_AMI,
)
from neuron_constructs.knowledge.rules.amis_and_drivers import PINNED_AMI as PINNED_AMI
from neuron_constructs.knowledge.rules.amis_and_drivers import RECOMMENDED_AMI as RECOMMENDED_AMI
from neuron_constructs.knowledge.rules.amis_and_drivers import (
    REFRESH_INTO_RESERVED_CAPACITY as REFRESH_INTO_RESERVED_CAPACITY,
)
from neuron_constructs.knowledge.rules.amis_and_drivers import UNKNOWN_IMAGE_SDK as UNKNOWN_IMAGE_SDK
from neuron_constructs.knowledge.rules.compile_caches import ACCESS_POINT_PREFIX as ACCESS_POINT_PREFIX
from neuron_constructs.knowledge.rules.compile_caches import CACHE_ENGINE_MISMATCH as CACHE_ENGINE_MISMATCH
from neuron_constructs.knowledge.rules.compile_caches import CACHE_FILE_SYSTEM_VPC as CACHE_FILE_SYSTEM_VPC
from neuron_constructs.knowledge.rules.compile_caches import CACHE_WITHOUT_CLIENTS as CACHE_WITHOUT_CLIENTS
from neuron_constructs.knowledge.rules.compile_caches import ENGINE_CACHE_UNNAMED as ENGINE_CACHE_UNNAMED
from neuron_constructs.knowledge.rules.compile_caches import HOST_MOUNTED_REMOTE_TIER as HOST_MOUNTED_REMOTE_TIER
from neuron_constructs.knowledge.rules.compile_caches import LOCAL_TIER_PER_TASK as LOCAL_TIER_PER_TASK
from neuron_constructs.knowledge.rules.compile_caches import SHARED_CACHE_UNTRUSTED as SHARED_CACHE_UNTRUSTED
from neuron_constructs.knowledge.rules.inputs import BOUNDS_REVERSED as BOUNDS_REVERSED
from neuron_constructs.knowledge.rules.inputs import OUT_OF_RANGE as OUT_OF_RANGE
from neuron_constructs.knowledge.rules.inputs import S3_LOCATION as S3_LOCATION
from neuron_constructs.knowledge.rules.inputs import SNAPSHOT_REMOVAL as SNAPSHOT_REMOVAL
from neuron_constructs.knowledge.rules.inputs import TOKEN_NOT_LITERAL as TOKEN_NOT_LITERAL
from neuron_constructs.knowledge.rules.inputs import WRONG_TYPE as WRONG_TYPE
from neuron_constructs.knowledge.rules.instances_and_capacity import CAPACITY_BLOCK_TYPE as CAPACITY_BLOCK_TYPE
from neuron_constructs.knowledge.rules.instances_and_capacity import CAPACITY_SIZE as CAPACITY_SIZE
from neuron_constructs.knowledge.rules.instances_and_capacity import (
    INF1_ON_MANAGED_INSTANCES as INF1_ON_MANAGED_INSTANCES,
)
from neuron_constructs.knowledge.rules.instances_and_capacity import (
    MANAGED_INSTANCES_RESERVATION as MANAGED_INSTANCES_RESERVATION,
)
from neuron_constructs.knowledge.rules.instances_and_capacity import NO_SPOT as NO_SPOT
from neuron_constructs.knowledge.rules.instances_and_capacity import NO_SUBNETS as NO_SUBNETS
from neuron_constructs.knowledge.rules.instances_and_capacity import (
    NON_NEURON_MANAGED_INSTANCES as NON_NEURON_MANAGED_INSTANCES,
)
from neuron_constructs.knowledge.rules.instances_and_capacity import RESERVATION_REFERENCE as RESERVATION_REFERENCE
from neuron_constructs.knowledge.rules.instances_and_capacity import SMALL_ROOT_VOLUME as SMALL_ROOT_VOLUME
from neuron_constructs.knowledge.rules.instances_and_capacity import SPOT_WITH_RESERVATION as SPOT_WITH_RESERVATION
from neuron_constructs.knowledge.rules.instances_and_capacity import UNKNOWN_EC2_TYPE as UNKNOWN_EC2_TYPE
from neuron_constructs.knowledge.rules.instances_and_capacity import UNKNOWN_INSTANCE_TYPE as UNKNOWN_INSTANCE_TYPE
from neuron_constructs.knowledge.rules.model_servers import TENSOR_PARALLEL_CORES as TENSOR_PARALLEL_CORES
from neuron_constructs.knowledge.rules.model_servers import TENSOR_PARALLEL_IDLE_CORES as TENSOR_PARALLEL_IDLE_CORES
from neuron_constructs.knowledge.rules.model_servers import VLLM_LORA as VLLM_LORA
from neuron_constructs.knowledge.rules.model_servers import VLLM_SERVER_ENGINE as VLLM_SERVER_ENGINE
from neuron_constructs.knowledge.rules.model_servers import VLLM_SERVER_INPUT as VLLM_SERVER_INPUT
from neuron_constructs.knowledge.rules.monitoring import COMPILE_ALARM_WITHOUT_CACHE as COMPILE_ALARM_WITHOUT_CACHE
from neuron_constructs.knowledge.rules.monitoring import (
    COMPILE_ALARM_WITHOUT_COMPILE_METRIC as COMPILE_ALARM_WITHOUT_COMPILE_METRIC,
)
from neuron_constructs.knowledge.rules.monitoring import ENGINE_METRICS_PORT as ENGINE_METRICS_PORT
from neuron_constructs.knowledge.rules.monitoring import ENGINE_WITHOUT_METRICS as ENGINE_WITHOUT_METRICS
from neuron_constructs.knowledge.rules.monitoring import MODEL_NAME as MODEL_NAME
from neuron_constructs.knowledge.rules.monitoring import MONITORING_TWICE as MONITORING_TWICE
from neuron_constructs.knowledge.rules.monitoring import SCALING_WITHOUT_ENGINE_METRIC as SCALING_WITHOUT_ENGINE_METRIC
from neuron_constructs.knowledge.rules.monitoring import UNMONITORED_SCALING as UNMONITORED_SCALING
from neuron_constructs.knowledge.rules.placement_and_slices import AMBIGUOUS_CAPACITY as AMBIGUOUS_CAPACITY
from neuron_constructs.knowledge.rules.placement_and_slices import AWSVPC_WITHOUT_TRUNKING as AWSVPC_WITHOUT_TRUNKING
from neuron_constructs.knowledge.rules.placement_and_slices import COPIES_SHARE_INSTANCE as COPIES_SHARE_INSTANCE
from neuron_constructs.knowledge.rules.placement_and_slices import CORE_SLICE as CORE_SLICE
from neuron_constructs.knowledge.rules.placement_and_slices import FLEET_FULL as FLEET_FULL
from neuron_constructs.knowledge.rules.placement_and_slices import LOGICAL_CORES as LOGICAL_CORES
from neuron_constructs.knowledge.rules.placement_and_slices import NO_MATCHING_CAPACITY as NO_MATCHING_CAPACITY
from neuron_constructs.knowledge.rules.placement_and_slices import SHARED_DEVICE as SHARED_DEVICE
from neuron_constructs.knowledge.rules.placement_and_slices import SLICE_HOST_PORT as SLICE_HOST_PORT
from neuron_constructs.knowledge.rules.placement_and_slices import SLICE_RUNTIME_VARIABLE as SLICE_RUNTIME_VARIABLE
from neuron_constructs.knowledge.rules.placement_and_slices import SLICE_SIZE as SLICE_SIZE
from neuron_constructs.knowledge.rules.placement_and_slices import SLICED_CAPACITY_SHARED as SLICED_CAPACITY_SHARED
from neuron_constructs.knowledge.rules.placement_and_slices import SLICES_EXCEED_CAPACITY as SLICES_EXCEED_CAPACITY
from neuron_constructs.knowledge.rules.placement_and_slices import UNPINNED_MANUAL_TASK as UNPINNED_MANUAL_TASK
from neuron_constructs.knowledge.rules.platform import ACROSS_APPS as ACROSS_APPS
from neuron_constructs.knowledge.rules.platform import ACROSS_ENVIRONMENTS as ACROSS_ENVIRONMENTS
from neuron_constructs.knowledge.rules.platform import ACROSS_VPCS as ACROSS_VPCS
from neuron_constructs.knowledge.rules.platform import ALERT_TOPIC_ACCOUNT as ALERT_TOPIC_ACCOUNT
from neuron_constructs.knowledge.rules.platform import CLUSTER_NAME as CLUSTER_NAME
from neuron_constructs.knowledge.rules.platform import DEFAULT_ACTION_ACROSS_STACKS as DEFAULT_ACTION_ACROSS_STACKS
from neuron_constructs.knowledge.rules.platform import IMPORTED_CLUSTER_PROVIDERS as IMPORTED_CLUSTER_PROVIDERS
from neuron_constructs.knowledge.rules.platform import PUBLISHED_CLUSTER_CAPACITY as PUBLISHED_CLUSTER_CAPACITY
from neuron_constructs.knowledge.rules.platform import PUBLISHED_NAME as PUBLISHED_NAME
from neuron_constructs.knowledge.rules.platform import PUBLISHED_TWICE as PUBLISHED_TWICE
from neuron_constructs.knowledge.rules.platform import PUBLISHED_WRITERS as PUBLISHED_WRITERS
from neuron_constructs.knowledge.rules.precompile import (
    CACHE_HIT_ONLY_WITHOUT_PRECOMPILE as CACHE_HIT_ONLY_WITHOUT_PRECOMPILE,
)
from neuron_constructs.knowledge.rules.precompile import (
    PRECOMPILE_BEYOND_CUSTOM_RESOURCE as PRECOMPILE_BEYOND_CUSTOM_RESOURCE,
)
from neuron_constructs.knowledge.rules.precompile import PRECOMPILE_FIRST_DEPLOYMENT as PRECOMPILE_FIRST_DEPLOYMENT
from neuron_constructs.knowledge.rules.precompile import PRECOMPILE_HOOK_TIMEOUT as PRECOMPILE_HOOK_TIMEOUT
from neuron_constructs.knowledge.rules.precompile import PRECOMPILE_INPUT as PRECOMPILE_INPUT
from neuron_constructs.knowledge.rules.precompile import PRECOMPILE_MODE as PRECOMPILE_MODE
from neuron_constructs.knowledge.rules.precompile import PRECOMPILE_TARGET as PRECOMPILE_TARGET
from neuron_constructs.knowledge.rules.precompile import (
    PRECOMPILE_WITHOUT_CACHE as PRECOMPILE_WITHOUT_CACHE,
)
from neuron_constructs.knowledge.rules.rollouts import APPROVAL as APPROVAL
from neuron_constructs.knowledge.rules.rollouts import APPROVAL_CONTINUES as APPROVAL_CONTINUES
from neuron_constructs.knowledge.rules.rollouts import BLUE_GREEN_WITHOUT_TRAFFIC as BLUE_GREEN_WITHOUT_TRAFFIC
from neuron_constructs.knowledge.rules.rollouts import DEPLOYMENT_ALARM_BEHAVIOR as DEPLOYMENT_ALARM_BEHAVIOR
from neuron_constructs.knowledge.rules.rollouts import DEPLOYMENT_STALLS as DEPLOYMENT_STALLS
from neuron_constructs.knowledge.rules.rollouts import DEPLOYMENT_WITHOUT_ROOM as DEPLOYMENT_WITHOUT_ROOM
from neuron_constructs.knowledge.rules.rollouts import EVERY_REPLICA_STOPS as EVERY_REPLICA_STOPS
from neuron_constructs.knowledge.rules.rollouts import OPEN_TEST_RULE as OPEN_TEST_RULE
from neuron_constructs.knowledge.rules.rollouts import ROLLOUT_ON_FLEET as ROLLOUT_ON_FLEET
from neuron_constructs.knowledge.rules.rollouts import ROLLOUT_ROOM as ROLLOUT_ROOM
from neuron_constructs.knowledge.rules.rollouts import ROLLOUT_TRAFFIC as ROLLOUT_TRAFFIC
from neuron_constructs.knowledge.rules.rollouts import ROLLOUT_VALUE as ROLLOUT_VALUE
from neuron_constructs.knowledge.rules.rollouts import ROLLOUT_WITHOUT_NEURON_ALARM as ROLLOUT_WITHOUT_NEURON_ALARM
from neuron_constructs.knowledge.rules.rollouts import SMOKE_TEST as SMOKE_TEST
from neuron_constructs.knowledge.rules.rollouts import SMOKE_TEST_ENVIRONMENT as SMOKE_TEST_ENVIRONMENT
from neuron_constructs.knowledge.rules.rollouts import SMOKE_TEST_TLS_NAME as SMOKE_TEST_TLS_NAME
from neuron_constructs.knowledge.rules.rule import ECS_MI_PARAMETERS_PAGE as ECS_MI_PARAMETERS_PAGE
from neuron_constructs.knowledge.rules.rule import ECS_NEURON_PAGE as ECS_NEURON_PAGE
from neuron_constructs.knowledge.rules.rule import NEURON_SCHEDULER as NEURON_SCHEDULER
from neuron_constructs.knowledge.rules.rule import Rule as Rule
from neuron_constructs.knowledge.rules.security import HOST_NETWORK as HOST_NETWORK
from neuron_constructs.knowledge.rules.security import METADATA_REACHABLE as METADATA_REACHABLE
from neuron_constructs.knowledge.rules.security import OPEN_PLAIN_HTTP as OPEN_PLAIN_HTTP
from neuron_constructs.knowledge.rules.security import PRIVILEGED_CONTAINER as PRIVILEGED_CONTAINER
from neuron_constructs.knowledge.rules.security import PUBLIC_SUBNETS as PUBLIC_SUBNETS
from neuron_constructs.knowledge.rules.security import SECRET_IN_ENVIRONMENT as SECRET_IN_ENVIRONMENT
from neuron_constructs.knowledge.rules.security import UNPINNED_LIBRARY_DAEMON as UNPINNED_LIBRARY_DAEMON
from neuron_constructs.knowledge.rules.security import UNPINNED_PRIVILEGED_IMAGE as UNPINNED_PRIVILEGED_IMAGE
from neuron_constructs.knowledge.rules.serving_and_load_balancing import (
    GRACE_SHORTER_THAN_COMPILE as GRACE_SHORTER_THAN_COMPILE,
)
from neuron_constructs.knowledge.rules.serving_and_load_balancing import HEALTH_CHECK_PATH as HEALTH_CHECK_PATH
from neuron_constructs.knowledge.rules.serving_and_load_balancing import LISTENER_RULE as LISTENER_RULE
from neuron_constructs.knowledge.rules.serving_and_load_balancing import (
    NETWORK_LOAD_BALANCER_GROUP as NETWORK_LOAD_BALANCER_GROUP,
)
from neuron_constructs.knowledge.rules.serving_and_load_balancing import (
    NETWORK_OPTION_IGNORED as NETWORK_OPTION_IGNORED,
)
from neuron_constructs.knowledge.rules.serving_and_load_balancing import NO_TARGET_PORT as NO_TARGET_PORT
from neuron_constructs.knowledge.rules.serving_and_load_balancing import (
    REQUEST_SCALING_TARGET as REQUEST_SCALING_TARGET,
)
from neuron_constructs.knowledge.rules.serving_and_load_balancing import SCALE_TO_ZERO as SCALE_TO_ZERO
from neuron_constructs.knowledge.rules.serving_and_load_balancing import SECOND_SCALING_TARGET as SECOND_SCALING_TARGET
from neuron_constructs.knowledge.rules.serving_and_load_balancing import SHORT_GRACE_PERIOD as SHORT_GRACE_PERIOD
from neuron_constructs.knowledge.rules.serving_and_load_balancing import UNKNOWN_VPC_RANGE as UNKNOWN_VPC_RANGE
from neuron_constructs.knowledge.rules.serving_and_load_balancing import UNREACHABLE_TARGETS as UNREACHABLE_TARGETS
from neuron_constructs.knowledge.rules.serving_and_load_balancing import (
    WAKE_BY_HAND as WAKE_BY_HAND,
)
from neuron_constructs.knowledge.rules.task_definitions_and_devices import (
    CONTAINERS_EXCEED_TASK as CONTAINERS_EXCEED_TASK,
)
from neuron_constructs.knowledge.rules.task_definitions_and_devices import DEVICE_INDEX_RANGE as DEVICE_INDEX_RANGE
from neuron_constructs.knowledge.rules.task_definitions_and_devices import DEVICE_TOPOLOGY as DEVICE_TOPOLOGY
from neuron_constructs.knowledge.rules.task_definitions_and_devices import DUPLICATE_DEVICE as DUPLICATE_DEVICE
from neuron_constructs.knowledge.rules.task_definitions_and_devices import (
    MANAGED_ALLOCATION_CAPACITY as MANAGED_ALLOCATION_CAPACITY,
)
from neuron_constructs.knowledge.rules.task_definitions_and_devices import (
    MANAGED_INSTANCES_FIELD as MANAGED_INSTANCES_FIELD,
)
from neuron_constructs.knowledge.rules.task_definitions_and_devices import (
    MEMORY_NEAR_INSTANCE_TOTAL as MEMORY_NEAR_INSTANCE_TOTAL,
)
from neuron_constructs.knowledge.rules.task_definitions_and_devices import MIXED_DEVICE_MODES as MIXED_DEVICE_MODES
from neuron_constructs.knowledge.rules.task_definitions_and_devices import (
    NEURON_CONTAINER_RESOURCES as NEURON_CONTAINER_RESOURCES,
)
from neuron_constructs.knowledge.rules.task_definitions_and_devices import (
    NEURON_CONTAINER_STRIPPED as NEURON_CONTAINER_STRIPPED,
)
from neuron_constructs.knowledge.rules.task_definitions_and_devices import NO_DEVICES as NO_DEVICES
from neuron_constructs.knowledge.rules.task_definitions_and_devices import NO_NEURON_CONTAINER as NO_NEURON_CONTAINER
from neuron_constructs.knowledge.rules.task_definitions_and_devices import NO_TASK_MEMORY as NO_TASK_MEMORY
from neuron_constructs.knowledge.rules.task_definitions_and_devices import ONE_NEURON_CONTAINER as ONE_NEURON_CONTAINER
from neuron_constructs.knowledge.rules.task_definitions_and_devices import (
    TASK_EXCEEDS_INSTANCE as TASK_EXCEEDS_INSTANCE,
)
from neuron_constructs.knowledge.rules.task_definitions_and_devices import UNDECLARED_DEVICE as UNDECLARED_DEVICE
from neuron_constructs.knowledge.rules.training import CHECKPOINT_DIR as CHECKPOINT_DIR
from neuron_constructs.knowledge.rules.training import KEPT_FILE_SYSTEM_IN_OWN_VPC as KEPT_FILE_SYSTEM_IN_OWN_VPC
from neuron_constructs.knowledge.rules.training import MULTI_NODE_ON_SPOT as MULTI_NODE_ON_SPOT
from neuron_constructs.knowledge.rules.training import MULTI_NODE_WITHOUT_EFA as MULTI_NODE_WITHOUT_EFA
from neuron_constructs.knowledge.rules.training import PARALLEL_DEGREES as PARALLEL_DEGREES
from neuron_constructs.knowledge.rules.training import RESERVATION_FALLBACK as RESERVATION_FALLBACK
from neuron_constructs.knowledge.rules.training import TOO_MANY_NODES as TOO_MANY_NODES
from neuron_constructs.knowledge.rules.training import TRAINING_PUBLIC_SUBNET as TRAINING_PUBLIC_SUBNET
from neuron_constructs.knowledge.rules.training import TRAINING_SUBNETS as TRAINING_SUBNETS
from neuron_constructs.knowledge.rules.training import UNGRANTED_ECR_IMAGE as UNGRANTED_ECR_IMAGE
from neuron_constructs.knowledge.rules.warm_pools import MOVING_TAG_CACHED as MOVING_TAG_CACHED
from neuron_constructs.knowledge.rules.warm_pools import NOT_PREFETCHED as NOT_PREFETCHED
from neuron_constructs.knowledge.rules.warm_pools import WARM_POOL_HIBERNATION as WARM_POOL_HIBERNATION
from neuron_constructs.knowledge.rules.warm_pools import WARM_POOL_REUSE as WARM_POOL_REUSE
from neuron_constructs.knowledge.rules.warm_pools import WARM_POOL_SPOT as WARM_POOL_SPOT
from neuron_constructs.knowledge.rules.warm_pools import WARM_UP_ROOM as WARM_UP_ROOM

__all__ = ["BY_ID", "RULES"]

RULES: tuple[Rule, ...] = tuple(
    sorted(
        (
            UNKNOWN_INSTANCE_TYPE,
            SCALING_WITHOUT_ENGINE_METRIC,
            TENSOR_PARALLEL_CORES,
            TENSOR_PARALLEL_IDLE_CORES,
            VLLM_LORA,
            VLLM_SERVER_ENGINE,
            VLLM_SERVER_INPUT,
            CACHE_HIT_ONLY_WITHOUT_PRECOMPILE,
            PRECOMPILE_FIRST_DEPLOYMENT,
            PRECOMPILE_BEYOND_CUSTOM_RESOURCE,
            PRECOMPILE_HOOK_TIMEOUT,
            PRECOMPILE_INPUT,
            PRECOMPILE_MODE,
            PRECOMPILE_TARGET,
            PRECOMPILE_WITHOUT_CACHE,
            INF1_ON_MANAGED_INSTANCES,
            NON_NEURON_MANAGED_INSTANCES,
            CAPACITY_SIZE,
            ONE_NEURON_CONTAINER,
            MIXED_DEVICE_MODES,
            MANAGED_INSTANCES_FIELD,
            MANAGED_ALLOCATION_CAPACITY,
            DEVICE_INDEX_RANGE,
            DUPLICATE_DEVICE,
            NO_DEVICES,
            TASK_EXCEEDS_INSTANCE,
            NEURON_CONTAINER_RESOURCES,
            NO_MATCHING_CAPACITY,
            AMBIGUOUS_CAPACITY,
            SLICE_SIZE,
            SLICES_EXCEED_CAPACITY,
            SLICE_HOST_PORT,
            SLICE_RUNTIME_VARIABLE,
            SLICED_CAPACITY_SHARED,
            UNPINNED_MANUAL_TASK,
            COPIES_SHARE_INSTANCE,
            SHARED_DEVICE,
            CONTAINERS_EXCEED_TASK,
            NO_TASK_MEMORY,
            WRONG_TYPE,
            OUT_OF_RANGE,
            TOKEN_NOT_LITERAL,
            NEURON_CONTAINER_STRIPPED,
            NEURON_TYPE_WITHOUT_NEURON_AMI,
            UNKNOWN_EC2_TYPE,
            DEPLOYMENT_WITHOUT_ROOM,
            NO_SUBNETS,
            NETWORK_OPTION_IGNORED,
            SECOND_SCALING_TARGET,
            UNDECLARED_DEVICE,
            SPOT_WITH_RESERVATION,
            CAPACITY_BLOCK_TYPE,
            MANAGED_INSTANCES_RESERVATION,
            DEPLOYMENT_STALLS,
            NO_TARGET_PORT,
            LISTENER_RULE,
            NETWORK_LOAD_BALANCER_GROUP,
            REQUEST_SCALING_TARGET,
            SCALE_TO_ZERO,
            UNKNOWN_VPC_RANGE,
            FLEET_FULL,
            S3_LOCATION,
            MULTI_NODE_WITHOUT_EFA,
            TOO_MANY_NODES,
            MULTI_NODE_ON_SPOT,
            TRAINING_SUBNETS,
            RESERVATION_FALLBACK,
            PARALLEL_DEGREES,
            MONITORING_TWICE,
            ENGINE_WITHOUT_METRICS,
            ENGINE_METRICS_PORT,
            COMPILE_ALARM_WITHOUT_CACHE,
            COMPILE_ALARM_WITHOUT_COMPILE_METRIC,
            DEFAULT_ACTION_ACROSS_STACKS,
            IMPORTED_CLUSTER_PROVIDERS,
            CLUSTER_NAME,
            ACROSS_ENVIRONMENTS,
            ACROSS_VPCS,
            HEALTH_CHECK_PATH,
            TRAINING_PUBLIC_SUBNET,
            UNGRANTED_ECR_IMAGE,
            CORE_SLICE,
            LOGICAL_CORES,
            NO_SPOT,
            CHECKPOINT_DIR,
            MODEL_NAME,
            UNPINNED_PRIVILEGED_IMAGE,
            BOUNDS_REVERSED,
            UNREACHABLE_TARGETS,
            ACROSS_APPS,
            ROLLOUT_VALUE,
            ROLLOUT_TRAFFIC,
            ROLLOUT_ROOM,
            ROLLOUT_ON_FLEET,
            SMOKE_TEST,
            APPROVAL,
            SMOKE_TEST_ENVIRONMENT,
            DEPLOYMENT_ALARM_BEHAVIOR,
            OPEN_TEST_RULE,
            PUBLISHED_NAME,
            PUBLISHED_CLUSTER_CAPACITY,
            DRIVER_OUTSIDE_RUNTIME,
            DRIVER_CHECK_INPUT,
            AMI_RELEASE,
            AMI_ROLLOUT,
            WARM_UP_ROOM,
            WARM_POOL_REUSE,
            WARM_POOL_SPOT,
            ALERT_TOPIC_ACCOUNT,
            SNAPSHOT_REMOVAL,
            DEVICE_TOPOLOGY,
            SMALL_ROOT_VOLUME,
            MEMORY_NEAR_INSTANCE_TOTAL,
            NO_NEURON_CONTAINER,
            PINNED_AMI,
            AWSVPC_WITHOUT_TRUNKING,
            HOST_NETWORK,
            PUBLIC_SUBNETS,
            SECRET_IN_ENVIRONMENT,
            METADATA_REACHABLE,
            SHORT_GRACE_PERIOD,
            GRACE_SHORTER_THAN_COMPILE,
            EVERY_REPLICA_STOPS,
            INF1_OUT_OF_SUPPORT,
            UNMONITORED_SCALING,
            PRIVILEGED_CONTAINER,
            UNPINNED_LIBRARY_DAEMON,
            OPEN_PLAIN_HTTP,
            KEPT_FILE_SYSTEM_IN_OWN_VPC,
            BLUE_GREEN_WITHOUT_TRAFFIC,
            APPROVAL_CONTINUES,
            WAKE_BY_HAND,
            ROLLOUT_WITHOUT_NEURON_ALARM,
            SMOKE_TEST_TLS_NAME,
            DRIVER_CHECK_REFUSES_CURRENT,
            IMAGE_BEHIND_NEWEST_DRIVER,
            RECOMMENDED_AMI,
            NOT_PREFETCHED,
            REFRESH_INTO_RESERVED_CAPACITY,
            IMAGE_UNSUPPORTED_ON_FAMILY,
            RESERVATION_REFERENCE,
            WARM_POOL_HIBERNATION,
            MOVING_TAG_CACHED,
            CACHE_ENGINE_MISMATCH,
            ENGINE_CACHE_UNNAMED,
            LOCAL_TIER_PER_TASK,
            CACHE_WITHOUT_CLIENTS,
            HOST_MOUNTED_REMOTE_TIER,
            ACCESS_POINT_PREFIX,
            CACHE_FILE_SYSTEM_VPC,
            SHARED_CACHE_UNTRUSTED,
            IMAGE_SDK,
            UNKNOWN_IMAGE_SDK,
            PUBLISHED_TWICE,
            PUBLISHED_WRITERS,
        ),
        key=lambda rule: rule.id,
    )
)
"""Every rule, in id order: the one table the checks, the docs' rule table and the tests read."""
BY_ID: dict[str, Rule] = {rule.id: rule for rule in RULES}
"""Every rule by its id."""
