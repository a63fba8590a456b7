"""Layer 1, neutral types: tensors and requests, datatypes, errors, model configuration, settings.

Imports nothing of the layers above (models, dataplane, front ends, composition);
``tests/core/test_layers.py`` holds it.
"""
