  // A DPU's tasklets on one host thread: each tasklet runs on a stack of its
  // own, and a tasklet that must wait (a barrier) switches straight to the
  // next one in tasklet order, round-robin; one that ends jumps back to the
  // scheduler. No OS thread switch and no lock: one tasklet runs at a time.
  // A tasklet starts on its stack through libc's ucontext (makecontext /
  // setcontext); after that, a switch saves and restores its place with a
  // setjmp and longjmp that leave the signal mask alone (swapcontext would
  // make a system call for it at every switch): `__dpu_switch_away` and
  // `__dpu_switch_into`, LLVM's on x86-64, libc's elsewhere. A tasklet that
  // ends jumps back to the scheduler with libc's.
  // The scheduler's block (i64 slots, filled by the host: edsl.dpu.runtime)
  // holds the running tasklet, the entry all tasklets run, the scheduler's
  // jump buffer and a row per tasklet (its ucontext and jump buffers, stack,
  // arguments, launch context, flags).
  // Host-only: the exporter never reaches these functions (a DPU's barrier
  // is the SDK's barrier_wait).
  llvm.func @getcontext(!llvm.ptr) -> i32
  llvm.func @makecontext(!llvm.ptr, !llvm.ptr, i32, ...)
  llvm.func @setcontext(!llvm.ptr) -> i32
  llvm.func @_setjmp(!llvm.ptr) -> i32 attributes {passthrough = ["returns_twice"]}
  llvm.func @_longjmp(!llvm.ptr, i32) attributes {passthrough = ["noreturn"]}
