// The runtime of spilled tiles (edsl.backend.convert.spill), added to modules
// that have some: a counted transfer, a window's line swap and its write-back.
// The swap and the write-back are calls, not inlined at each of a kernel's
// element accesses (a window miss costs a transfer anyway): a spilled
// kernel's hundreds of accesses compiled 7x faster.
  llvm.func @${count_transfer}(!llvm.ptr, i64) attributes {sym_visibility = "private"}

  func.func private @${spill_dma}(%mram: i64, %wram: i64, %n: i64, %dir: i64, %site: i64, %ctx: !llvm.ptr) {
    llvm.call @${dma}(%mram, %wram, %n, %dir, %site, %ctx) : (i64, i64, i64, i64, i64, !llvm.ptr) -> ()
    %c2 = arith.constant 2 : i64
    %first = arith.constant ${spill_reads} : i64
    %k = arith.muli %dir, %c2 : i64
    %slot = arith.addi %first, %k : i64
    %pc = llvm.getelementptr %ctx[%slot] : (!llvm.ptr, i64) -> !llvm.ptr, i64
    llvm.call @${count_transfer}(%pc, %n) : (!llvm.ptr, i64) -> ()
    return
  }

  func.func private @__dpu_spill_line(%base: i64, %line: i64, %segs: i64, %unit: i64, %seg: i64,
                                      %total: i64) -> (i64, i64) {
    %u = arith.divui %line, %segs : i64
    %s = arith.remui %line, %segs : i64
    %ustart = arith.muli %u, %unit : i64
    %soff = arith.muli %s, %seg : i64
    %start = arith.addi %ustart, %soff : i64
    %uend0 = arith.addi %ustart, %unit : i64
    %uend = arith.minui %uend0, %total : i64
    %left = arith.subi %uend, %start : i64
    %n = arith.minui %seg, %left : i64
    %addr = arith.addi %base, %start : i64
    return %addr, %n : i64, i64
  }

  func.func private @${swap}(%base: i64, %state: i64, %data: i64, %line: i64, %segs: i64, %unit: i64,
                              %seg: i64, %total: i64, %site: i64, %ctx: !llvm.ptr)
      attributes {passthrough = ["noinline"]} {
    %c1 = arith.constant 1 : i64
    %rd = arith.constant ${read} : i64
    %sp = llvm.inttoptr %state : i64 to !llvm.ptr
    func.call @${flush}(%base, %state, %data, %segs, %unit, %seg, %total, %site, %ctx)
        : (i64, i64, i64, i64, i64, i64, i64, i64, !llvm.ptr) -> ()
    %a, %n = func.call @__dpu_spill_line(%base, %line, %segs, %unit, %seg, %total)
        : (i64, i64, i64, i64, i64, i64) -> (i64, i64)
    func.call @${spill_dma}(%a, %data, %n, %rd, %site, %ctx) : (i64, i64, i64, i64, i64, !llvm.ptr) -> ()
    %want = arith.addi %line, %c1 : i64
    llvm.store %want, %sp : i64, !llvm.ptr
    return
  }

  func.func private @${flush}(%base: i64, %state: i64, %data: i64, %segs: i64, %unit: i64, %seg: i64,
                               %total: i64, %site: i64, %ctx: !llvm.ptr) attributes {passthrough = ["noinline"]} {
    %c0 = arith.constant 0 : i64
    %c1 = arith.constant 1 : i64
    %wr = arith.constant ${write} : i64
    %sp = llvm.inttoptr %state : i64 to !llvm.ptr
    %tag = llvm.load %sp : !llvm.ptr -> i64
    %dp = llvm.getelementptr %sp[1] : (!llvm.ptr) -> !llvm.ptr, i64
    %dirty = llvm.load %dp : !llvm.ptr -> i64
    %has = arith.cmpi ne, %tag, %c0 : i64
    %changed = arith.cmpi ne, %dirty, %c0 : i64
    %back = arith.andi %has, %changed : i1
    scf.if %back {
      %old = arith.subi %tag, %c1 : i64
      %a, %n = func.call @__dpu_spill_line(%base, %old, %segs, %unit, %seg, %total)
          : (i64, i64, i64, i64, i64, i64) -> (i64, i64)
      func.call @${spill_dma}(%a, %data, %n, %wr, %site, %ctx) : (i64, i64, i64, i64, i64, !llvm.ptr) -> ()
    }
    llvm.store %c0, %sp : i64, !llvm.ptr
    llvm.store %c0, %dp : i64, !llvm.ptr
    return
  }
