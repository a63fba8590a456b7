"""Layer 5, composition: settings resolution, the plugin manager, compose (plugins -> a frozen
ServerContext), the running server and its drain, and the typer CLI.
"""
