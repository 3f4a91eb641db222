  // Switching between tasklets: the C library's _setjmp and _longjmp, which
  // leave the signal mask alone (where LLVM has no lightweight setjmp of its
  // own for the host: runtime_switch_llvm.mlir). (Declared in
  // runtime_tasklets.mlir, which the scheduler's own jumps use.)

  // Save the running tasklet's place in jump buffer `jb` and run tasklet
  // `next` (`__dpu_sched_resume`); returns when the tasklet is jumped back to.
  func.func private @__dpu_switch_away(%jb: !llvm.ptr, %s: !llvm.ptr, %next: i64) {
    %zero = arith.constant 0 : i32
    %r = llvm.call @_setjmp(%jb) : (!llvm.ptr) -> i32
    %leaving = arith.cmpi eq, %r, %zero : i32
    scf.if %leaving {
      func.call @__dpu_sched_resume(%s, %next) : (!llvm.ptr, i64) -> ()
    }
    return
  }

  // Jump back into a tasklet saved by `__dpu_switch_away` (does not return).
  func.func private @__dpu_switch_into(%jb: !llvm.ptr) {
    %one = arith.constant 1 : i32
    llvm.call @_longjmp(%jb, %one) : (!llvm.ptr, i32) -> ()
    return
  }
