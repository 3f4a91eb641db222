"""Every use of Triton's internals: names Triton does not document as API and
that differ between its versions (this project supports 3.6 to 3.9). Each is
one function here, so that a new Triton breaks one place;
tests/backend/test_triton_internals.py checks each on the installed Triton
(CI runs it on the lowest Triton and the newest).

Not here: what Triton hands a backend plug-in (the module and ops a stage
function receives, `BaseBackend`, `DriverBase`, `GPUTarget`), the interface
every backend is written against.
"""
from __future__ import annotations

from typing import Any, Callable


def libtriton():
    """Triton's C++ bindings (`triton._C.libtriton`): `ir`, `passes`."""
    from triton._C import libtriton as bindings
    return bindings


def reads_default_backend() -> bool:
    """Whether Triton creates its driver from TRITON_DEFAULT_BACKEND (3.7 on;
    3.6 refuses a second active driver): read from its driver factory."""
    import importlib
    module = importlib.import_module("triton.runtime.driver")   # (`triton.runtime.driver` is its config)
    return "TRITON_DEFAULT_BACKEND" in module._create_driver.__code__.co_consts


def active_driver():
    """Triton's active driver as set (None: Triton's default, not made yet)."""
    from triton.runtime import driver as config
    return config._active


def set_active_driver(driver) -> None:
    """Make `driver` Triton's active driver (None: Triton's default)."""
    from triton.runtime import driver as config
    config.set_active(driver)


def wrap_specialization(wrap: Callable[[Callable], Callable]) -> bool:
    """Replace Triton's specialization of one launch argument
    (`triton.runtime.jit.native_specialize_impl`, looked up when a kernel's
    binder runs) by `wrap(native)`, once; False where this Triton has none."""
    import triton.runtime.jit as jit
    native = getattr(jit, "native_specialize_impl", None)
    if native is None or getattr(native, "_edsl_wrapped", False):
        return False
    specialize = wrap(native)
    specialize._edsl_wrapped = True
    specialize.native = native
    jit.native_specialize_impl = specialize
    return True


def descriptor_expansion() -> tuple[Callable, Callable] | None:
    """Triton's host-side tensor-descriptor decomposition, `(expand_signature,
    decompose_descriptor)`; None before Triton 3.7, which has none."""
    try:
        from triton.backends.driver import decompose_descriptor, expand_signature
    except ImportError:
        return None
    return expand_signature, decompose_descriptor


def jit_function_class() -> type:
    """The class of a `@triton.jit` kernel."""
    from triton.runtime.jit import JITFunction
    return JITFunction


def jit_callable_class() -> type | None:
    """`triton.runtime.jit.JITCallable`, whose instances a kernel's cache key
    hashes; None where Triton has none."""
    try:
        from triton.runtime.jit import JITCallable
    except ImportError:
        return None
    return JITCallable


def compile_kernel(fn, signature: dict, constexprs: dict, target, options: dict):
    """`triton.compile` of the kernel `fn` for a signature, without a launch
    (`triton.compiler.ASTSource`)."""
    import triton
    from triton.compiler import ASTSource
    return triton.compile(ASTSource(fn, signature, constexprs), target=target, options=options)


def compilation_error_class() -> type:
    """The exception Triton's front end raises for a kernel it cannot compile."""
    from triton.compiler.errors import CompilationError
    return CompilationError


def stages_hook() -> Any:
    """Triton's hook over a compilation's stages (`knobs.runtime.add_stages_inspection_hook`)."""
    from triton import knobs
    return knobs.runtime.add_stages_inspection_hook


def set_stages_hook(hook) -> None:
    from triton import knobs
    knobs.runtime.add_stages_inspection_hook = hook


# An attribute a module may not have (no dialect prefix): a module carrying it
# fails to verify, which makes MLIR's printer write the generic form.
GENERIC_MARK = "edsl_print_generic_form"


def generic_form(mod) -> str:
    """A TTIR module (`ir.module`) printed in MLIR's generic form. Triton's
    `module.str()` prints with fixed flags (its bindings set no printing
    option); MLIR's printer falls back to the generic form for an op that
    fails to verify, so the module is marked with `GENERIC_MARK` first, and
    the mark is left out of the text. The module keeps the mark."""
    ir = libtriton().ir
    mod.set_attr(GENERIC_MARK, ir.builder(mod.context).get_unit_attr())
    text = mod.str()
    for marked, plain in (("{" + GENERIC_MARK + "}", ""), (GENERIC_MARK + ", ", ""),
                          (", " + GENERIC_MARK + "}", "}")):
        text = text.replace(marked, plain)
    return text


def parse_ttir(text: str):
    """Triton's module of a TTIR text, read by Triton's own parser with
    Triton's dialects loaded; its context held by `module.context`, as
    Triton's front end holds it."""
    import os
    import tempfile
    ir = libtriton().ir
    ctx = ir.context()
    ir.load_dialects(ctx)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "kernel.ttir")
        with open(path, "w") as f:
            f.write(text)
        mod = ir.parse_mlir_module(path, ctx)
    mod.context = ctx
    return mod


def op_enums() -> dict:
    """Triton's enum properties of its ops, which the generic form prints as
    integers: property name -> Triton's Python enum of the values."""
    ir = libtriton().ir
    return {"atomic_rmw_op": ir.ATOMIC_OP, "sem": ir.MEM_SEMANTIC, "scope": ir.MEM_SYNC_SCOPE,
            "cache": ir.CACHE_MODIFIER, "evict": ir.EVICTION_POLICY, "padding": ir.PADDING_OPTION,
            "rounding": ir.ROUNDING_MODE, "inputPrecision": ir.INPUT_PRECISION,
            "propagateNan": ir.PROPAGATE_NAN, "a_elem_type": ir.ScaleDotElemTypeTY,
            "b_elem_type": ir.ScaleDotElemTypeTY}
