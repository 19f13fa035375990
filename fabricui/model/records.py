"""Hardware-database records: link generations, GPUs, NICs, switches and model shapes.

Every numeric figure comes from ``source`` unless ``sources`` names another reference for
that field (``sources: {lat_us: <url>}``); the loader refuses a record without a source.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: Tiers of the bandwidth pyramid, fastest first. ``memory`` is on-package (SMEM, HBM).
TIERS = ("on-chip", "memory", "scale-up", "host", "scale-out")

#: MLP kinds a model shape names: gated ones (three matrices) and plain ones (two).
MLP_KINDS = ("gelu", "relu", "swiglu", "geglu")
#: The gated MLP kinds.
GATED_MLPS = ("swiglu", "geglu")

#: How a framework runs its memory-bound passes (``FrameworkSpec.passes``).
PASS_STYLES = ("fused", "compiled", "eager")
#: How a framework computes the cross entropy (``FrameworkSpec.loss``): one fused pass
#: each way, Megatron's vocabulary-parallel kernels on an FP32 softmax, or PyTorch eager
#: ops on logits cast to FP32.
LOSS_STYLES = ("fused", "fp32", "eager")
#: What a framework's selective recomputation recomputes (``FrameworkSpec.selective``).
SELECTIVE_KINDS = ("attention", "ops")
#: Head dimension a fused attention kernel's efficiencies are quoted at (``KernelSpec``):
#: its head-dimension tables hold 1.0 here.
ATTENTION_REF_HEAD_DIM = 128

#: Link families of the core database (on-package memory); every other family is declared
#: by the interconnect plugin that owns it (``register_interconnects``), and the catalog
#: accepts the families of the plugins that are loaded.
CORE_FAMILIES = ("memory",)

#: The families fabricui's built-in plugins declared when this constant was last updated.
#: Informational only (kept for code that imports it): the catalog validates link records
#: against the families the loaded plugins register, not against this list.
LINK_FAMILIES = (
    "memory",
    "pcie",
    "nvlink",
    "nvlink-c2c",
    "xgmi",
    "cpu",
    "infiniband",
    "roce",
    "efa",
    "slingshot",
    "tcpxo",
    "ethernet",
    "ici",
    "neuronlink",
)


@dataclass(frozen=True)
class LinkGeneration:
    """One generation of one link technology, e.g. NVLink 4 or InfiniBand NDR."""

    id: str
    """Stable id used in topology specs (``nvlink4``, ``ib-ndr``, ``pcie5``)."""
    name: str
    """Human name (``NVLink 4.0``)."""
    family: str
    """Technology family: ``memory``, or one a loaded interconnect plugin declares."""
    tier: str
    """Pyramid tier, one of ``TIERS``."""
    bw_GBps: float
    """Bandwidth of one link / lane bundle / port, per direction [GB/s]. For PCIe: x16.
    For network links: the default port rate (see ``rates_Gbps``)."""
    lat_us: float
    """Latency of one hop over this link, wire and endpoint logic [us]."""
    efficiency: float
    """Fraction of ``bw_GBps`` that bulk transfers achieve in practice (0-1]."""
    source: str
    """Reference for the figures (datasheet, spec or measurement URL)."""
    year: int | None = None
    """Year of introduction."""
    links_per_gpu: int | None = None
    """Typical number of such links per GPU (NVLink, xGMI); per-GPU bandwidth is
    ``links_per_gpu * bw_GBps``."""
    rates_Gbps: tuple[float, ...] = ()
    """Port rates a topology may pick with ``net.gbps`` [Gb/s]; empty for fixed links."""
    sources: dict[str, str] = field(default_factory=dict)
    """Per-field references that differ from ``source``."""
    note: str = ""
    """Anything a user should know about the figures."""
    protocols: tuple[str, ...] = ()
    """NCCL protocols (``ll``, ``ll128``, ``simple``) a collective may use when this link is
    on the path between two of its GPUs; empty: all of them. NCCL enables LL128 only where
    128-byte stores arrive whole (NVLink), so a host link or a vendor link without that
    guarantee lists ``[ll, simple]`` and the engine never prices LL128 across it."""
    torus_max: tuple[int, ...] = ()
    """Chip-to-chip links only: the largest slice a torus of this link may be, as ring
    sizes (``[16, 16, 24]`` for TPU v5p); a torus whose sizes, sorted, exceed these is
    refused. Empty: no limit."""
    torus_max_chips: int | None = None
    """Chip-to-chip links only: most chips of one torus (the largest slice a pod runs)."""
    pod_chips: int | None = None
    """Chip-to-chip links only: chips of a whole pod, for messages (TPU v5p: 8,960)."""
    torus_wrap: int | None = None
    """Chip-to-chip links only: rings wrap around only in slices made of whole blocks of
    this many chips along every torus dimension the chip has (4: whole 4x4x4 cubes on TPU
    v5p and 7x; 16: TPU v6e's whole 16 x 16 pod); smaller slices are meshes. None: every
    ring wraps."""
    layout: str | None = None
    """Network links only: the layout a network of this link is built as (``net.layout``)
    when a topology states none (Slingshot: ``dragonfly``); None: the size decides
    (``auto``)."""

    @property
    def per_gpu_bw_GBps(self) -> float | None:
        """Aggregate per-GPU bandwidth per direction when ``links_per_gpu`` is known [GB/s]."""
        if self.links_per_gpu is None:
            return None
        return self.links_per_gpu * self.bw_GBps


@dataclass(frozen=True)
class GpuSpec:
    """One accelerator model."""

    id: str
    """Stable id from the shared vocabulary (``h100-sxm``, ``mi300x``)."""
    name: str
    """Marketing name."""
    vendor: str
    """``nvidia`` or ``amd`` (or a plugin's vendor)."""
    arch: str
    """Architecture (``ampere``, ``hopper``, ``blackwell``, ``cdna3`` ...)."""
    memory_GB: float
    """On-package memory capacity [GB]."""
    hbm_bw_GBps: float
    """Memory bandwidth [GB/s]."""
    bf16_dense_TFLOPS: float | None
    """Peak dense BF16 tensor throughput, no sparsity [TFLOP/s]; ``null`` where the vendor
    has not published it (a plan then asks for one instead of guessing)."""
    pcie: str
    """Host link generation id (``pcie5``)."""
    source: str
    """Reference for the figures."""
    scaleup_link: str | None = None
    """Scale-up link generation id (``nvlink4``, ``xgmi3``), or None (PCIe only)."""
    scaleup_links: int = 0
    """Number of scale-up links per GPU."""
    smem_bw_GBps: float | None = None
    """Aggregate shared-memory / L1 bandwidth over all SMs [GB/s], for the pyramid."""
    memory_tech: str = ""
    """Memory technology (``HBM3``, ``GDDR6X``)."""
    fp8_dense_TFLOPS: float | None = None
    """Peak dense FP8 tensor throughput, no sparsity (half a 2:4-sparsity figure)
    [TFLOP/s]; None: no FP8 tensor cores, or none published."""
    fp4_dense_TFLOPS: float | None = None
    """Peak dense FP4 tensor throughput (NVFP4, MXFP4), no sparsity [TFLOP/s]; None: no
    FP4 tensor cores, or none published."""
    sms: int | None = None
    """Streaming multiprocessors (compute units): GEMM tiles run in waves of this many."""
    gemm_efficiency: float | None = None
    """Fraction of the dense peak a large square GEMM sustains (cuBLAS, 8192^3, measured);
    the training model derives every GEMM shape's throughput from it (0-1]."""
    gemm_overhead_us: float | None = None
    """Fixed time of one GEMM call beyond its FLOPs (launch, pipeline fill and drain),
    derived from the same measurement at a small size [us]."""
    attention_efficiency: float | None = None
    """Fraction of the dense peak a fused (flash) attention kernel sustains (0-1], for a
    kernel the database has no ``kernels`` record of on this architecture."""
    hbm_efficiency: float | None = None
    """Fraction of ``hbm_bw_GBps`` a streaming copy reaches (measured) (0-1]."""
    fp8_gemm_efficiency: float | None = None
    """Fraction of ``fp8_dense_TFLOPS`` a large FP8 GEMM sustains (measured, as
    ``gemm_efficiency`` for 16-bit) (0-1]."""
    power_W: float | None = None
    """Board power limit the peaks are quoted at (TDP) [W]."""
    sustained_efficiency: float | None = None
    """Fraction of the GEMM and attention figures above (microbenchmarks: milliseconds on
    an idle GPU) that compute-bound kernels keep through sustained training: clocks under
    the power limit with HBM, NVLink and the NICs drawing from the same budget, and the
    shapes and data a model runs. Fitted per GPU generation to the published runs of its
    best-tuned software (``sources`` names them); a plan prints it as an assumption (0-1]."""
    host_link: str | None = None
    """The GPU's own link to its CPU when it is not ``pcie``: ``nvlink-c2c`` on a Grace
    superchip (GH200, GB200, GB300), whose NICs hang off the CPU's PCIe (``pcie``); a
    topology that states no ``intra.host_link`` takes it."""
    gpus_per_cpu: int | None = None
    """GPUs that share one CPU on a superchip (GH200: 1, GB200 and GB300: 2); a topology
    that states no ``intra.sockets`` has ``gpus_per_node / gpus_per_cpu`` of them."""
    sources: dict[str, str] = field(default_factory=dict)
    """Per-field references that differ from ``source``."""
    note: str = ""
    """Anything a user should know about the figures."""


@dataclass(frozen=True)
class KernelSpec:
    """A fused attention kernel's sustained throughput on one GPU architecture."""

    id: str
    """Stable id (``cudnn-hopper``)."""
    impl: str
    """Implementation (``cudnn``, ``fa2``, ``fa3``, ``fa4``, ``triton``), as a framework's
    ``attention`` names it."""
    arch: str
    """GPU architecture it was measured on (``hopper``)."""
    fwd_efficiency: float
    """Forward: fraction of the dense 16-bit peak at long sequences, causal (0-1]."""
    bwd_efficiency: float
    """Backward: fraction of the dense 16-bit peak at long sequences (0-1]."""
    source: str
    """Reference for the figures."""
    half_seq: float = 0.0
    """Sequence length at which the kernel reaches half its long-sequence throughput
    (``eff(s) = eff * s / (s + half_seq)``, fitted to the source's sequence sweep) [tokens]."""
    fwd_head_dim_scale: dict[int, float] = field(default_factory=dict)
    """Forward throughput by query/key head dimension relative to ``fwd_efficiency`` (quoted
    at ``ATTENTION_REF_HEAD_DIM``, which the table holds at 1.0), each entry read off the
    source at long sequences: ``{64: 0.716, 128: 1.0, 256: 0.94}``. Between listed head
    dimensions it is interpolated on log2(head dim); beyond them the nearest entry holds.
    Empty: 1.0 at every head dimension (no published figure)."""
    bwd_head_dim_scale: dict[int, float] = field(default_factory=dict)
    """The same for the backward kernel and ``bwd_efficiency``."""
    window_fwd_efficiency: dict[int, float] = field(default_factory=dict)
    """Forward on a sliding-window layer: fraction of the dense 16-bit peak by window
    [tokens], on ``4 b a s w d`` FLOPs (every query attending ``w`` keys), at long sequences
    and the head dim the source measured, in place of ``fwd_efficiency`` and its head-dim
    factor: ``{128: 0.068, 1024: 0.283}``. A short window leaves the kernel little work per
    query tile. Interpolated on log2(window) between listed windows, the nearest entry held
    beyond them. Empty: windowed layers run at the causal figures."""
    window_bwd_efficiency: dict[int, float] = field(default_factory=dict)
    """The same for the backward kernel (``2.5 x`` the forward's FLOPs)."""
    fp8_fwd_scale: dict[str, dict[int, float]] = field(default_factory=dict)
    """Forward throughput with attention in FP8 (Transformer Engine's
    ``fp8_dot_product_attention``) over the 16-bit kernel's at the same head dim, causal,
    at long sequences; by format (``vocabulary.FP8_ATTENTION_FORMATS``: ``fp8`` per-tensor
    scales, ``mxfp8`` block scales), then by query/key head dim, interpolated as
    ``fwd_head_dim_scale``: ``{mxfp8: {128: 1.30, 192: 1.48}}``. A format with no entry
    runs its attention at the 16-bit figures."""
    fp8_bwd_scale: dict[str, dict[int, float]] = field(default_factory=dict)
    """The same for the backward kernel."""
    fp8_window_fwd_scale: dict[str, dict[int, float]] = field(default_factory=dict)
    """Forward throughput in FP8 on a sliding-window layer over the 16-bit window figure
    (``window_fwd_efficiency``), by format, then by window [tokens], interpolated as that
    table. A format with no entry runs windowed layers at the 16-bit figure."""
    fp8_window_bwd_scale: dict[str, dict[int, float]] = field(default_factory=dict)
    """The same for the backward kernel."""
    sources: dict[str, str] = field(default_factory=dict)
    """Per-field references that differ from ``source``."""
    note: str = ""
    """How the figures were read."""


@dataclass(frozen=True)
class FrameworkSpec:
    """A training framework's defaults: the kernels it runs and how it communicates.

    A plan or a run that does not state a setting takes its framework's (and says so)."""

    id: str
    """Stable id (``megatron-core``, ``torchtitan``)."""
    name: str
    """Human name."""
    source: str
    """Reference (the framework's code or documentation at a commit)."""
    match: tuple[str, ...] = ()
    """Lower-case words that name it in a published run's source (a README's URL, a
    paper's title), so a run that does not state its framework is recognised."""
    years: tuple[int, ...] = ()
    """First and last year of the releases these defaults describe (empty: any); picks
    between profiles of one framework by the year a run's source gives."""
    attention: str = "cudnn"
    """Fused attention kernel it runs (a ``kernels`` record's ``impl``)."""
    passes: str = "fused"
    """Its memory-bound passes: ``fused`` (Transformer Engine and Megatron's fused norm,
    rotary, activation and bias-dropout-add kernels), ``compiled`` (torch.compile fuses
    each chain of pointwise ops into one kernel) or ``eager`` (one PyTorch op per kernel,
    FP32 upcasts included)."""
    loss: str = "fused"
    """Cross entropy: ``fused`` (one pass over the 16-bit logits each way), ``fp32``
    (Megatron's vocabulary-parallel kernels keeping an FP32 softmax) or ``eager`` (logits
    cast to FP32, log-softmax and its gradient as separate PyTorch ops)."""
    tp_overlap: bool = True
    """TP collectives overlapped with the GEMMs by default."""
    tp_overlap_backward: bool = True
    """Its TP overlap hides the backward pass's TP collectives too; False: only the
    forward's (PyTorch's async TP as torchtitan runs it)."""
    tp_overlap_decomposed: bool = False
    """Its TP overlap decomposes each TP collective with the GEMMs beside it (PyTorch's
    micro-pipelined async TP: an all-gather with the GEMMs that read its output, a
    reduce-scatter with the GEMM that writes its input), so each collective hides only
    behind those GEMMs, plus the memory passes the decomposition adds; False: behind all
    the layer's GEMMs."""
    tp_userbuffers: str = ""
    """Its TP overlap runs on Transformer Engine's userbuffers with this configuration
    (``vocabulary.TP_USERBUFFERS``: ``te``, its defaults; ``megatron-bridge``,
    Megatron-Bridge's per-model configs): each TP collective beside the one GEMM it is
    paired with, plus the SMs and passes its method costs; ``""``: behind all the layer's
    GEMMs."""
    separate_projections: bool = False
    """Its models run query, key and value (and a gated MLP's gate and up) as separate
    linear layers, each a GEMM that reads the layer's input, instead of one fused GEMM."""
    kv_repeated: bool = False
    """Its models repeat the key and value heads to the query heads before attention
    (torchtitan's ``repeat_kv``): the attention saves its keys and values for backward at
    the query heads' width, not the key/value heads'."""
    cp_attention: str = "ring"
    """Its context parallelism (``vocabulary.CP_ATTENTION``): ``ring`` (each ring step
    sends the chunk's keys and values to the next rank, overlapped with that step's
    attention) or ``torch`` (PyTorch's ring attention as torchtitan runs it: keys and values
    at the query heads all-gathered after the first step's attention, the steps merged in
    FP32, the key and value gradients passed around the ring in FP32)."""
    grad_reduce_bytes: float = 2.0
    """Bytes per gradient element the data-parallel reduction moves (4: FP32)."""
    bucket_params: float = 0.0
    """Parameters per gradient bucket (0: PyTorch DDP's 25 MiB buckets)."""
    bucket_layers: bool = False
    """Gradients and parameters move one transformer layer at a time (PyTorch FSDP's
    wrapped unit, in ``SHARD_GRAD_OP`` too), not in buckets."""
    fsdp_reshard: bool = True
    """FSDP / ZeRO-3 frees the gathered parameters after forward and gathers them again
    for backward."""
    fsdp_reduce_bytes: float = 4.0
    """Bytes per gradient element FSDP's reduce-scatter moves."""
    pp_defers_fsdp_sync: bool = False
    """Under pipeline parallelism its schedule turns FSDP's gradient sync and resharding
    after backward off until a stage's last micro-batch (PyTorch's pipelining as torchtitan
    runs it): the stage keeps its parameters gathered and its gradients unsharded,
    accumulated at the reduce width, through every micro-batch, and reduce-scatters them
    once, after the last micro-batch's backward."""
    grad_bytes: float = 4.0
    """Bytes per parameter of the gradients kept for the optimizer (4: Megatron's FP32 main
    gradients; 2: gradients in the 16-bit parameters' own dtype)."""
    optimizer_bytes: float = 12.0
    """Bytes per parameter the optimizer keeps beside the 16-bit weights: an FP32 master
    copy and two FP32 Adam moments (12), or only the two moments in the parameters' own
    16-bit dtype (4: ``torch.optim.Adam`` on bf16 parameters)."""
    selective: str = "attention"
    """What ``recompute: selective`` recomputes: ``attention`` (the attention core,
    Korthikanti et al. 2022) or ``ops`` (PyTorch's op-level policy: the pointwise ops
    and every second matmul of the forward)."""
    fp8_recipe: str = "delayed"
    """FP8 scaling recipe by default (``delayed``, ``current``, ``blockwise``, ``mxfp8``)."""
    moe_dispatch: str = "alltoall"
    """MoE token dispatch: ``alltoall`` (one copy per routed expert) or ``deepep`` (one
    copy per destination node, forwarded over NVLink; node-limited routing)."""
    compute_efficiency: float = 1.0
    """Share of the reference software's compute throughput (Megatron-Core's, on which the
    GPUs' sustained efficiencies were fitted) this framework's kernels reach: PyTorch
    eager's launch gaps, autocast and FSDP hooks; fitted to the framework's published runs
    (``sources`` names them) (0-1]."""
    moe_sync_us: float = 0.0
    """GPU time lost in each pass of each MoE layer while the host reads the tokens each
    expert receives (to size the all-to-all and the grouped GEMM) and launches the rest of
    the layer [us]; fitted to the framework's published MoE runs (``sources`` names them)."""
    unfused_expert_bias: bool = False
    """It adds the routed experts' output bias (a model with ``expert_bias``), scaled by each
    token's router probability, in PyTorch ops of their own after the grouped GEMM, not in
    the GEMM (Megatron-Core's ``TEGroupedMLP._apply_bias``), except under a whole-iteration
    CUDA graph, whose recipes run Transformer Engine's fused grouped MLP."""
    unfused_activation_clamp: bool = False
    """It clamps a gated activation's halves (a model with ``activation_clamp``) in PyTorch
    ops of their own before its fused activation kernel, in the routed experts (Megatron-Core's
    ``weighted_bias_quick_geglu_impl``: two ``clamp`` and a ``cat``), except under a
    whole-iteration CUDA graph, whose recipes run Transformer Engine's fused grouped MLP
    with the clamp inside it."""
    unfused_scaled_rope: bool = False
    """It applies rotary embeddings whose cos and sin carry a scale (a model with
    ``rope_yarn_factor``) in PyTorch ops, not its fused RoPE kernel (Megatron-Core's
    ``apply_rotary_pos_emb``: "mscale ... is not supported by TE's fused RoPE")."""
    fp8_experts: bool = True
    """Its FP8 conversion covers the experts' grouped GEMMs (Transformer Engine's grouped
    linear layers); False: the experts run in 16-bit under FP8 (torchtitan's float8
    converter swaps ``nn.Linear`` layers only, and its experts are grouped GEMMs)."""
    sources: dict[str, str] = field(default_factory=dict)
    """Per-field references that differ from ``source``."""
    note: str = ""
    """Anything a user should know."""


@dataclass(frozen=True)
class NicSpec:
    """One network adapter."""

    id: str
    """Stable id (``cx7-ndr``)."""
    name: str
    """Product name."""
    link: str
    """Network link generation id it speaks (``ib-ndr``)."""
    ports: int
    """Number of network ports."""
    rate_Gbps: float
    """Line rate of one port [Gb/s]."""
    pcie: str
    """Link generation id of the hop to the adapter: its host interface (``pcie5``), or for
    ports on the accelerator's die (``attach: gpu``) the on-die path (``gaudi3-nic-port``)."""
    lat_us: float
    """Adapter latency added once per traversal [us]."""
    source: str
    """Reference for the figures."""
    sources: dict[str, str] = field(default_factory=dict)
    """Per-field references that differ from ``source``."""
    note: str = ""
    """Anything a user should know."""
    protocols: tuple[str, ...] = ()
    """NCCL protocols its transport can carry (``simple`` where the adapter cannot deliver
    bytes in order, so LL and LL128 would corrupt data); empty: all of them."""
    gpus: tuple[str, ...] = ()
    """GPUs it ships with, for adapters that exist only in particular systems (a cloud's
    instance types); a topology with that GPU and this NIC's link picks it. Empty: any."""
    attach: str = "host"
    """Where the adapter sits: ``host`` (a PCIe card or mezzanine behind the node's PCIe
    switch or CPU) or ``gpu`` (network ports on the accelerator itself, as Gaudi's on-die
    RoCE ports: traffic to them does not cross the host's PCIe)."""
    nccl_latency_us: float = 0.0
    """Latency the adapter's NCCL network plugin reports to NCCL (``ncclNetProperties_t``
    ``latency``) [us]. NCCL's tuner adds it to every network step of its cost model (twice
    on Simple), so it changes which algorithm and protocol NCCL picks, not the time on the
    wire. 0 for NCCL's own InfiniBand, RoCE and socket transports."""
    efficiency: float | None = None
    """Achievable fraction of the port rate for bulk transfers where the adapter, not its
    link generation, sets it (a cloud adapter's transport differs by generation: first-
    generation EFA delivers less of its line rate than EFAv4); it then replaces the
    generation's ``efficiency`` on the network links of a fabric built with this adapter.
    None: the link generation's."""


@dataclass(frozen=True)
class SwitchSpec:
    """One switch chip or switch system (NVSwitch, PCIe switch, IB or Ethernet switch)."""

    id: str
    """Stable id (``nvswitch3``, ``quantum-2``)."""
    name: str
    """Product name."""
    family: str
    """``nvswitch``, ``pcie``, ``infiniband``, ``ethernet``, ``slingshot`` ..."""
    radix: int | None
    """Number of ports; ``null`` where the vendor has not published it (such a switch can
    be a scale-up switch, whose ports the builder does not count, but not a network's)."""
    port_Gbps: float | None
    """Rate of one port [Gb/s]; ``null`` where not published."""
    lat_us: float
    """Port-to-port latency [us]."""
    source: str
    """Reference for the figures."""
    in_network_reduction: bool = False
    """True when the switch can reduce in the network (SHARP, NVLS)."""
    sources: dict[str, str] = field(default_factory=dict)
    """Per-field references that differ from ``source``."""
    note: str = ""
    """Anything a user should know."""


@dataclass(frozen=True)
class ModelShape:
    """A transformer's shape, enough to derive parameter bytes, FLOPs and activations."""

    id: str
    """Stable id (``llama3-70b``)."""
    name: str
    """Human name."""
    params_B: float
    """Total parameters [billions]."""
    layers: int
    """Transformer layers."""
    hidden: int
    """Model (embedding) width."""
    ffn_hidden: int
    """MLP inner width (per expert for MoE)."""
    heads: int
    """Attention heads."""
    kv_heads: int
    """Key/value heads (GQA)."""
    vocab: int
    """Vocabulary size."""
    seq_len: int
    """Default training sequence length [tokens]."""
    source: str
    """Reference (paper or model card)."""
    experts: int = 0
    """Routed experts per MoE layer (0 for dense)."""
    experts_per_token: int = 0
    """Routed experts each token visits (top-k)."""
    active_params_B: float | None = None
    """Parameters active per token for MoE [billions]; None for dense."""
    moe_layers: int = 0
    """Number of layers that are MoE."""
    head_dim: int | None = None
    """Width of one attention head (default ``hidden / heads``)."""
    qk_head_dim: int | None = None
    """Width of a query/key head in the attention core's scores, where it differs from
    ``head_dim`` (multi-head latent attention: 128 + 64 rotary = 192); None: ``head_dim``."""
    v_head_dim: int | None = None
    """Width of a value head in the attention core, where it differs (MLA: 128); None:
    ``head_dim``."""
    q_lora_rank: int | None = None
    """Width of multi-head latent attention's query latent (DeepSeek-V3: 1536): queries are
    projected down to it, normed, and up to the heads; None: queries projected directly
    (with ``kv_lora_rank``) or no MLA."""
    kv_lora_rank: int | None = None
    """Width of multi-head latent attention's key/value latent (DeepSeek-V3: 512); None: the
    attention is not MLA and its projections are ordinary QKV."""
    qk_rope_head_dim: int | None = None
    """Rotary part of MLA's query/key head (DeepSeek-V3: 64 of ``qk_head_dim`` 192), its key
    shared by all heads and projected down with the key/value latent; None: 0."""
    mlp: str = ""
    """MLP kind: ``swiglu`` (gated, three matrices) or ``gelu`` (two); empty: read off
    ``params_B`` (whichever makes the shape add up)."""
    shared_experts: int = 0
    """Experts every token visits besides its routed top-k (DeepSeek), each ``ffn_hidden`` wide."""
    dense_ffn_hidden: int | None = None
    """MLP width of the dense (non-MoE) layers of an MoE model (default ``ffn_hidden``)."""
    sliding_window: int = 0
    """Attention window of the layers that use one [tokens] (0: every layer attends fully)."""
    window_layers: int = 0
    """How many layers use ``sliding_window`` (the rest attend to the whole sequence)."""
    dropout: bool | None = None
    """True when training applies dropout (GPT-3 era); None: inferred from ``mlp`` (GELU
    models yes, gated models no)."""
    rotary: bool | None = None
    """True when attention applies rotary position embeddings to queries and keys; None:
    inferred from ``mlp`` (gated models, the Llama family, do; GPT-era GELU models use
    learned or ALiBi positions)."""
    expert_bias: bool = False
    """The experts' linear layers carry biases (gpt-oss: ``gate_up_proj_bias`` and
    ``down_proj_bias``); a framework that adds the output bias in a pass of its own
    (``FrameworkSpec.unfused_expert_bias``) moves the experts' output through HBM again."""
    activation_clamp: float = 0.0
    """Limit a gated MLP clamps its two halves to before the activation (gpt-oss:
    ``swiglu_limit`` 7: the gate at most 7, the linear half within +-7); 0: no clamp. A
    framework that clamps in PyTorch ops of their own
    (``FrameworkSpec.unfused_activation_clamp``) moves the experts' first GEMM output through
    HBM again."""
    rope_yarn_factor: float = 0.0
    """YaRN's context-extension factor of the rotary embeddings (gpt-oss: 32); 0: plain
    rotary embeddings. YaRN scales cos and sin by ``0.1 ln(factor) + 1``, which a framework
    may apply in PyTorch ops of their own (``FrameworkSpec.unfused_scaled_rope``)."""
    sources: dict[str, str] = field(default_factory=dict)
    """Per-field references that differ from ``source``."""
    note: str = ""
    """Anything a user should know."""
