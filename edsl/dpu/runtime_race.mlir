  // The check of races between a DPU's tasklets (edsl.dpu.races): an EDSL
  // access of `n` bytes at `addr` (kind: an `Access` code, RACE_MRAM set for
  // MRAM) is appended to the tasklet's race log (Ctx.RACE; 0: the launch
  // does not check) with the DPU's barrier generation; the host reads the
  // logs after the launch.
  func.func @${race_note}(%kind: i64, %addr: i64, %n: i64, %site: i64) {
    %ctx = func.call @${ctx}() : () -> !llvm.ptr
    %c0 = arith.constant 0 : i64
    %p = llvm.getelementptr %ctx[${ctx_race}] : (!llvm.ptr) -> !llvm.ptr, i64
    %log_i = llvm.load %p : !llvm.ptr -> i64
    %on = arith.cmpi ne, %log_i, %c0 : i64
    scf.if %on {
      %log = llvm.inttoptr %log_i : i64 to !llvm.ptr
      %st = func.call @__dpu_state(%ctx) : (!llvm.ptr) -> !llvm.ptr
      %gen_p = llvm.getelementptr %st[${dpu_generation}] : (!llvm.ptr) -> !llvm.ptr, i64
      %gen = llvm.load %gen_p atomic monotonic {alignment = 8 : i64} : !llvm.ptr -> i64
      func.call @__dpu_race_log(%log, %kind, %addr, %n, %site, %gen)
          : (!llvm.ptr, i64, i64, i64, i64, i64) -> ()
    }
    return
  }

  // One more entry in the race log `log`, its buffer grown to twice its
  // entries when full (the host frees it); past its largest size, counted
  // as dropped (the host refuses to check).
  func.func private @__dpu_race_log(%log: !llvm.ptr, %kind: i64, %addr: i64, %n: i64, %site: i64,
                                    %gen: i64) attributes {passthrough = ["noinline"]} {
    %c1 = arith.constant 1 : i64
    %len_p = llvm.getelementptr %log[${race_len}] : (!llvm.ptr) -> !llvm.ptr, i64
    %cap_p = llvm.getelementptr %log[${race_cap}] : (!llvm.ptr) -> !llvm.ptr, i64
    %len = llvm.load %len_p : !llvm.ptr -> i64
    %cap = llvm.load %cap_p : !llvm.ptr -> i64
    %full = arith.cmpi sge, %len, %cap : i64
    %most = arith.constant ${race_log_max_entries} : i64
    %at_most = arith.cmpi sge, %cap, %most : i64
    %drop = arith.andi %full, %at_most : i1
    scf.if %drop {
      %dropped_p = llvm.getelementptr %log[${race_dropped}] : (!llvm.ptr) -> !llvm.ptr, i64
      %dropped = llvm.load %dropped_p : !llvm.ptr -> i64
      %dropped2 = arith.addi %dropped, %c1 : i64
      llvm.store %dropped2, %dropped_p : i64, !llvm.ptr
    } else {
      func.call @__dpu_race_append(%log, %kind, %addr, %n, %site, %gen, %full)
          : (!llvm.ptr, i64, i64, i64, i64, i64, i1) -> ()
    }
    return
  }

  // The entry appended, the buffer grown first where `full`.
  func.func private @__dpu_race_append(%log: !llvm.ptr, %kind: i64, %addr: i64, %n: i64, %site: i64,
                                       %gen: i64, %full: i1) {
    %c1 = arith.constant 1 : i64
    %c2 = arith.constant 2 : i64
    %width = arith.constant ${race_entry} : i64
    %bytes = arith.constant ${race_entry_bytes} : i64
    %len_p = llvm.getelementptr %log[${race_len}] : (!llvm.ptr) -> !llvm.ptr, i64
    %cap_p = llvm.getelementptr %log[${race_cap}] : (!llvm.ptr) -> !llvm.ptr, i64
    %buf_p = llvm.getelementptr %log[${race_entries}] : (!llvm.ptr) -> !llvm.ptr, i64
    %len = llvm.load %len_p : !llvm.ptr -> i64
    %cap = llvm.load %cap_p : !llvm.ptr -> i64
    scf.if %full {
      %old_i = llvm.load %buf_p : !llvm.ptr -> i64
      %old = llvm.inttoptr %old_i : i64 to !llvm.ptr
      %cap2 = arith.muli %cap, %c2 : i64
      %size = arith.muli %cap2, %bytes : i64
      %grown = llvm.call @realloc(%old, %size) : (!llvm.ptr, i64) -> !llvm.ptr
      %grown_i = llvm.ptrtoint %grown : !llvm.ptr to i64
      llvm.store %grown_i, %buf_p : i64, !llvm.ptr
      llvm.store %cap2, %cap_p : i64, !llvm.ptr
    }
    %buf_i = llvm.load %buf_p : !llvm.ptr -> i64
    %buf = llvm.inttoptr %buf_i : i64 to !llvm.ptr
    %off = arith.muli %len, %width : i64
    %f = llvm.getelementptr %buf[%off] : (!llvm.ptr, i64) -> !llvm.ptr, i64
    llvm.store %kind, %f : i64, !llvm.ptr
    %f1 = llvm.getelementptr %f[1] : (!llvm.ptr) -> !llvm.ptr, i64
    llvm.store %addr, %f1 : i64, !llvm.ptr
    %end = arith.addi %addr, %n : i64
    %f2 = llvm.getelementptr %f[2] : (!llvm.ptr) -> !llvm.ptr, i64
    llvm.store %end, %f2 : i64, !llvm.ptr
    %f3 = llvm.getelementptr %f[3] : (!llvm.ptr) -> !llvm.ptr, i64
    llvm.store %site, %f3 : i64, !llvm.ptr
    %f4 = llvm.getelementptr %f[4] : (!llvm.ptr) -> !llvm.ptr, i64
    llvm.store %gen, %f4 : i64, !llvm.ptr
    %len2 = arith.addi %len, %c1 : i64
    llvm.store %len2, %len_p : i64, !llvm.ptr
    return
  }
