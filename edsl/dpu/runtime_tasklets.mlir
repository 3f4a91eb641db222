  // A DPU's tasklets on one host thread: each tasklet runs on a stack of its
  // own, and a tasklet that must wait (a barrier) switches back to the
  // scheduler, which resumes the next one. No OS thread switch and no lock:
  // one tasklet runs at a time. A tasklet starts on its stack through libc's
  // ucontext (makecontext / setcontext); after that, switches save and
  // restore registers with _setjmp / _longjmp, which leave the signal mask
  // alone (swapcontext would make a system call for it at every switch).
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

  // The running tasklet (of `ctx`) gives the thread back to the scheduler;
  // when it is resumed, it is the running tasklet again.
  func.func private @__dpu_yield(%s: !llvm.ptr, %ctx: !llvm.ptr) {
    %cur_p = llvm.getelementptr %s[${s_current}] : (!llvm.ptr) -> !llvm.ptr, i64
    %cur = llvm.load %cur_p : !llvm.ptr -> i64
    %row = func.call @__dpu_sched_row(%s, %cur) : (!llvm.ptr, i64) -> !llvm.ptr
    %c_jb = arith.constant ${r_jb} : i64
    %jb = func.call @__dpu_sched_ptr(%row, %c_jb) : (!llvm.ptr, i64) -> !llvm.ptr
    %c_main = arith.constant ${s_main} : i64
    %main = func.call @__dpu_sched_ptr(%s, %c_main) : (!llvm.ptr, i64) -> !llvm.ptr
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %r = llvm.call @_setjmp(%jb) : (!llvm.ptr) -> i32
    %leaving = arith.cmpi eq, %r, %c0 : i32
    scf.if %leaving {
      llvm.call @_longjmp(%main, %c1) : (!llvm.ptr, i32) -> ()
    }
    func.call @${enter}(%ctx) : (!llvm.ptr) -> ()             // (resumed)
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

  // Run every tasklet of the block `s` to its end on this thread: start or
  // resume them in turn (tasklet order) until all are done. A tasklet that
  // finishes is marked finished (EXIT) when the block asks, for entries
  // that do not do it themselves.
  func.func @${run_tasklets}(%s: !llvm.ptr) {
    %c0 = arith.constant 0 : i64
    %c1 = arith.constant 1 : i64
    %zero32 = arith.constant 0 : i32
    %one32 = arith.constant 1 : i32
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
    %c_jb = arith.constant ${r_jb} : i64
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
    %all = scf.while (%left = %n) : (i64) -> i64 {
      %more = arith.cmpi sgt, %left, %c0 : i64
      scf.condition(%more) %left : i64
    } do {
    ^bb0(%left: i64):
      %after = scf.for %t = %c0 to %n step %c1 iter_args(%l = %left) -> (i64) : i64 {
        %row = func.call @__dpu_sched_row(%s, %t) : (!llvm.ptr, i64) -> !llvm.ptr
        %done_p = llvm.getelementptr %row[${r_done}] : (!llvm.ptr) -> !llvm.ptr, i64
        %done = llvm.load %done_p : !llvm.ptr -> i64
        %runs = arith.cmpi eq, %done, %c0 : i64
        %l2 = scf.if %runs -> (i64) {
          llvm.store %t, %cur_p : i64, !llvm.ptr
          %ctx = func.call @__dpu_sched_ptr(%row, %c_ctx) : (!llvm.ptr, i64) -> !llvm.ptr
          func.call @${enter}(%ctx) : (!llvm.ptr) -> ()
          // Run tasklet t until it yields or ends (it jumps back here).
          %r = llvm.call @_setjmp(%main) : (!llvm.ptr) -> i32
          %going = arith.cmpi eq, %r, %zero32 : i32
          scf.if %going {
            %started_p = llvm.getelementptr %row[${r_started}] : (!llvm.ptr) -> !llvm.ptr, i64
            %started = llvm.load %started_p : !llvm.ptr -> i64
            %resume = arith.cmpi ne, %started, %c0 : i64
            scf.if %resume {
              %jb = func.call @__dpu_sched_ptr(%row, %c_jb) : (!llvm.ptr, i64) -> !llvm.ptr
              llvm.call @_longjmp(%jb, %one32) : (!llvm.ptr, i32) -> ()
            } else {
              llvm.store %c1, %started_p : i64, !llvm.ptr
              %uc = func.call @__dpu_sched_ptr(%row, %c_uc) : (!llvm.ptr, i64) -> !llvm.ptr
              %x = llvm.call @setcontext(%uc) : (!llvm.ptr) -> i32
            }
          }
          %now = llvm.load %done_p : !llvm.ptr -> i64
          %ended = arith.cmpi ne, %now, %c0 : i64
          %l3 = scf.if %ended -> (i64) {
            scf.if %exits {
              func.call @${exit}(%ctx) : (!llvm.ptr) -> ()
            }
            %l4 = arith.subi %l, %c1 : i64
            scf.yield %l4 : i64
          } else {
            scf.yield %l : i64
          }
          scf.yield %l3 : i64
        } else {
          scf.yield %l : i64
        }
        scf.yield %l2 : i64
      }
      scf.yield %after : i64
    }
    return
  }
