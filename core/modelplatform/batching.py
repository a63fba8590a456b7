"""The batching sub-API: several requests as one framework call, and the outputs cut back.

For backends of batching models (``max_batch_size > 0``) whose ``execute``
receives several requests from the dynamic batcher and would rather pay the
framework's cost once::

    from modelplatform.batching import join_inputs, joinable, rows, split_outputs

    async def execute(self, batch):
        if joinable(batch, self.config.max_batch_size):
            outputs = run_model(join_inputs(batch))
            shares = split_outputs(outputs, [rows(r) for r in batch])
            ...  # one response per request from its share
        ...  # else (and when the joined call fails) run each request alone

- :func:`rows`: a request's batch size, its first input's first dimension
  (1 when it has none).
- :func:`joinable`: at least two requests, ``max_batch_size > 0``, the same
  inputs in every request (name, datatype and shape after the batch
  dimension; their order does not matter), the same requested outputs unless
  ``same_outputs=False`` (for a backend that runs the union of what the
  batch asks for), and at most ``max_batch_size`` rows together.
- :func:`join_inputs`: the inputs, named as in the first request, each
  concatenated along axis 0 over the batch (``Internal`` when a request
  lacks one).
- :func:`split_outputs`: each output's first dimension cut into per-request
  views; ``Internal``, naming the output and its shape, when that dimension
  is not the batch's total.

Run each request alone when the joined call fails, so that a bad request
fails by itself. Everything here is public (docs/plugins/hooks.md lists the
sub-APIs); the module holding the code is private to the core.
"""

from __future__ import annotations

from modelplatform.base.batching import join_inputs, joinable, rows, split_outputs

__all__ = ["join_inputs", "joinable", "rows", "split_outputs"]
