"""``import triton_python_backend_utils as pb_utils`` for Triton python models.

This top-level module ships with modelplatform-python so model files written
for Triton's python backend import it unchanged; the implementation lives in
:mod:`modelplatform_python.triton_utils`.
"""

from modelplatform_python.triton_utils import *  # noqa: F403 - Triton's module name for the same API
from modelplatform_python.triton_utils import __all__  # noqa: F401 - Triton's module name for the same API