${switch_functions}

  // The address in slot `slot` of the i64 slots at `s`.
  func.func private @__dpu_sched_ptr(%s: !llvm.ptr, %slot: i64) -> !llvm.ptr {
    %p = llvm.getelementptr %s[%slot] : (!llvm.ptr, i64) -> !llvm.ptr, i64
    %v = llvm.load %p : !llvm.ptr -> i64
    %r = llvm.inttoptr %v : i64 to !llvm.ptr
    return %r : !llvm.ptr
  }

  // The row of tasklet `t` in the scheduler's block.
  func.func private @__dpu_sched_row(%s: !llvm.ptr, %t: i64) -> !llvm.ptr {
    %header = arith.constant ${s_header} : i64
    %width = arith.constant ${s_row} : i64
    %k = arith.muli %t, %width : i64
    %off = arith.addi %header, %k : i64
    %row = llvm.getelementptr %s[%off] : (!llvm.ptr, i64) -> !llvm.ptr, i64
    return %row : !llvm.ptr
  }

  // The tasklet to run after tasklet `t`: the next one in tasklet order
  // (wrapping around) that has not finished, or `t` itself when there is none.
  func.func private @__dpu_sched_next(%s: !llvm.ptr, %t: i64) -> i64 {
    %c0 = arith.constant 0 : i64
    %c1 = arith.constant 1 : i64
    %n_p = llvm.getelementptr %s[${s_tasklets}] : (!llvm.ptr) -> !llvm.ptr, i64
    %n = llvm.load %n_p : !llvm.ptr -> i64
    %t1 = arith.addi %t, %c1 : i64
    %wrap = arith.cmpi eq, %t1, %n : i64
    %first = arith.select %wrap, %c0, %t1 : i64
    %u = scf.while (%v = %first) : (i64) -> i64 {
      %row = func.call @__dpu_sched_row(%s, %v) : (!llvm.ptr, i64) -> !llvm.ptr
      %done_p = llvm.getelementptr %row[${r_done}] : (!llvm.ptr) -> !llvm.ptr, i64
      %done = llvm.load %done_p : !llvm.ptr -> i64
      %ended = arith.cmpi ne, %done, %c0 : i64
      %other = arith.cmpi ne, %v, %t : i64
      %skip = arith.andi %ended, %other : i1
      scf.condition(%skip) %v : i64
    } do {
    ^bb0(%v: i64):
      %v1 = arith.addi %v, %c1 : i64
      %w = arith.cmpi eq, %v1, %n : i64
      %v2 = arith.select %w, %c0, %v1 : i64
      scf.yield %v2 : i64
    }
    return %u : i64
  }

  // Run tasklet `t` (does not return): start it on its own context, its
  // launch context entered first (the start finds the block through it), or
  // jump back into it where it yielded (it enters its context itself).
  func.func private @__dpu_sched_resume(%s: !llvm.ptr, %t: i64) {
    %c0 = arith.constant 0 : i64
    %c1 = arith.constant 1 : i64
    %cur_p = llvm.getelementptr %s[${s_current}] : (!llvm.ptr) -> !llvm.ptr, i64
    llvm.store %t, %cur_p : i64, !llvm.ptr
    %row = func.call @__dpu_sched_row(%s, %t) : (!llvm.ptr, i64) -> !llvm.ptr
    %started_p = llvm.getelementptr %row[${r_started}] : (!llvm.ptr) -> !llvm.ptr, i64
    %started = llvm.load %started_p : !llvm.ptr -> i64
    %resume = arith.cmpi ne, %started, %c0 : i64
    scf.if %resume {
      %c_jb = arith.constant ${r_jb} : i64
      %jb = func.call @__dpu_sched_ptr(%row, %c_jb) : (!llvm.ptr, i64) -> !llvm.ptr
      func.call @__dpu_switch_into(%jb) : (!llvm.ptr) -> ()
    } else {
      llvm.store %c1, %started_p : i64, !llvm.ptr
      %c_ctx = arith.constant ${r_ctx} : i64
      %ctx = func.call @__dpu_sched_ptr(%row, %c_ctx) : (!llvm.ptr, i64) -> !llvm.ptr
      func.call @${enter}(%ctx) : (!llvm.ptr) -> ()
      %c_uc = arith.constant ${r_uc} : i64
      %uc = func.call @__dpu_sched_ptr(%row, %c_uc) : (!llvm.ptr, i64) -> !llvm.ptr
      %x = llvm.call @setcontext(%uc) : (!llvm.ptr) -> i32
    }
    return
  }

  // The running tasklet (of `ctx`) lets the next one run: it jumps straight
  // to it (one save and one jump a switch, not two of each through the
  // scheduler); when it is resumed, it is the running tasklet again.
  func.func private @__dpu_yield(%s: !llvm.ptr, %ctx: !llvm.ptr) {
    %cur_p = llvm.getelementptr %s[${s_current}] : (!llvm.ptr) -> !llvm.ptr, i64
    %cur = llvm.load %cur_p : !llvm.ptr -> i64
    %next = func.call @__dpu_sched_next(%s, %cur) : (!llvm.ptr, i64) -> i64
    %other = arith.cmpi ne, %next, %cur : i64
    scf.if %other {
      %row = func.call @__dpu_sched_row(%s, %cur) : (!llvm.ptr, i64) -> !llvm.ptr
      %c_jb = arith.constant ${r_jb} : i64
      %jb = func.call @__dpu_sched_ptr(%row, %c_jb) : (!llvm.ptr, i64) -> !llvm.ptr
      func.call @__dpu_switch_away(%jb, %s, %next) : (!llvm.ptr, !llvm.ptr, i64) -> ()
      func.call @${enter}(%ctx) : (!llvm.ptr) -> ()           // (resumed)
    }
    return
  }

  // Where every tasklet's context starts (makecontext passes no arguments:
  // the scheduler is found through the running tasklet's launch context).
  func.func @${start}() {
    %ctx = func.call @${ctx}() : () -> !llvm.ptr
    %st = func.call @__dpu_state(%ctx) : (!llvm.ptr) -> !llvm.ptr
    %c_sched = arith.constant ${dpu_scheduler} : i64
    %s = func.call @__dpu_sched_ptr(%st, %c_sched) : (!llvm.ptr, i64) -> !llvm.ptr
    %cur_p = llvm.getelementptr %s[${s_current}] : (!llvm.ptr) -> !llvm.ptr, i64
    %cur = llvm.load %cur_p : !llvm.ptr -> i64
    %row = func.call @__dpu_sched_row(%s, %cur) : (!llvm.ptr, i64) -> !llvm.ptr
    %c_entry = arith.constant ${s_entry} : i64
    %entry = func.call @__dpu_sched_ptr(%s, %c_entry) : (!llvm.ptr, i64) -> !llvm.ptr
    %c_args = arith.constant ${r_args} : i64
    %args = func.call @__dpu_sched_ptr(%row, %c_args) : (!llvm.ptr, i64) -> !llvm.ptr
    llvm.call %entry(%args) : !llvm.ptr, (!llvm.ptr) -> ()
    // (the entry may have yielded: the running tasklet is this one again)
    %one = arith.constant 1 : i64
    %done_p = llvm.getelementptr %row[${r_done}] : (!llvm.ptr) -> !llvm.ptr, i64
    llvm.store %one, %done_p : i64, !llvm.ptr
    %c_main = arith.constant ${s_main} : i64
    %main = func.call @__dpu_sched_ptr(%s, %c_main) : (!llvm.ptr, i64) -> !llvm.ptr
    %c1 = arith.constant 1 : i32
    llvm.call @_longjmp(%main, %c1) : (!llvm.ptr, i32) -> ()      // (does not return)
    return
  }

  // Run every tasklet of the block `s` to its end on this thread, in turn
  // (tasklet order) until all are done. A tasklet that finishes is marked
  // finished (EXIT) when the block asks, for entries that do not do it
  // themselves.
  func.func @${run_tasklets}(%s: !llvm.ptr) {
    %c0 = arith.constant 0 : i64
    %c1 = arith.constant 1 : i64
    %zero32 = arith.constant 0 : i32
    %n_p = llvm.getelementptr %s[${s_tasklets}] : (!llvm.ptr) -> !llvm.ptr, i64
    %n = llvm.load %n_p : !llvm.ptr -> i64
    %c_start = arith.constant ${s_start} : i64
    %start = func.call @__dpu_sched_ptr(%s, %c_start) : (!llvm.ptr, i64) -> !llvm.ptr
    %c_main = arith.constant ${s_main} : i64
    %main = func.call @__dpu_sched_ptr(%s, %c_main) : (!llvm.ptr, i64) -> !llvm.ptr
    %exit_p = llvm.getelementptr %s[${s_exit}] : (!llvm.ptr) -> !llvm.ptr, i64
    %exit = llvm.load %exit_p : !llvm.ptr -> i64
    %exits = arith.cmpi ne, %exit, %c0 : i64
    %cur_p = llvm.getelementptr %s[${s_current}] : (!llvm.ptr) -> !llvm.ptr, i64
    %c_uc = arith.constant ${r_uc} : i64
    %c_ctx = arith.constant ${r_ctx} : i64
    %null = llvm.mlir.zero : !llvm.ptr
    // Each tasklet's context: its stack, no successor (a tasklet ends by
    // jumping back here).
    scf.for %t = %c0 to %n step %c1 : i64 {
      %row = func.call @__dpu_sched_row(%s, %t) : (!llvm.ptr, i64) -> !llvm.ptr
      %uc = func.call @__dpu_sched_ptr(%row, %c_uc) : (!llvm.ptr, i64) -> !llvm.ptr
      %g = llvm.call @getcontext(%uc) : (!llvm.ptr) -> i32
      %stack_p = llvm.getelementptr %row[${r_stack}] : (!llvm.ptr) -> !llvm.ptr, i64
      %stack = llvm.load %stack_p : !llvm.ptr -> i64
      %size_p = llvm.getelementptr %row[${r_stack_bytes}] : (!llvm.ptr) -> !llvm.ptr, i64
      %size = llvm.load %size_p : !llvm.ptr -> i64
      %uc_sp = llvm.getelementptr %uc[${uc_stack_sp}] : (!llvm.ptr) -> !llvm.ptr, i8
      llvm.store %stack, %uc_sp : i64, !llvm.ptr
      %uc_size = llvm.getelementptr %uc[${uc_stack_size}] : (!llvm.ptr) -> !llvm.ptr, i8
      llvm.store %size, %uc_size : i64, !llvm.ptr
      %uc_link = llvm.getelementptr %uc[${uc_link}] : (!llvm.ptr) -> !llvm.ptr, i8
      llvm.store %null, %uc_link : !llvm.ptr, !llvm.ptr
      llvm.call @makecontext(%uc, %start, %zero32) vararg(!llvm.func<void (ptr, ptr, i32, ...)>)
          : (!llvm.ptr, !llvm.ptr, i32) -> ()
      %done_p = llvm.getelementptr %row[${r_done}] : (!llvm.ptr) -> !llvm.ptr, i64
      llvm.store %c0, %done_p : i64, !llvm.ptr
      %started_p = llvm.getelementptr %row[${r_started}] : (!llvm.ptr) -> !llvm.ptr, i64
      llvm.store %c0, %started_p : i64, !llvm.ptr
    }
    // Start tasklet 0; tasklets then switch among themselves, and one that
    // ends jumps back here: the next one after it runs.
    %all:2 = scf.while (%left = %n, %t = %c0) : (i64, i64) -> (i64, i64) {
      %more = arith.cmpi sgt, %left, %c0 : i64
      scf.condition(%more) %left, %t : i64, i64
    } do {
    ^bb0(%left: i64, %t: i64):
      %r = llvm.call @_setjmp(%main) : (!llvm.ptr) -> i32
      %going = arith.cmpi eq, %r, %zero32 : i32
      scf.if %going {
        func.call @__dpu_sched_resume(%s, %t) : (!llvm.ptr, i64) -> ()
      }
      %ended = llvm.load %cur_p : !llvm.ptr -> i64
      scf.if %exits {
        %row = func.call @__dpu_sched_row(%s, %ended) : (!llvm.ptr, i64) -> !llvm.ptr
        %ctx = func.call @__dpu_sched_ptr(%row, %c_ctx) : (!llvm.ptr, i64) -> !llvm.ptr
        func.call @${exit}(%ctx) : (!llvm.ptr) -> ()
      }
      %l1 = arith.subi %left, %c1 : i64
      %next = func.call @__dpu_sched_next(%s, %ended) : (!llvm.ptr, i64) -> i64
      scf.yield %l1, %next : i64, i64
    }
    return
  }
