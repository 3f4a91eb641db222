"""The walk of one TTIR function: each op lowered by the lowering pattern
registered for its name (`core.LOWERINGS`, filled by the family modules),
which works through the conversion's services (`services`): `sites`,
`tasklets`, `buffers` and `values`."""
from __future__ import annotations

from mlir import ir
from mlir.dialects import arith

from ..ttir_reader import user_location
from .barriers import AccessRecord
from .core import LOWERINGS, KernelInfo
from .services import Buffers, Sites, Tasklets, Values


class Converter:
    """Lowers the ops of one TTIR function into the entry block `entry` of its
    converted counterpart, whose arguments `ctx_arg` (the tasklet's launch
    context), `program_ids`, `num_programs` and `wram` are the DPU entry's."""

    def __init__(self, info: KernelInfo, entry: ir.Block, ctx_arg: ir.Value,
                 program_ids: list[ir.Value], num_programs: list[ir.Value], debug: bool,
                 wram: ir.Value, tasklets: int = 1, module_body=None):
        self.info, self.debug = info, debug
        self.ctx_arg, self.program_ids, self.num_programs = ctx_arg, program_ids, num_programs
        info.tasklets = tasklets
        self.callees: dict = {}            # name -> a function the kernel calls (lowered in place)
        self.calling: list = []            # the callees being lowered, outermost first
        here = user_location(entry.owner.location)     # (the new function has the kernel's location)
        self.sites = Sites(info, here.filename if here is not None else None, module_body)
        # What every op may use (buffers, addresses, ranges) goes before this
        # anchor, at the top of the entry block.
        with ir.InsertionPoint(entry), ir.Location.unknown():
            anchor = arith.constant(ir.IndexType.get(), 0).owner
        at_entry = ir.InsertionPoint(anchor)
        self.tasklets = Tasklets(tasklets, at_entry, ctx_arg, AccessRecord(tasklets))
        self.buffers = Buffers(wram, at_entry, self.tasklets, self.sites, ctx_arg)
        self.values = Values(self.buffers)

    def finish(self) -> None:
        """The step after barrier placement: lay WRAM out."""
        self.buffers.finish(self.info)

    def lower_block(self, block: ir.Block) -> None:
        for op in block.operations:
            self.lower_op(op)

    def is_region_call(self, op) -> bool:
        """A call of an EDSL function (fl.call's region), not of a Triton
        function the kernel calls (lowered in place)."""
        return (op.operation.name == "func.call"
                and ir.FlatSymbolRefAttr(op.attributes["callee"]).value not in self.callees)

    def lower_op(self, op) -> None:
        name = op.operation.name
        pattern = LOWERINGS.get(name)
        if pattern is None:
            if name.startswith(("arith.", "math.")):
                pattern = LOWERINGS["<elementwise>"]
            else:
                raise self.sites.error(op, f"operation '{name}' is not supported by the DPU backend")
        self.sites.location = op.location
        region = self.is_region_call(op)
        self.buffers.wram_only += region
        with op.location, self.tasklets.accesses.op(region=region), self.buffers.spill.scope():
            try:
                pattern.match_and_rewrite(op.operation, self)
            except ValueError as err:       # e.g. an element type with no MRAM layout (fp8)
                raise self.sites.error(op, f"operation '{name}' is not supported by the DPU backend: "
                                           f"{err}") from None
            finally:
                self.buffers.wram_only -= region
