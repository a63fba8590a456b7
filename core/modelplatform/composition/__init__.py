"""Layer 5, composition: settings resolution, the plugin manager, compose (plugins -> a frozen
ServerContext), the running server and its drain, and the typer CLI.
"""

from modelplatform.composition.grpc_experiments import use_grpc_experiments

use_grpc_experiments()  # before any module of this package imports grpc (grpc_experiments.py)
