"""docs/plugins/hooks.md documents every hook spec with its exact signature."""

import inspect
import re

from modelplatform import hookspecs
from tests.conftest import ROOT

DOC = (ROOT / "docs" / "plugins" / "hooks.md").read_text()


def _hook_functions():
    return [
        fn
        for name, fn in inspect.getmembers(hookspecs, inspect.isfunction)
        if hasattr(fn, "modelplatform_spec")
    ]


def _signature_line(fn) -> str:
    source = inspect.getsource(fn)
    header = source[source.index("def ") : source.index(":\n")]
    return re.sub(r"\s+", " ", header).replace("( ", "(").replace(", )", ")")


def test_the_hook_specs_are_exactly_these():
    names = sorted(fn.__name__ for fn in _hook_functions())
    assert names == sorted(
        [
            "register_options",
            "register_backends",
            "register_codecs",
            "register_http_dialects",
            "register_grpc_services",
            "register_commands",
            "open_repository",
            "warmup_requests",
            "configure",
            "startup",
            "shutdown",
        ]
    )


def test_every_hook_has_a_heading_and_its_exact_signature():
    for fn in _hook_functions():
        assert f"\n## {fn.__name__}\n" in DOC, fn.__name__
        assert _signature_line(fn) in DOC, _signature_line(fn)


def test_every_hook_has_a_docstring():
    for fn in _hook_functions():
        assert fn.__doc__ and len(fn.__doc__.split()) > 10, fn.__name__
