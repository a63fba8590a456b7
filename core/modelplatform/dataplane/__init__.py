"""Layer 3, the dataplane: the facades every dialect calls (inference and streaming, repository
and lifecycle, statistics and observation), and what plugins are handed (ServerContext, the
declarations ``register_*`` hooks return).

Imports only the neutral types and the models layer.
"""
