"""The failure classes (stable ids; see ../shared/TAXONOMY.md). Every entry names one."""

from __future__ import annotations

# id -> (group, one-line description in our own words)
CLASSES: dict[str, tuple[str, str]] = {
    "collective-desync": ("communication", "Ranks issued different collectives, counts or shapes, so they wait on each other forever."),
    "peer-rank-crashed": ("communication", "One rank died; the others only report timeouts or broken connections to it."),
    "straggler-timeout": ("communication", "One rank was slower than the collective timeout while the others waited for it."),
    "nccl-network": ("communication", "NCCL's network transport failed: sockets, InfiniBand/RoCE, interface choice, firewalls."),
    "nccl-p2p-topology": ("communication", "Peer-to-peer GPU paths (NVLink, PCIe P2P, ACS/IOMMU) misbehave or are unsupported."),
    "shm-insufficient": ("communication", "Shared memory (/dev/shm) is too small or unusable: bus errors, NCCL shm failures."),
    "rendezvous-init": ("communication", "Processes could not find each other: store, rendezvous, address, port or world size."),
    "duplicate-gpu": ("communication", "Several ranks ended up on one GPU, or a rank asked for a GPU that does not exist."),
    "nccl-cuda-version": ("communication", "NCCL, CUDA, driver or library versions do not fit together."),
    "ddp-unused-parameters": ("framework", "DDP waited for gradients of parameters that did not take part in the loss."),
    "ddp-mark-ready-twice": ("framework", "DDP saw one parameter's gradient become ready twice in an iteration."),
    "ddp-model-mismatch": ("framework", "Ranks built different models (parameter count or shapes differ)."),
    "fsdp-error": ("framework", "FSDP sharding, flat-parameter, wrapping or state-dict errors."),
    "compile-error": ("framework", "torch.compile / dynamo / inductor failed to compile or hit its recompile limits."),
    "checkpoint-error": ("framework", "Saving or loading a checkpoint failed: keys, shapes, corruption, device mapping."),
    "cuda-oom": ("resources", "The GPU ran out of memory."),
    "host-oom": ("resources", "The host ran out of memory and the kernel (or a supervisor) killed a process."),
    "device-assert": ("resources", "A CUDA device-side assert fired, usually from bad indices or labels in the data."),
    "illegal-memory-access": ("resources", "A kernel touched memory it must not; not explained by the inputs."),
    "nan-divergence": ("resources", "Loss or gradients became NaN/Inf, or training diverged."),
    "gpu-hardware": ("resources", "The GPU or its link failed: Xid, ECC, fell off the bus, NVLink errors."),
    "device-mismatch": ("resources", "Tensors on different devices (or of incompatible dtypes) met in one operation."),
}

CLASS_IDS = frozenset(CLASSES)
