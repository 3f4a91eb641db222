  // Barrier waits on Linux: sleep on the generation word's futex until it may
  // differ from `gen32`, re-checking the DPU's state every ${wait_ns} ns.
  llvm.func @syscall(i64, ...) -> i64

  func.func private @__dpu_wait(%gen_p: !llvm.ptr, %gen32: i32) {
    %c0 = arith.constant 0 : i64
    %one32 = arith.constant 1 : i32
    %ts = llvm.alloca %one32 x !llvm.array<2 x i64> : (i32) -> !llvm.ptr
    %ts_s = llvm.getelementptr %ts[0] : (!llvm.ptr) -> !llvm.ptr, i64
    llvm.store %c0, %ts_s : i64, !llvm.ptr
    %ts_n = llvm.getelementptr %ts[1] : (!llvm.ptr) -> !llvm.ptr, i64
    %wait_ns = arith.constant ${wait_ns} : i64
    llvm.store %wait_ns, %ts_n : i64, !llvm.ptr
    %nr = arith.constant ${futex} : i64
    %wop = arith.constant ${futex_wait_private} : i32
    %w = llvm.call @syscall(%nr, %gen_p, %wop, %gen32, %ts) vararg(!llvm.func<i64 (i64, ...)>) : (i64, !llvm.ptr, i32, i32, !llvm.ptr) -> i64
    return
  }

  func.func private @__dpu_wake(%gen_p: !llvm.ptr) {
    %nr = arith.constant ${futex} : i64
    %wake = arith.constant ${futex_wake_private} : i32
    %all = arith.constant 2147483647 : i32
    %woken = llvm.call @syscall(%nr, %gen_p, %wake, %all) vararg(!llvm.func<i64 (i64, ...)>) : (i64, !llvm.ptr, i32, i32) -> i64
    return
  }
