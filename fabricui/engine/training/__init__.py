"""The training-step model: compute from the model's shape and the GPU's measured kernel
throughput, communication priced on the fabric, pipeline schedules, memory, and a layout
search. Pure functions and frozen dataclasses over numpy; strategies and collective
algorithms are passed in.

Modules, one job each: ``shape`` (geometry of a model), ``device`` (what a GPU sustains),
``kernels`` (GEMM, attention and memory-bound kernel times), ``layer`` (one layer's
forward, backward and recompute), ``flops`` (model FLOPs for MFU), ``schedule`` (stages,
bubble, in-flight micro-batches), ``memory`` (states and activations per GPU), ``groups``
(process groups), ``pricing`` (collectives on the fabric), ``comm`` (what is exposed),
``recipe`` (settings and their defaults), ``step`` (a plan), ``search`` (the ranking),
``table`` (the decision table), ``legacy`` (the fixed-MFU model of ``--mfu``).
"""
