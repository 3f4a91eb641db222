  // Switching between tasklets on x86-64: LLVM's own lightweight setjmp and
  // longjmp (`llvm.eh.sjlj.*`, what clang's __builtin_setjmp lowers to; see
  // LLVM's ExceptionHandling documentation). The caller stores the frame
  // address in the buffer's slot 0 and the stack pointer in slot 2; the
  // intrinsic stores where to resume in slot 1 and treats every register as
  // clobbered, so a switch saves only the three words (libc's _setjmp and
  // _longjmp take about ten times as long). AArch64 has no such lowering
  // (runtime_switch_libc.mlir).

  // Save the running tasklet's place in jump buffer `jb` and run tasklet
  // `next` (`__dpu_sched_resume`); returns when the tasklet is jumped back to.
  func.func private @__dpu_switch_away(%jb: !llvm.ptr, %s: !llvm.ptr, %next: i64) {
    %zero = arith.constant 0 : i32
    %frame = llvm.call_intrinsic "llvm.frameaddress.p0"(%zero) : (i32) -> !llvm.ptr
    llvm.store %frame, %jb : !llvm.ptr, !llvm.ptr
    %sp = llvm.intr.stacksave : !llvm.ptr
    %sp_p = llvm.getelementptr %jb[2] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
    llvm.store %sp, %sp_p : !llvm.ptr, !llvm.ptr
    %r = llvm.call_intrinsic "llvm.eh.sjlj.setjmp"(%jb) : (!llvm.ptr) -> i32
    %leaving = arith.cmpi eq, %r, %zero : i32
    scf.if %leaving {
      func.call @__dpu_sched_resume(%s, %next) : (!llvm.ptr, i64) -> ()
    }
    return
  }

  // Jump back into a tasklet saved by `__dpu_switch_away` (does not return).
  func.func private @__dpu_switch_into(%jb: !llvm.ptr) {
    llvm.call_intrinsic "llvm.eh.sjlj.longjmp"(%jb) : (!llvm.ptr) -> ()
    return
  }
