"""The programs the library ships to run somewhere else: standard-library Python that runs on an instance, in a
container or in Lambda, carried inside a template as text, and tested by running it.

.. list-table::
   :header-rows: 1

   * - program
     - where it runs
     - how it is carried, and the size limit
     - how it is tested
   * - :mod:`~neuron_constructs.programs.preflight`
     - every training node, before the job's command: the launcher runs it with the image's ``python3``
     - ``NEURON_PREFLIGHT`` in the job definition's environment, bzip2 then base64
       (:func:`~neuron_constructs.training.jobs.preflight_program`): AWS Batch registers job definitions of at most
       24 KiB, which it shares with the metric publisher
     - ``python3 -c`` of the carried source against a fake ``/dev`` and ``/proc``, the tools of each Neuron release
       and real peers on 127.0.0.1 (``tests/test_preflight.py``, ``tests/test_preflight_tools.py``); the job
       definition's size in ``tests/test_training.py``
   * - :mod:`~neuron_constructs.programs.smoke_test`
     - Lambda (Python 3.14), at a rollout's ``POST_TEST_TRAFFIC_SHIFT`` lifecycle hook
     - the function's inline code (``Code.ZipFile``): CloudFormation takes up to 4 MB, the tests hold it to 8 KiB
     - its handler against a local HTTP server, and the carried source loaded as Lambda loads it
       (``tests/test_smoke_test.py``); the function in ``tests/test_rollout_resources.py``
   * - :mod:`~neuron_constructs.programs.precompile_hook`
     - Lambda, as a rollout's ``PRE_SCALE_UP`` lifecycle hook, a CloudFormation custom resource, and the target of
       Batch's job state change events: submits a model's compile job to AWS Batch and answers when it ends
     - the function's inline code (``Code.ZipFile``), like the smoke test; the tests hold it to 32 KiB
     - its handler against a local stand-in for Batch and for CloudFormation's response bucket, its signature against
       botocore's and a published vector, and the carried source loaded as Lambda loads it
       (``tests/test_precompile_hook.py``)
   * - :mod:`~neuron_constructs.programs.metric_publisher`
     - the neuron-monitor container of the monitoring daemon and of each training node:
       ``neuron-monitor | python3 -u -c "$NEURON_MONITOR_EMF"``
     - ``NEURON_MONITOR_EMF`` in the environment of the daemon's task definition and of the training job
       definition, as text (in the job definition, within the 24 KiB it shares with the preflight)
     - its functions and ``python3 -c`` of the carried source, fed recorded neuron-monitor reports
       (``tests/test_neuron_monitor_emf.py``)
   * - :mod:`~neuron_constructs.programs.engine_metrics`
     - the ``engine-metrics`` sidecar of a model's task definition, in the model's own image:
       ``python3 -u -c "$ENGINE_METRICS_PROGRAM"``
     - ``ENGINE_METRICS_PROGRAM`` in the sidecar's environment, as text (about 15 KB; an ECS task definition takes
       up to 64 KiB), with its metric table as JSON in ``ENGINE_METRICS_TABLE``
       (:mod:`neuron_constructs.monitoring.engine_metrics`)
     - its functions and ``python3 -c`` of the carried source against a local HTTP server answering recorded
       ``/metrics`` outputs (``tests/test_engine_metrics.py``)

Each is carried as :func:`~neuron_constructs.programs.carrying.program_source` gives it: without docstrings and
comments, so that editing them changes no template. None imports the library, the AWS CDK or another program
(import-linter contracts in ``pyproject.toml``); ``tests/test_programs.py`` runs each with the standard library
alone. The constructs read a program's own constants from it (the preflight's exit codes, the smoke test's methods,
the publisher's metric table), so each has one definition.

The shell scripts the library carries are not programs of this kind: each is written from, or configured by, the
construct that carries it, and stays beside it: the Neuron driver start check
(:mod:`neuron_constructs.compute.driver_check`), the warm-up script
(:func:`neuron_constructs.knowledge.warm_start.warm_up_script`), the EFA installer's boot commands
(:func:`neuron_constructs.knowledge.efa_installer.install_commands`), the training launcher
(:data:`neuron_constructs.training.jobs.LAUNCHER`) and the monitoring daemons' commands
(:mod:`neuron_constructs.monitoring.daemons`).
"""
