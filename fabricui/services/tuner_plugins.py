"""Where a tuner plugin, not NCCL's own cost model, picks a collective's algorithm.

NCCL asks a tuner plugin for the algorithm, protocol and channels of every collective when
one is loaded (NVIDIA/nccl ``src/plugin/tuner.cc``, ``ncclTunerPluginLoad``): the library
``NCCL_TUNER_PLUGIN`` names (``none`` loads none) from 2.19, and from 2.21 also the tuner a
network plugin carries in its own library (``ncclGetNetPluginLib``; aws-ofi-nccl
``src/Makefile.am`` on the release that changed the loading). Two network plugins carry one:

- aws-ofi-nccl, on AWS P5, P5e, P5en, P6-B200 and P6-B300 instances: its region tuner
  (from 1.10 on P5, 1.13 on P5en, 1.16 on P6-B200, 1.19 on P6-B300) picks all-reduce,
  all-gather and reduce-scatter on more than two nodes of whole instances (8 GPUs each, or
  one per instance; also 2 on P5/P5e), and falls back to NCCL's own choice elsewhere,
  under ``OFI_NCCL_TUNER_TYPE=Internal`` and when ``OFI_NCCL_FORCE_NUM_RAILS`` is set
  (aws/aws-ofi-nccl ``src/tuner/nccl_ofi_regions.cpp``: ``is_region_supported`` and the
  layouts of its ``region_init_internal_*``; ``nccl_ofi_tuner_process_config.h``).
- Google's gIB plugin (A3 Ultra and A4 machines): Google's A4 image sets ``NCCL_NET=gIB``
  and ``NCCL_TUNER_CONFIG_PATH=/usr/local/gib/configs/tuner_config_a4.txtpb`` next to
  the plugin (GoogleCloudPlatform/PerfKitBenchmarker
  ``perfkitbenchmarker/data/nvidia_hpl/a4.dockerfile``); the configuration itself is not
  published.

fabricui prices NCCL's own choice. These notes say where a job's plugin may choose
otherwise, and what runs NCCL's choice instead.
"""

from __future__ import annotations

from collections.abc import Mapping

#: First release that loads ``NCCL_TUNER_PLUGIN``, and the first that also takes the
#: tuner of the network plugin's library.
TUNER_API_SINCE = (2, 19, 0)
NET_PLUGIN_TUNER_SINCE = (2, 21, 0)

#: aws-ofi-nccl's region tuner: the instance type each GPU family runs on, the plugin release
#: that first tunes it (the tags holding the commits that added each platform's regions),
#: and the GPUs per instance whose layouts it has regions for (two only on P5 and P5e, not
#: on P5en: H200 instances are taken as P5en).
AWS_PLATFORMS: tuple[tuple[str, str, str, tuple[int, ...]], ...] = (
    ("h100", "P5", "1.10", (8, 2, 1)),
    ("h200", "P5e/P5en", "1.13", (8, 1)),
    ("b200", "P6-B200", "1.16", (8, 1)),
    ("b300", "P6-B300", "1.19", (8, 1)),
)
#: The collectives it has regions for.
AWS_TUNED_OPS = ("all_reduce", "all_gather", "reduce_scatter")


def tuner_plugin_note(
    gpu_id: str,
    net_family: str | None,
    domains: int,
    ranks: int,
    op: str,
    env: Mapping[str, str],
    version: tuple[int, int, int] | None = None,
) -> str | None:
    """What picks ``op`` instead of NCCL's own model on this job, or None when NCCL does.

    Args:
        gpu_id: The GPU's hwdb id (``h100-sxm``, ``b200``).
        net_family: The network's link family (``efa``), None without a network.
        domains: NCCL's nodes the ranks lie in.
        ranks: Ranks of the collective.
        op: The collective (``all_reduce``).
        env: The job's environment (``NCCL_*``, ``OFI_NCCL_*``).
        version: NCCL's release (None: the newest modelled).
    """
    if version is not None and version < TUNER_API_SINCE:
        return None
    named = env.get("NCCL_TUNER_PLUGIN", "").strip()
    if named.lower() == "none":
        return None
    if named:
        return (
            f"NCCL_TUNER_PLUGIN={named} loads a tuner plugin, which may run other "
            "algorithms, protocols and channels than NCCL's own choice shown here "
            "(NCCL_TUNER_PLUGIN=none runs that choice)"
        )
    if version is not None and version < NET_PLUGIN_TUNER_SINCE:
        return None
    if env.get("NCCL_NET", "").strip().lower() == "gib" or "NCCL_TUNER_CONFIG_PATH" in env:
        return (
            "Google's gIB network plugin carries a tuner, configured by NCCL_TUNER_CONFIG_PATH "
            "(a configuration per machine type, not published), which may run "
            "other algorithms and protocols than NCCL's own choice shown here "
            "(NCCL_TUNER_PLUGIN=none runs that choice)"
        )
    tuned = _aws_region_tuner(gpu_id, net_family, domains, ranks, op, env)
    if tuned is None:
        return None
    platform, since = tuned
    return (
        f"on AWS {platform} instances aws-ofi-nccl ({since} and later) carries a tuner that "
        f"picks {op}'s algorithm and protocol on more than two instances, by its own "
        "measured regions of size and ranks; shown is NCCL's own choice, which "
        "OFI_NCCL_TUNER_TYPE=Internal (or NCCL_TUNER_PLUGIN=none) runs"
    )


def _aws_region_tuner(
    gpu_id: str,
    net_family: str | None,
    domains: int,
    ranks: int,
    op: str,
    env: Mapping[str, str],
) -> tuple[str, str] | None:
    """The AWS platform whose aws-ofi-nccl region tuner picks ``op`` here and the plugin
    release that first does, else None."""
    if net_family != "efa" or domains <= 2 or op not in AWS_TUNED_OPS:
        return None
    if env.get("OFI_NCCL_TUNER_TYPE", "").strip().lower() == "internal":
        return None
    if "OFI_NCCL_FORCE_NUM_RAILS" in env:
        return None
    per_node, rest = divmod(ranks, domains)
    gpu = gpu_id.lower()
    for family, platform, since, layouts in AWS_PLATFORMS:
        if gpu.startswith(family):
            tuned = rest == 0 and per_node in layouts
            # Two GPUs per instance: regions for all-reduce only.
            if per_node == 2 and op != "all_reduce":
                tuned = False
            return (platform, since) if tuned else None
    return None
