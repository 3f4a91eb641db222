// The DPU runtime library: the code behind the runtime symbols of the DPU ABI
// (edsl/target/dpu.py), linked into every program the DPU model runs and printed
// into exported DPU programs. Its placeholders are filled from the ABI by
// edsl/dpu/support.py (symbols, context and DPU-state slots, error codes),
// with the DMA-rule check generated from `abi.DMA_RULES`, the host's way
// to sleep in a barrier (runtime_wait_*.mlir) and the scheduler that runs a
// DPU's tasklets on one host thread (runtime_tasklets*.mlir).
module {
  llvm.mlir.global external @${ctx_key}(0 : ${key_t}) {alignment = 8 : i64} : ${key_t}
  llvm.func @pthread_getspecific(${key_t}) -> !llvm.ptr
  llvm.func @pthread_setspecific(${key_t}, !llvm.ptr) -> i32
  llvm.func @realloc(!llvm.ptr, i64) -> !llvm.ptr

  // The running tasklet's context: a thread-local on a key the loader sets
  // (set by `enter`, and by the scheduler for each tasklet it resumes).
  func.func @${ctx}() -> !llvm.ptr {
    %kp = llvm.mlir.addressof @${ctx_key} : !llvm.ptr
    %k = llvm.load %kp : !llvm.ptr -> ${key_t}
    %ctx = llvm.call @pthread_getspecific(%k) : (${key_t}) -> !llvm.ptr
    return %ctx : !llvm.ptr
  }

  func.func @${enter}(%ctx: !llvm.ptr) {
    %kp = llvm.mlir.addressof @${ctx_key} : !llvm.ptr
    %k = llvm.load %kp : !llvm.ptr -> ${key_t}
    %r = llvm.call @pthread_setspecific(%k, %ctx) : (${key_t}, !llvm.ptr) -> i32
    return
  }

  // The first error of the tasklet's DPU, with what the tasklet was doing; the
  // DPU stops. An error once the DPU has stopped is not recorded: it follows
  // from the first (a deadlock of tasklets that gave up waiting at a barrier,
  // a check on data a refused transfer left), which stays the DPU's, in the
  // context of the tasklet that met it. (Tasklets that fail at once each keep
  // theirs: the host reads the first tasklet's.)
  // (Not inlined, as `save_pages` and `__dpu_in_regions`: a call at each of
  // a kernel's transfers compiles much faster than a copy of the code.)
  func.func @${fail}(%ctx: !llvm.ptr, %code: i64, %site: i64, %mram: i64, %wram: i64,
                     %n: i64, %dir: i64) attributes {passthrough = ["noinline"]} {
    %c0 = arith.constant 0 : i64
    %c1 = arith.constant 1 : i64
    %false = arith.constant false
    %st = func.call @__dpu_state(%ctx) : (!llvm.ptr) -> !llvm.ptr
    %null = llvm.mlir.zero : !llvm.ptr
    %has = llvm.icmp "ne" %st, %null : !llvm.ptr
    %stopped = scf.if %has -> (i1) {
      %s = func.call @${failed}(%ctx) : (!llvm.ptr) -> i1
      scf.yield %s : i1
    } else {
      scf.yield %false : i1
    }
    %e_p = llvm.getelementptr %ctx[${ctx_error}] : (!llvm.ptr) -> !llvm.ptr, i64
    %e = llvm.load %e_p : !llvm.ptr -> i64
    %none = arith.cmpi eq, %e, %c0 : i64
    %running = arith.cmpi eq, %stopped, %false : i1
    %first = arith.andi %none, %running : i1
    scf.if %first {
      llvm.store %code, %e_p : i64, !llvm.ptr
      %es = llvm.getelementptr %ctx[${ctx_err_site}] : (!llvm.ptr) -> !llvm.ptr, i64
      llvm.store %site, %es : i64, !llvm.ptr
      %em = llvm.getelementptr %ctx[${ctx_err_mram}] : (!llvm.ptr) -> !llvm.ptr, i64
      llvm.store %mram, %em : i64, !llvm.ptr
      %ew = llvm.getelementptr %ctx[${ctx_err_wram}] : (!llvm.ptr) -> !llvm.ptr, i64
      llvm.store %wram, %ew : i64, !llvm.ptr
      %en = llvm.getelementptr %ctx[${ctx_err_bytes}] : (!llvm.ptr) -> !llvm.ptr, i64
      llvm.store %n, %en : i64, !llvm.ptr
      %ed = llvm.getelementptr %ctx[${ctx_err_dir}] : (!llvm.ptr) -> !llvm.ptr, i64
      llvm.store %dir, %ed : i64, !llvm.ptr
    }
    scf.if %has {
      %f = llvm.getelementptr %st[${dpu_failed}] : (!llvm.ptr) -> !llvm.ptr, i64
      llvm.store %c1, %f atomic release {alignment = 8 : i64} : i64, !llvm.ptr
    }
    return
  }

  // A failure at `site` of the running tasklet, without transfer operands.
  func.func private @__dpu_fail_at(%code: i64, %site: i64) {
    %ctx = func.call @${ctx}() : () -> !llvm.ptr
    %c0 = arith.constant 0 : i64
    func.call @${fail}(%ctx, %code, %site, %c0, %c0, %c0, %c0)
        : (!llvm.ptr, i64, i64, i64, i64, i64, i64) -> ()
    return
  }

  // The state the tasklets of the context's DPU share (null outside a launch).
  func.func private @__dpu_state(%ctx: !llvm.ptr) -> !llvm.ptr {
    %p = llvm.getelementptr %ctx[${ctx_dpu}] : (!llvm.ptr) -> !llvm.ptr, i64
    %st = llvm.load %p : !llvm.ptr -> !llvm.ptr
    return %st : !llvm.ptr
  }

  func.func @${failed}(%ctx: !llvm.ptr) -> i1 {
    %c0 = arith.constant 0 : i64
    %st = func.call @__dpu_state(%ctx) : (!llvm.ptr) -> !llvm.ptr
    %f = llvm.getelementptr %st[${dpu_failed}] : (!llvm.ptr) -> !llvm.ptr, i64
    %v = llvm.load %f atomic acquire {alignment = 8 : i64} : !llvm.ptr -> i64
    %failed = arith.cmpi ne, %v, %c0 : i64
    return %failed : i1
  }

  // The copies of a transfer: the exporter maps them to the SDK's mram_read / mram_write.
  // On the model, MRAM address a is the host's byte a - ${mram_shift} (support.link).
  func.func private @__dpu_host(%mram: !llvm.ptr) -> !llvm.ptr {
    %a = llvm.ptrtoint %mram : !llvm.ptr to i64
    %shift = arith.constant ${mram_shift} : i64
    %h = arith.subi %a, %shift : i64
    %p = llvm.inttoptr %h : i64 to !llvm.ptr
    return %p : !llvm.ptr
  }

  func.func @${copy_from_mram}(%wram: !llvm.ptr, %mram: !llvm.ptr, %n: i64) {
    %host = func.call @__dpu_host(%mram) : (!llvm.ptr) -> !llvm.ptr
    func.call @__dpu_copy(%wram, %host, %n) : (!llvm.ptr, !llvm.ptr, i64) -> ()
    return
  }

  func.func @${copy_to_mram}(%mram: !llvm.ptr, %wram: !llvm.ptr, %n: i64) {
    %host = func.call @__dpu_host(%mram) : (!llvm.ptr) -> !llvm.ptr
    func.call @__dpu_copy(%host, %wram, %n) : (!llvm.ptr, !llvm.ptr, i64) -> ()
    return
  }

  // memcpy of a transfer's `n` bytes (whole 8-byte words: the DMA rules
  // hold before any copy), inline: 64 bytes a step, then the rest by 32, 16
  // and 8 bytes as its bits say. A DMA is at most 2,048 bytes, where a call
  // of libc's memcpy costs as much as the copy. One loop only: inlined at
  // each of a kernel's transfers, loops for the rest gave LLVM's loop
  // passes many loops to vectorize, most of a kernel's compile time.
  func.func private @__dpu_copy(%dst: !llvm.ptr, %src: !llvm.ptr, %n: i64) {
    %c0 = arith.constant 0 : i64
    %c_64 = arith.constant -64 : i64
    %c64 = arith.constant 64 : i64
    %n64 = arith.andi %n, %c_64 : i64
    scf.for %i = %c0 to %n64 step %c64 : i64 {
      %d = llvm.getelementptr %dst[%i] : (!llvm.ptr, i64) -> !llvm.ptr, i8
      %s = llvm.getelementptr %src[%i] : (!llvm.ptr, i64) -> !llvm.ptr, i8
      "llvm.intr.memcpy.inline"(%d, %s) <{len = 64 : i64, isVolatile = false}> : (!llvm.ptr, !llvm.ptr) -> ()
    }
    %bit32 = arith.constant 32 : i64
    %has32 = arith.andi %n, %bit32 : i64
    %on32 = arith.cmpi ne, %has32, %c0 : i64
    scf.if %on32 {
      %above32 = arith.constant -64 : i64
      %at32 = arith.andi %n, %above32 : i64
      %d32 = llvm.getelementptr %dst[%at32] : (!llvm.ptr, i64) -> !llvm.ptr, i8
      %s32 = llvm.getelementptr %src[%at32] : (!llvm.ptr, i64) -> !llvm.ptr, i8
      "llvm.intr.memcpy.inline"(%d32, %s32) <{len = 32 : i64, isVolatile = false}> : (!llvm.ptr, !llvm.ptr) -> ()
    }
    %bit16 = arith.constant 16 : i64
    %has16 = arith.andi %n, %bit16 : i64
    %on16 = arith.cmpi ne, %has16, %c0 : i64
    scf.if %on16 {
      %above16 = arith.constant -32 : i64
      %at16 = arith.andi %n, %above16 : i64
      %d16 = llvm.getelementptr %dst[%at16] : (!llvm.ptr, i64) -> !llvm.ptr, i8
      %s16 = llvm.getelementptr %src[%at16] : (!llvm.ptr, i64) -> !llvm.ptr, i8
      "llvm.intr.memcpy.inline"(%d16, %s16) <{len = 16 : i64, isVolatile = false}> : (!llvm.ptr, !llvm.ptr) -> ()
    }
    %bit8 = arith.constant 8 : i64
    %has8 = arith.andi %n, %bit8 : i64
    %on8 = arith.cmpi ne, %has8, %c0 : i64
    scf.if %on8 {
      %above8 = arith.constant -16 : i64
      %at8 = arith.andi %n, %above8 : i64
      %d8 = llvm.getelementptr %dst[%at8] : (!llvm.ptr, i64) -> !llvm.ptr, i8
      %s8 = llvm.getelementptr %src[%at8] : (!llvm.ptr, i64) -> !llvm.ptr, i8
      "llvm.intr.memcpy.inline"(%d8, %s8) <{len = 8 : i64, isVolatile = false}> : (!llvm.ptr, !llvm.ptr) -> ()
    }
    return
  }

  // The model: before a transfer writes MRAM [mram, mram + n), each page of
  // the launch's written arrays that it touches is saved as transferred,
  // once, so that the host can put back what a launch wrote. (Copied here,
  // only the pages written are, by the DPUs' own threads, while the DPUs
  // run.) The save table (Ctx.SAVE, 0: none; abi.PAGE_BYTES) holds [spans,
  // mixed, epoch, then lo, hi, states, copy per span]; page k of a span is
  // its bytes from lo + k * PAGE_BYTES. A DPU has nothing to save: the
  // exporter prints no call.
  func.func @${save_pages}(%mram: i64, %n: i64, %ctx: !llvm.ptr)
      attributes {passthrough = ["noinline"]} {
    %c0 = arith.constant 0 : i64
    %c1 = arith.constant 1 : i64
    %row = arith.constant ${save_row} : i64
    %first_row = arith.constant ${save_spans} : i64
    %shift = arith.constant ${page_shift} : i64
    %table_p = llvm.getelementptr %ctx[${ctx_save}] : (!llvm.ptr) -> !llvm.ptr, i64
    %table_i = llvm.load %table_p : !llvm.ptr -> i64
    %has = arith.cmpi ne, %table_i, %c0 : i64
    scf.if %has {
      %table = llvm.inttoptr %table_i : i64 to !llvm.ptr
      %spans_p = llvm.getelementptr %table[${save_count}] : (!llvm.ptr) -> !llvm.ptr, i64
      %spans = llvm.load %spans_p : !llvm.ptr -> i64
      // (a page saved by this DPU: SAVED, the DPU's id + 1 above, the epoch above that)
      %epoch_p = llvm.getelementptr %table[${save_epoch}] : (!llvm.ptr) -> !llvm.ptr, i64
      %epoch = llvm.load %epoch_p : !llvm.ptr -> i64
      %epoch_shift = arith.constant ${page_epoch_shift} : i64
      %epoch_bits = arith.shli %epoch, %epoch_shift : i64
      %dpu_p = llvm.getelementptr %ctx[${ctx_dpu_id}] : (!llvm.ptr) -> !llvm.ptr, i64
      %dpu = llvm.load %dpu_p : !llvm.ptr -> i64
      %owner = arith.addi %dpu, %c1 : i64
      %owner_shift = arith.constant ${page_owner_shift} : i64
      %owner_bits = arith.shli %owner, %owner_shift : i64
      %saved = arith.constant ${page_saved} : i64
      %owned = arith.ori %owner_bits, %saved : i64
      %mine = arith.ori %owned, %epoch_bits : i64
      %end = arith.addi %mram, %n : i64
      scf.for %s = %c0 to %spans step %c1 : i64 {
        %at0 = arith.muli %s, %row : i64
        %at = arith.addi %at0, %first_row : i64
        %lo_p = llvm.getelementptr %table[%at] : (!llvm.ptr, i64) -> !llvm.ptr, i64
        %lo = llvm.load %lo_p : !llvm.ptr -> i64
        %hi_p = llvm.getelementptr %lo_p[1] : (!llvm.ptr) -> !llvm.ptr, i64
        %hi = llvm.load %hi_p : !llvm.ptr -> i64
        %a = arith.maxui %mram, %lo : i64
        %b = arith.minui %end, %hi : i64
        %touches = arith.cmpi ult, %a, %b : i64
        scf.if %touches {
          %states_p = llvm.getelementptr %lo_p[2] : (!llvm.ptr) -> !llvm.ptr, i64
          %states_i = llvm.load %states_p : !llvm.ptr -> i64
          %states = llvm.inttoptr %states_i : i64 to !llvm.ptr
          %copy_p = llvm.getelementptr %lo_p[3] : (!llvm.ptr) -> !llvm.ptr, i64
          %copy = llvm.load %copy_p : !llvm.ptr -> i64
          %a_off = arith.subi %a, %lo : i64
          %b_off = arith.subi %b, %lo : i64
          %last = arith.subi %b_off, %c1 : i64
          %from = arith.shrui %a_off, %shift : i64
          %to0 = arith.shrui %last, %shift : i64
          %to = arith.addi %to0, %c1 : i64
          scf.for %k = %from to %to step %c1 : i64 {
            func.call @__dpu_save_page(%states, %copy, %lo, %hi, %k, %mine, %epoch, %table)
                : (!llvm.ptr, i64, i64, i64, i64, i64, i64, !llvm.ptr) -> ()
          }
        }
      }
    }
    return
  }

  // Page k of the span [lo, hi): saved into `copy` (the span's bytes from lo)
  // by the writer that claims it (its state of an earlier epoch than
  // `epoch`: CLEAN), the page then `mine` (SAVED, its DPU, the epoch); any
  // other writer waits until it is (a copy of at most a page, made without a
  // switch), and sets the save table's `mixed` if it is another DPU's.
  func.func private @__dpu_save_page(%states: !llvm.ptr, %copy: i64, %lo: i64, %hi: i64, %k: i64,
                                     %mine: i64, %epoch: i64, %table: !llvm.ptr) {
    %saving = arith.constant ${page_saving} : i64
    %saved = arith.constant ${page_saved} : i64
    %state_mask = arith.constant ${page_state_mask} : i64
    %shift = arith.constant ${page_shift} : i64
    %page = arith.constant ${page_bytes} : i64
    %epoch_shift = arith.constant ${page_epoch_shift} : i64
    %p = llvm.getelementptr %states[%k] : (!llvm.ptr, i64) -> !llvm.ptr, i64
    %state = llvm.load %p atomic acquire {alignment = 8 : i64} : !llvm.ptr -> i64
    %not_mine = arith.cmpi ne, %state, %mine : i64
    scf.if %not_mine {
      %state_epoch = arith.shrui %state, %epoch_shift : i64
      %clean = arith.cmpi ne, %state_epoch, %epoch : i64
      %won = scf.if %clean -> (i1) {
        %epoch_bits = arith.shli %epoch, %epoch_shift : i64
        %claimed = arith.ori %epoch_bits, %saving : i64
        %pair = llvm.cmpxchg %p, %state, %claimed acq_rel acquire : !llvm.ptr, i64
        %got = llvm.extractvalue %pair[1] : !llvm.struct<(i64, i1)>
        scf.yield %got : i1
      } else {
        %no = arith.constant false
        scf.yield %no : i1
      }
      scf.if %won {
        %offset = arith.shli %k, %shift : i64
        %start = arith.addi %lo, %offset : i64
        %stop = arith.addi %start, %page : i64
        %b = arith.minui %stop, %hi : i64
        %bytes = arith.subi %b, %start : i64
        %dst_i = arith.addi %copy, %offset : i64
        %dst = llvm.inttoptr %dst_i : i64 to !llvm.ptr
        %start_p = llvm.inttoptr %start : i64 to !llvm.ptr
        %src = func.call @__dpu_host(%start_p) : (!llvm.ptr) -> !llvm.ptr
        "llvm.intr.memcpy"(%dst, %src, %bytes) <{isVolatile = false}> : (!llvm.ptr, !llvm.ptr, i64) -> ()
        llvm.store %mine, %p atomic release {alignment = 8 : i64} : i64, !llvm.ptr
      } else {
        %final = scf.while : () -> i64 {
          %now = llvm.load %p atomic acquire {alignment = 8 : i64} : !llvm.ptr -> i64
          %now_state = arith.andi %now, %state_mask : i64
          %waiting = arith.cmpi ne, %now_state, %saved : i64
          scf.condition(%waiting) %now : i64
        } do {
        ^bb0(%seen: i64):
          scf.yield
        }
        %other = arith.cmpi ne, %final, %mine : i64
        scf.if %other {
          func.call @__dpu_set_mixed(%table) : (!llvm.ptr) -> ()
        }
      }
    }
    return
  }

  // The save table's `mixed` word (abi.SAVE_MIXED) set: read first, written
  // once (threads that set it again and again would share its cache line).
  func.func private @__dpu_set_mixed(%table: !llvm.ptr) {
    %c0 = arith.constant 0 : i64
    %c1 = arith.constant 1 : i64
    %mixed = llvm.getelementptr %table[${save_mixed}] : (!llvm.ptr) -> !llvm.ptr, i64
    %was = llvm.load %mixed atomic monotonic {alignment = 8 : i64} : !llvm.ptr -> i64
    %unset = arith.cmpi eq, %was, %c0 : i64
    scf.if %unset {
      llvm.store %c1, %mixed atomic monotonic {alignment = 8 : i64} : i64, !llvm.ptr
    }
    return
  }

  // One more transfer of `n` bytes in the (transfers, bytes) context slots at `pair`.
  func.func @${count_transfer}(%pair: !llvm.ptr, %n: i64) {
    %one = arith.constant 1 : i64
    %count = llvm.load %pair : !llvm.ptr -> i64
    %count1 = arith.addi %count, %one : i64
    llvm.store %count1, %pair : i64, !llvm.ptr
    %bp = llvm.getelementptr %pair[1] : (!llvm.ptr) -> !llvm.ptr, i64
    %bytes = llvm.load %bp : !llvm.ptr -> i64
    %bytes1 = arith.addi %bytes, %n : i64
    llvm.store %bytes1, %bp : i64, !llvm.ptr
    return
  }

  // `note`: a kernel's access of the launch's arrays (`Access` kind, MRAM
  // bytes [mram, mram + n), site), watched for a wait that cannot end, then
  // logged (`__dpu_log`) in the tasklet's log, when the launch keeps one
  // (LOG_CAP non-zero: a launch on several DPUs). An access that continues
  // or repeats the last entry (same kind and site, starting inside it or
  // where it ends) extends it.
  // A full log goes to ${log_full}: the model grows it, a DPU flushes it to MRAM.
  // The context whose access log a tasklet's accesses go to: its own, or,
  // where the DPU's tasklets share one host thread (one runs at a time),
  // tasklet 0's, so that the DPU's accesses merge in one log (the tasklets'
  // chunks of a row become one entry).
  func.func private @__dpu_log_context(%ctx: !llvm.ptr) -> !llvm.ptr {
    %c0 = arith.constant 0 : i64
    %st = func.call @__dpu_state(%ctx) : (!llvm.ptr) -> !llvm.ptr
    %null = llvm.mlir.zero : !llvm.ptr
    %has = llvm.icmp "ne" %st, %null : !llvm.ptr
    %shared = scf.if %has -> (i1) {
      %sched_p = llvm.getelementptr %st[${dpu_scheduler}] : (!llvm.ptr) -> !llvm.ptr, i64
      %sched = llvm.load %sched_p : !llvm.ptr -> i64
      %one_thread = arith.cmpi ne, %sched, %c0 : i64
      scf.yield %one_thread : i1
    } else {
      %no = arith.constant false
      scf.yield %no : i1
    }
    %out = scf.if %shared -> (!llvm.ptr) {
      %tid_p = llvm.getelementptr %ctx[${ctx_tid}] : (!llvm.ptr) -> !llvm.ptr, i64
      %tid = llvm.load %tid_p : !llvm.ptr -> i64
      %slots = arith.constant ${ctx_slots} : i64
      %back = arith.muli %tid, %slots : i64
      %neg = arith.subi %c0, %back : i64
      %first = llvm.getelementptr %ctx[%neg] : (!llvm.ptr, i64) -> !llvm.ptr, i64
      scf.yield %first : !llvm.ptr
    } else {
      scf.yield %ctx : !llvm.ptr
    }
    return %out : !llvm.ptr
  }

  func.func @${note}(%kind: i64, %mram: i64, %n: i64, %site: i64, %ctx: !llvm.ptr) {
    func.call @__dpu_log(%kind, %mram, %n, %site, %ctx) : (i64, i64, i64, i64, !llvm.ptr) -> ()
    return
  }

  // `watch_wait`: a kernel's access made in a `while` loop (only a loop that runs
  // until a value changes can wait for ever) that repeats the DPU's last
  // watched one (kind, bytes and site; not a store) WAIT_REPEATS times in a
  // row waits for a value no program can write while it waits (Err.WAIT):
  // the DPU stops, as a deadlocked barrier stops it. One count per DPU:
  // another tasklet's access breaks a run as much as the same tasklet's. A
  // store's kind resets the count (the kernel does so before each outermost
  // while loop). The key mixes the four operands and, for an atomic (watched
  // after its write), the 8-byte word that holds its element: an atomic that
  // changes its element each trip (tickets taken from a counter) goes on
  // towards its loop's end; one that leaves it as it was (a spin on a held
  // lock) waits.
  func.func @${watch_wait}(%kind: i64, %mram: i64, %n: i64, %site: i64, %ctx: !llvm.ptr) {
    %c0 = arith.constant 0 : i64
    %c1 = arith.constant 1 : i64
    %st = func.call @__dpu_state(%ctx) : (!llvm.ptr) -> !llvm.ptr
    %null = llvm.mlir.zero : !llvm.ptr
    %has = llvm.icmp "ne" %st, %null : !llvm.ptr
    scf.if %has {
      %mask = arith.constant ${access_mask} : i64
      %low = arith.andi %kind, %mask : i64
      %k_atomic = arith.constant ${access_atomic} : i64
      %is_atomic = arith.cmpi eq, %low, %k_atomic : i64
      // (a transfer the DMA refused stopped the DPU: its word is not read)
      %stopped = func.call @${failed}(%ctx) : (!llvm.ptr) -> i1
      %true = arith.constant true
      %going = arith.xori %stopped, %true : i1
      %atomic = arith.andi %is_atomic, %going : i1
      %word = scf.if %atomic -> (i64) {
        %cell = llvm.alloca %c1 x i64 {alignment = 8 : i64} : (i64) -> !llvm.ptr
        %down = arith.constant -8 : i64
        %at = arith.andi %mram, %down : i64
        %at_p = llvm.inttoptr %at : i64 to !llvm.ptr
        %c8 = arith.constant 8 : i64
        func.call @${copy_from_mram}(%cell, %at_p, %c8) : (!llvm.ptr, !llvm.ptr, i64) -> ()
        %w = llvm.load %cell : !llvm.ptr -> i64
        scf.yield %w : i64
      } else {
        scf.yield %c0 : i64
      }
      %m1 = arith.constant -7046029254386353131 : i64
      %m2 = arith.constant -4658895280553007687 : i64
      %m3 = arith.constant 7109453100751455733 : i64
      %m4 = arith.constant -3372029247567499371 : i64
      %h1 = arith.muli %mram, %m1 : i64
      %h2 = arith.muli %n, %m2 : i64
      %h3 = arith.muli %kind, %m3 : i64
      %h4 = arith.muli %word, %m4 : i64
      %h12 = arith.xori %h1, %h2 : i64
      %h123 = arith.xori %h12, %h3 : i64
      %h1234 = arith.xori %h123, %h4 : i64
      %key = arith.xori %h1234, %site : i64
      %key_p = llvm.getelementptr %st[${dpu_wait_key}] : (!llvm.ptr) -> !llvm.ptr, i64
      %count_p = llvm.getelementptr %st[${dpu_wait_count}] : (!llvm.ptr) -> !llvm.ptr, i64
      %last = llvm.load %key_p : !llvm.ptr -> i64
      %count = llvm.load %count_p : !llvm.ptr -> i64
      %same = arith.cmpi eq, %key, %last : i64
      %more = arith.addi %count, %c1 : i64
      %count1 = arith.select %same, %more, %c1 : i64
      %k_write = arith.constant ${access_write} : i64
      %store = arith.cmpi eq, %low, %k_write : i64
      %count2 = arith.select %store, %c0, %count1 : i64
      llvm.store %key, %key_p : i64, !llvm.ptr
      llvm.store %count2, %count_p : i64, !llvm.ptr
      %limit = arith.constant ${wait_repeats} : i64
      %stuck = arith.cmpi sge, %count2, %limit : i64
      scf.if %stuck {
        %code = arith.constant ${err_wait} : i64
        %dir = arith.constant ${read} : i64
        func.call @${fail}(%ctx, %code, %site, %mram, %c0, %n, %dir)
            : (!llvm.ptr, i64, i64, i64, i64, i64, i64) -> ()
      }
    }
    return
  }

  // Where the log context's table by end address (Ctx.LOG_ENDS: ${log_ends}
  // slots; 0: none, as on a DPU) keeps the entry of `kind` that ends at
  // `addr` (a hash of both: two entries may share a slot, which costs only
  // an entry more), or null.
  func.func private @__dpu_log_slot(%lctx: !llvm.ptr, %kind: i64, %addr: i64) -> !llvm.ptr {
    %c0 = arith.constant 0 : i64
    %table_p = llvm.getelementptr %lctx[${ctx_log_ends}] : (!llvm.ptr) -> !llvm.ptr, i64
    %table_i = llvm.load %table_p : !llvm.ptr -> i64
    %table = llvm.inttoptr %table_i : i64 to !llvm.ptr
    %has = arith.cmpi ne, %table_i, %c0 : i64
    %slot = scf.if %has -> (!llvm.ptr) {
      %m1 = arith.constant -7046029254386353131 : i64
      %m2 = arith.constant 7109453100751455733 : i64
      %shift = arith.constant ${log_ends_shift} : i64
      %k1 = arith.xori %addr, %kind : i64
      %h1 = arith.muli %k1, %m1 : i64
      %h2 = arith.addi %h1, %m2 : i64
      %h = arith.muli %h2, %m1 : i64
      %k = arith.shrui %h, %shift : i64
      %p = llvm.getelementptr %table[%k] : (!llvm.ptr, i64) -> !llvm.ptr, i64
      scf.yield %p : !llvm.ptr
    } else {
      scf.yield %table : !llvm.ptr
    }
    return %slot : !llvm.ptr
  }

  // Entry `idx` of the log (`len` entries at `log`) grown by the access
  // [mram, end) when it is one of the same kind and site that the access
  // starts in or right after (then the table finds it by its new end).
  func.func private @__dpu_log_extend(%lctx: !llvm.ptr, %log: !llvm.ptr, %len: i64, %idx: i64, %kind: i64,
                                      %mram: i64, %end: i64, %site: i64) -> i1 {
    %width = arith.constant ${log_entry} : i64
    %valid = arith.cmpi ult, %idx, %len : i64          // (a stale or unset index is past the end)
    %ext = scf.if %valid -> (i1) {
      %off = arith.muli %idx, %width : i64
      %e = llvm.getelementptr %log[%off] : (!llvm.ptr, i64) -> !llvm.ptr, i64
      %k = llvm.load %e : !llvm.ptr -> i64
      %lo_p = llvm.getelementptr %e[1] : (!llvm.ptr) -> !llvm.ptr, i64
      %lo = llvm.load %lo_p : !llvm.ptr -> i64
      %hi_p = llvm.getelementptr %e[2] : (!llvm.ptr) -> !llvm.ptr, i64
      %hi = llvm.load %hi_p : !llvm.ptr -> i64
      %s_p = llvm.getelementptr %e[3] : (!llvm.ptr) -> !llvm.ptr, i64
      %s = llvm.load %s_p : !llvm.ptr -> i64
      %same_k = arith.cmpi eq, %k, %kind : i64
      %same_s = arith.cmpi eq, %s, %site : i64
      %after_lo = arith.cmpi uge, %mram, %lo : i64
      %upto_hi = arith.cmpi ule, %mram, %hi : i64
      %same = arith.andi %same_k, %same_s : i1
      %within = arith.andi %after_lo, %upto_hi : i1
      %yes = arith.andi %same, %within : i1
      scf.if %yes {
        %hi2 = arith.maxui %hi, %end : i64
        llvm.store %hi2, %hi_p : i64, !llvm.ptr
        func.call @__dpu_log_remember(%lctx, %kind, %hi2, %idx) : (!llvm.ptr, i64, i64, i64) -> ()
      }
      scf.yield %yes : i1
    } else {
      %no = arith.constant false
      scf.yield %no : i1
    }
    return %ext : i1
  }

  // The table (if any) finds entry `idx` (of `kind`) by its end `end`.
  func.func private @__dpu_log_remember(%lctx: !llvm.ptr, %kind: i64, %end: i64, %idx: i64) {
    %slot = func.call @__dpu_log_slot(%lctx, %kind, %end) : (!llvm.ptr, i64, i64) -> !llvm.ptr
    %null = llvm.mlir.zero : !llvm.ptr
    %has = llvm.icmp "ne" %slot, %null : !llvm.ptr
    scf.if %has {
      llvm.store %idx, %slot : i64, !llvm.ptr
    }
    return
  }

  // An access of a launch's arrays, logged (Ctx.LOG) unless it is a read of
  // bytes no DPU may write. It grows the last entry, or the entry that ends
  // where it starts (found through the table: tasklets that run one after
  // another each log their chunk of a row), or is a new entry.
  // (Every tasklet of a launch that logs has a non-zero LOG_CAP: its own says
  // whether to log, before the log context is found.)
  func.func private @__dpu_log(%kind: i64, %mram: i64, %n: i64, %site: i64, %ctx: !llvm.ptr) {
    %c0 = arith.constant 0 : i64
    %own_cap_p = llvm.getelementptr %ctx[${ctx_log_cap}] : (!llvm.ptr) -> !llvm.ptr, i64
    %own_cap = llvm.load %own_cap_p : !llvm.ptr -> i64
    %logging = arith.cmpi ne, %own_cap, %c0 : i64
    scf.if %logging {
      func.call @__dpu_log_kept(%kind, %mram, %n, %site, %ctx) : (i64, i64, i64, i64, !llvm.ptr) -> ()
    }
    return
  }

  // (a launch that keeps logs)
  func.func private @__dpu_log_kept(%kind: i64, %mram: i64, %n: i64, %site: i64, %ctx: !llvm.ptr) {
    %true = arith.constant true
    %lctx = func.call @__dpu_log_context(%ctx) : (!llvm.ptr) -> !llvm.ptr
    %cap_p = llvm.getelementptr %lctx[${ctx_log_cap}] : (!llvm.ptr) -> !llvm.ptr, i64
    %cap = llvm.load %cap_p : !llvm.ptr -> i64
    // (a read of bytes no DPU of the launch may write shares nothing)
    %end = arith.addi %mram, %n : i64
    %wlo_p = llvm.getelementptr %lctx[${ctx_watch_lo}] : (!llvm.ptr) -> !llvm.ptr, i64
    %whi_p = llvm.getelementptr %lctx[${ctx_watch_hi}] : (!llvm.ptr) -> !llvm.ptr, i64
    %wlo = llvm.load %wlo_p : !llvm.ptr -> i64
    %whi = llvm.load %whi_p : !llvm.ptr -> i64
    %k_read = arith.constant ${access_read} : i64
    %is_read = arith.cmpi eq, %kind, %k_read : i64
    %below = arith.cmpi ule, %end, %wlo : i64
    %above = arith.cmpi uge, %mram, %whi : i64
    %outside = arith.ori %below, %above : i1
    %unwatched = arith.andi %is_read, %outside : i1
    %watched = arith.xori %unwatched, %true : i1
    scf.if %watched {
      func.call @__dpu_log_entry(%kind, %mram, %end, %site, %lctx, %cap) : (i64, i64, i64, i64, !llvm.ptr, i64) -> ()
      // (a read the host must check the logs for: the save table's `mixed`)
      %c0 = arith.constant 0 : i64
      %table_p = llvm.getelementptr %ctx[${ctx_save}] : (!llvm.ptr) -> !llvm.ptr, i64
      %table_i = llvm.load %table_p : !llvm.ptr -> i64
      %saving = arith.cmpi ne, %table_i, %c0 : i64
      %mark = arith.andi %is_read, %saving : i1
      scf.if %mark {
        %table = llvm.inttoptr %table_i : i64 to !llvm.ptr
        func.call @__dpu_set_mixed(%table) : (!llvm.ptr) -> ()
      }
    }
    return
  }

  // The log entry of an access (a logged one, the log `cap` entries long): see `__dpu_log`.
  func.func private @__dpu_log_entry(%kind: i64, %mram: i64, %end: i64, %site: i64, %lctx: !llvm.ptr,
                                     %cap: i64) {
    %true = arith.constant true
    %c1 = arith.constant 1 : i64
    %width = arith.constant ${log_entry} : i64
    %len_p = llvm.getelementptr %lctx[${ctx_log_len}] : (!llvm.ptr) -> !llvm.ptr, i64
    %log_p = llvm.getelementptr %lctx[${ctx_log}] : (!llvm.ptr) -> !llvm.ptr, i64
    %len = llvm.load %len_p : !llvm.ptr -> i64
    %log_i = llvm.load %log_p : !llvm.ptr -> i64
    %log = llvm.inttoptr %log_i : i64 to !llvm.ptr
    %last = arith.subi %len, %c1 : i64
    %by_last = func.call @__dpu_log_extend(%lctx, %log, %len, %last, %kind, %mram, %end, %site)
        : (!llvm.ptr, !llvm.ptr, i64, i64, i64, i64, i64, i64) -> i1
    %extends = scf.if %by_last -> (i1) {
      scf.yield %true : i1
    } else {
      %slot = func.call @__dpu_log_slot(%lctx, %kind, %mram) : (!llvm.ptr, i64, i64) -> !llvm.ptr
      %null = llvm.mlir.zero : !llvm.ptr
      %has = llvm.icmp "ne" %slot, %null : !llvm.ptr
      %found = scf.if %has -> (i1) {
        %idx = llvm.load %slot : !llvm.ptr -> i64
        %r = func.call @__dpu_log_extend(%lctx, %log, %len, %idx, %kind, %mram, %end, %site)
            : (!llvm.ptr, !llvm.ptr, i64, i64, i64, i64, i64, i64) -> i1
        scf.yield %r : i1
      } else {
        %no = arith.constant false
        scf.yield %no : i1
      }
      scf.yield %found : i1
    }
    %append = arith.xori %extends, %true : i1
    scf.if %append {
      %full = arith.cmpi sge, %len, %cap : i64
      scf.if %full {
        func.call @${log_full}(%lctx) : (!llvm.ptr) -> ()
      }
      %len2 = llvm.load %len_p : !llvm.ptr -> i64
      %log2_i = llvm.load %log_p : !llvm.ptr -> i64
      %log2 = llvm.inttoptr %log2_i : i64 to !llvm.ptr
      %off = arith.muli %len2, %width : i64
      %f = llvm.getelementptr %log2[%off] : (!llvm.ptr, i64) -> !llvm.ptr, i64
      llvm.store %kind, %f : i64, !llvm.ptr
      %f1 = llvm.getelementptr %f[1] : (!llvm.ptr) -> !llvm.ptr, i64
      llvm.store %mram, %f1 : i64, !llvm.ptr
      %f2 = llvm.getelementptr %f[2] : (!llvm.ptr) -> !llvm.ptr, i64
      llvm.store %end, %f2 : i64, !llvm.ptr
      %f3 = llvm.getelementptr %f[3] : (!llvm.ptr) -> !llvm.ptr, i64
      llvm.store %site, %f3 : i64, !llvm.ptr
      %len3 = arith.addi %len2, %c1 : i64
      llvm.store %len3, %len_p : i64, !llvm.ptr
      func.call @__dpu_log_remember(%lctx, %kind, %end, %len2) : (!llvm.ptr, i64, i64, i64) -> ()
    }
    return
  }

  // An EDSL function's access of an MRAM element (its context is the thread's):
  // logged, not watched (its tasklets may wait for each other's writes).
  func.func @${note_access}(%kind: i64, %mram: i64, %n: i64, %site: i64) {
    %ctx = func.call @${ctx}() : () -> !llvm.ptr
    func.call @__dpu_log(%kind, %mram, %n, %site, %ctx) : (i64, i64, i64, i64, !llvm.ptr) -> ()
    return
  }

  // The model's full access log grows to twice its entries (the host frees it).
  func.func @${log_full}(%ctx: !llvm.ptr) {
    %c2 = arith.constant 2 : i64
    %bytes = arith.constant ${log_entry_bytes} : i64
    %cap_p = llvm.getelementptr %ctx[${ctx_log_cap}] : (!llvm.ptr) -> !llvm.ptr, i64
    %log_p = llvm.getelementptr %ctx[${ctx_log}] : (!llvm.ptr) -> !llvm.ptr, i64
    %cap = llvm.load %cap_p : !llvm.ptr -> i64
    %log_i = llvm.load %log_p : !llvm.ptr -> i64
    %log = llvm.inttoptr %log_i : i64 to !llvm.ptr
    %cap2 = arith.muli %cap, %c2 : i64
    %size = arith.muli %cap2, %bytes : i64
    %grown = llvm.call @realloc(%log, %size) : (!llvm.ptr, i64) -> !llvm.ptr
    %grown_i = llvm.ptrtoint %grown : !llvm.ptr to i64
    llvm.store %grown_i, %log_p : i64, !llvm.ptr
    llvm.store %cap2, %cap_p : i64, !llvm.ptr
    return
  }

${dma_rules}

  // Whether MRAM [mram, mram + n) lies inside one of the launch's MRAM
  // regions (the context's table); where the context keeps a footprint
  // (the model), the region's hull grows to hold it. Not inlined: a kernel
  // makes many transfers, and this loop inlined at each made LLVM's loop
  // passes the larger part of a kernel's compile time.
  func.func private @__dpu_in_regions(%mram: i64, %n: i64, %ctx: !llvm.ptr) -> i1
      attributes {passthrough = ["noinline"]} {
    %c0 = arith.constant 0 : i64
    %c1 = arith.constant 1 : i64
    %c2 = arith.constant 2 : i64
    %none = arith.constant -1 : i64
    %table_p = llvm.getelementptr %ctx[${ctx_regions}] : (!llvm.ptr) -> !llvm.ptr, i64
    %table_i = llvm.load %table_p : !llvm.ptr -> i64
    %table = llvm.inttoptr %table_i : i64 to !llvm.ptr
    %nreg_p = llvm.getelementptr %ctx[${ctx_nregions}] : (!llvm.ptr) -> !llvm.ptr, i64
    %nreg = llvm.load %nreg_p : !llvm.ptr -> i64
    %end = arith.addi %mram, %n : i64
    %hit = scf.for %k = %c0 to %nreg step %c1 iter_args(%in = %none) -> (i64) : i64 {
      %k2 = arith.muli %k, %c2 : i64
      %rlo_p = llvm.getelementptr %table[%k2] : (!llvm.ptr, i64) -> !llvm.ptr, i64
      %rlo = llvm.load %rlo_p : !llvm.ptr -> i64
      %rhi_p = llvm.getelementptr %rlo_p[1] : (!llvm.ptr) -> !llvm.ptr, i64
      %rhi = llvm.load %rhi_p : !llvm.ptr -> i64
      %ge = arith.cmpi uge, %mram, %rlo : i64
      %le = arith.cmpi ule, %end, %rhi : i64
      %here = arith.andi %ge, %le : i1
      %in1 = arith.select %here, %k, %in : i64
      scf.yield %in1 : i64
    }
    %inside = arith.cmpi sge, %hit, %c0 : i64
    %fp_p = llvm.getelementptr %ctx[${ctx_footprint}] : (!llvm.ptr) -> !llvm.ptr, i64
    %fp_i = llvm.load %fp_p : !llvm.ptr -> i64
    %keeps = arith.cmpi ne, %fp_i, %c0 : i64
    %grows = arith.andi %keeps, %inside : i1
    scf.if %grows {
      %fp = llvm.inttoptr %fp_i : i64 to !llvm.ptr
      %h2 = arith.muli %hit, %c2 : i64
      %flo_p = llvm.getelementptr %fp[%h2] : (!llvm.ptr, i64) -> !llvm.ptr, i64
      %flo = llvm.load %flo_p : !llvm.ptr -> i64
      %fhi_p = llvm.getelementptr %flo_p[1] : (!llvm.ptr) -> !llvm.ptr, i64
      %fhi = llvm.load %fhi_p : !llvm.ptr -> i64
      %lo1 = arith.minui %flo, %mram : i64
      %hi1 = arith.maxui %fhi, %end : i64
      llvm.store %lo1, %flo_p : i64, !llvm.ptr
      llvm.store %hi1, %fhi_p : i64, !llvm.ptr
    }
    return %inside : i1
  }

  // mram_read (dir ${read}) / mram_write (${write}): the DMA rules and the
  // launch's MRAM regions checked, the transfer counted and made. A broken
  // rule records the tasklet's first error and stops its DPU.
  func.func @${dma}(%mram: i64, %wram: i64, %n: i64, %dir: i64, %site: i64, %ctx: !llvm.ptr) {
    %c0 = arith.constant 0 : i64
    %c1 = arith.constant 1 : i64
    %c2 = arith.constant 2 : i64
    %true = arith.constant true
    %stopped = func.call @${failed}(%ctx) : (!llvm.ptr) -> i1
    %go = arith.xori %stopped, %true : i1
    scf.if %go {
      %broken = func.call @__dpu_dma_rules(%mram, %wram, %n) : (i64, i64, i64) -> i64
      %rule = arith.cmpi ne, %broken, %c0 : i64
      %inside = func.call @__dpu_in_regions(%mram, %n, %ctx) : (i64, i64, !llvm.ptr) -> i1
      %oob = arith.xori %inside, %true : i1
      %c_rule = arith.constant ${err_dma_rule} : i64
      %c_oob = arith.constant ${err_mram_bounds} : i64
      %code0 = arith.select %oob, %c_oob, %c0 : i64
      %code = arith.select %rule, %c_rule, %code0 : i64
      %bad = arith.cmpi ne, %code, %c0 : i64
      scf.if %bad {
        func.call @${fail}(%ctx, %code, %site, %mram, %wram, %n, %dir)
            : (!llvm.ptr, i64, i64, i64, i64, i64, i64) -> ()
      } else {
        %ci = arith.muli %dir, %c2 : i64
        %cnt_p = llvm.getelementptr %ctx[%ci] : (!llvm.ptr, i64) -> !llvm.ptr, i64
        func.call @${count_transfer}(%cnt_p, %n) : (!llvm.ptr, i64) -> ()
        %mp = llvm.inttoptr %mram : i64 to !llvm.ptr
        %wp = llvm.inttoptr %wram : i64 to !llvm.ptr
        %is_write = arith.cmpi eq, %dir, %c1 : i64
        scf.if %is_write {
          func.call @${save_pages}(%mram, %n, %ctx) : (i64, i64, !llvm.ptr) -> ()
          func.call @${copy_to_mram}(%mp, %wp, %n) : (!llvm.ptr, !llvm.ptr, i64) -> ()
        } else {
          func.call @${copy_from_mram}(%wp, %mp, %n) : (!llvm.ptr, !llvm.ptr, i64) -> ()
        }
      }
    }
    return
  }

  // An EDSL transfer: the DMA rules come first, as on hardware; when they
  // hold, a transfer past the end of either buffer is an error; then the
  // one DMA routine.
  func.func private @__edsl_dma(%mram: i64, %wram: i64, %n: i64, %site: i64, %mram_end: i64,
                                %wram_end: i64, %dir: i64) {
    %ctx = func.call @${ctx}() : () -> !llvm.ptr
    %c0 = arith.constant 0 : i64
    %m_end = arith.addi %mram, %n : i64
    %w_end = arith.addi %wram, %n : i64
    %over_m = arith.cmpi sgt, %m_end, %mram_end : i64
    %over_w = arith.cmpi sgt, %w_end, %wram_end : i64
    %c_m = arith.constant ${err_mram_overrun} : i64
    %c_w = arith.constant ${err_wram_overrun} : i64
    %code0 = arith.select %over_w, %c_w, %c0 : i64
    %code = arith.select %over_m, %c_m, %code0 : i64
    %broken = func.call @__dpu_dma_rules(%mram, %wram, %n) : (i64, i64, i64) -> i64
    %rules = arith.cmpi eq, %broken, %c0 : i64
    %overrun = arith.cmpi ne, %code, %c0 : i64
    %fail = arith.andi %rules, %overrun : i1
    scf.if %fail {
      func.call @${fail}(%ctx, %code, %site, %mram, %wram, %n, %dir)
          : (!llvm.ptr, i64, i64, i64, i64, i64, i64) -> ()
    } else {
      func.call @${dma}(%mram, %wram, %n, %dir, %site, %ctx) : (i64, i64, i64, i64, i64, !llvm.ptr) -> ()
      // (an EDSL transfer uses every byte it moves)
      %c_write = arith.constant ${write} : i64
      %is_write = arith.cmpi eq, %dir, %c_write : i64
      %k_read = arith.constant ${access_read} : i64
      %k_write = arith.constant ${access_write} : i64
      %kind = arith.select %is_write, %k_write, %k_read : i64
      func.call @${note}(%kind, %mram, %n, %site, %ctx) : (i64, i64, i64, i64, !llvm.ptr) -> ()
      // (for the race check: the MRAM bytes accessed as the log says, the WRAM ones the other way)
      %mram_flag = arith.constant ${race_mram} : i64
      %mram_kind = arith.ori %kind, %mram_flag : i64
      %wram_kind = arith.select %is_write, %k_read, %k_write : i64
      func.call @${race_note}(%mram_kind, %mram, %n, %site) : (i64, i64, i64, i64) -> ()
      func.call @${race_note}(%wram_kind, %wram, %n, %site) : (i64, i64, i64, i64) -> ()
    }
    return
  }

  func.func @${mram_read}(%mram: i64, %wram: i64, %n: i64, %site: i64, %mram_end: i64, %wram_end: i64) {
    %dir = arith.constant ${read} : i64
    func.call @__edsl_dma(%mram, %wram, %n, %site, %mram_end, %wram_end, %dir)
        : (i64, i64, i64, i64, i64, i64, i64) -> ()
    return
  }

  func.func @${mram_write}(%mram: i64, %wram: i64, %n: i64, %site: i64, %mram_end: i64, %wram_end: i64) {
    %dir = arith.constant ${write} : i64
    func.call @__edsl_dma(%mram, %wram, %n, %site, %mram_end, %wram_end, %dir)
        : (i64, i64, i64, i64, i64, i64, i64) -> ()
    return
  }

  func.func @${assert_fail}(%site: i64) {
    %code = arith.constant ${err_assert} : i64
    func.call @__dpu_fail_at(%code, %site) : (i64, i64) -> ()
    return
  }

  func.func @${bounds_fail}(%site: i64) {
    %code = arith.constant ${err_index} : i64
    func.call @__dpu_fail_at(%code, %site) : (i64, i64) -> ()
    return
  }

  func.func @${step_fail}(%site: i64) {
    %code = arith.constant ${err_zero_step} : i64
    func.call @__dpu_fail_at(%code, %site) : (i64, i64) -> ()
    return
  }

  func.func @${me}() -> i32 {
    %ctx = func.call @${ctx}() : () -> !llvm.ptr
    %p = llvm.getelementptr %ctx[${ctx_tid}] : (!llvm.ptr) -> !llvm.ptr, i64
    %tid = llvm.load %p : !llvm.ptr -> i64
    %r = arith.trunci %tid : i64 to i32
    return %r : i32
  }

  func.func @${nr_tasklets}() -> i32 {
    %ctx = func.call @${ctx}() : () -> !llvm.ptr
    %p = llvm.getelementptr %ctx[${ctx_ntasklets}] : (!llvm.ptr) -> !llvm.ptr, i64
    %n = llvm.load %p : !llvm.ptr -> i64
    %r = arith.trunci %n : i64 to i32
    return %r : i32
  }

  func.func @${counters}() -> !llvm.ptr {
    %ctx = func.call @${ctx}() : () -> !llvm.ptr
    %p = llvm.getelementptr %ctx[${ctx_counters}] : (!llvm.ptr) -> !llvm.ptr, i64
    %c = llvm.load %p : !llvm.ptr -> i64
    %r = llvm.inttoptr %c : i64 to !llvm.ptr
    return %r : !llvm.ptr
  }

  // A generation-counting barrier over the DPU's shared state. One 64-bit
  // word counts arrivals, tasklets blocked in a C function's mutex_lock or handshake and
  // finished tasklets (abi.Dpu.COUNT's fields), so that the tasklet whose
  // arrival makes `arrived + blocked + finished == tasklets`, some blocked
  // or finished, knows, alone, that the barrier can never complete: a
  // deadlock, recorded with the barrier's site. Waiters pause (__dpu_pause),
  // and give up once the DPU has failed or the host has interrupted the launch.
  func.func @${barrier}(%site: i64) {
    %ctx = func.call @${ctx}() : () -> !llvm.ptr
    %c0 = arith.constant 0 : i64
    %c1 = arith.constant 1 : i64
    %mask = arith.constant ${count_field_mask} : i64
    %c32 = arith.constant ${count_finished_shift} : i64
    %true = arith.constant true
    %stopped = func.call @${failed}(%ctx) : (!llvm.ptr) -> i1
    %go = arith.xori %stopped, %true : i1
    scf.if %go {
      %st = func.call @__dpu_state(%ctx) : (!llvm.ptr) -> !llvm.ptr
      %count_p = llvm.getelementptr %st[${dpu_count}] : (!llvm.ptr) -> !llvm.ptr, i64
      %gen_p = llvm.getelementptr %st[${dpu_generation}] : (!llvm.ptr) -> !llvm.ptr, i64
      %n_p = llvm.getelementptr %st[${dpu_tasklets}] : (!llvm.ptr) -> !llvm.ptr, i64
      %n = llvm.load %n_p : !llvm.ptr -> i64
      %ws = llvm.getelementptr %st[${dpu_wait_site}] : (!llvm.ptr) -> !llvm.ptr, i64
      llvm.store %site, %ws : i64, !llvm.ptr
      %gen = llvm.load %gen_p atomic acquire {alignment = 8 : i64} : !llvm.ptr -> i64
      %gen32 = arith.trunci %gen : i64 to i32
      %sched_p = llvm.getelementptr %st[${dpu_scheduler}] : (!llvm.ptr) -> !llvm.ptr, i64
      %sched = llvm.load %sched_p : !llvm.ptr -> i64
      %threads = arith.cmpi eq, %sched, %c0 : i64
      %old = func.call @__dpu_add(%count_p, %c1, %threads) : (!llvm.ptr, i64, i1) -> i64
      %arrived0 = arith.andi %old, %mask : i64
      %arrived = arith.addi %arrived0, %c1 : i64
      %finished = arith.shrui %old, %c32 : i64
      %bshift = arith.constant ${count_blocked_shift} : i64
      %blocked_hi = arith.shrui %old, %bshift : i64
      %blocked = arith.andi %blocked_hi, %mask : i64
      %last = arith.cmpi eq, %arrived, %n : i64
      scf.if %last {
        %minus_n = arith.subi %c0, %n : i64
        %back = func.call @__dpu_add(%count_p, %minus_n, %threads) : (!llvm.ptr, i64, i1) -> i64
        %next = func.call @__dpu_add(%gen_p, %c1, %threads) : (!llvm.ptr, i64, i1) -> i64
        scf.if %threads {                 // (tasklets that share a thread sleep on nothing)
          func.call @__dpu_wake(%gen_p) : (!llvm.ptr) -> ()
        }
      } else {
        %sum0 = arith.addi %arrived, %finished : i64
        %sum = arith.addi %sum0, %blocked : i64
        %all_in = arith.cmpi eq, %sum, %n : i64
        %some_done = arith.cmpi ne, %finished, %c0 : i64
        %some_blocked = arith.cmpi ne, %blocked, %c0 : i64
        %stuck = arith.ori %some_done, %some_blocked : i1
        %dead = arith.andi %all_in, %stuck : i1
        scf.if %dead {
          %barrier_code = arith.constant ${err_deadlock} : i64
          %mutex_code = arith.constant ${err_sync_deadlock} : i64
          %code = arith.select %some_blocked, %mutex_code, %barrier_code : i64
          func.call @${fail}(%ctx, %code, %site, %c0, %c0, %c0, %c0)
              : (!llvm.ptr, i64, i64, i64, i64, i64, i64) -> ()
        } else {
          scf.while : () -> () {
            func.call @__dpu_pause(%sched, %gen_p, %gen32, %ctx) : (i64, !llvm.ptr, i32, !llvm.ptr) -> ()
            %now = llvm.load %gen_p atomic acquire {alignment = 8 : i64} : !llvm.ptr -> i64
            %same = arith.cmpi eq, %now, %gen : i64
            %failed = func.call @${failed}(%ctx) : (!llvm.ptr) -> i1
            %ok = arith.xori %failed, %true : i1
            %again = arith.andi %same, %ok : i1
            scf.condition(%again)
          } do {
            scf.yield
          }
        }
      }
    }
    return
  }

  // `*p += v`, the old value returned: atomic where the DPU's tasklets are
  // threads (`atomic`), plain where they share one host thread (one runs at a
  // time: a locked add would cost more than the switch between them).
  func.func private @__dpu_add(%p: !llvm.ptr, %v: i64, %atomic: i1) -> i64 {
    %old = scf.if %atomic -> (i64) {
      %o = llvm.atomicrmw add %p, %v acq_rel : !llvm.ptr, i64
      scf.yield %o : i64
    } else {
      %o = llvm.load %p : !llvm.ptr -> i64
      %new = arith.addi %o, %v : i64
      llvm.store %new, %p : i64, !llvm.ptr
      scf.yield %o : i64
    }
    return %old : i64
  }

  // A tasklet waits (at a barrier of generation `gen32`) and lets the others
  // run: it yields to its DPU's scheduler when the DPU's tasklets share one
  // host thread (runtime_tasklets.mlir: `sched`, the DPU's SCHEDULER slot), or
  // sleeps when each is a thread.
  func.func private @__dpu_pause(%sched: i64, %gen_p: !llvm.ptr, %gen32: i32, %ctx: !llvm.ptr) {
    %c0 = arith.constant 0 : i64
    %shared = arith.cmpi ne, %sched, %c0 : i64
    scf.if %shared {
      %s = llvm.inttoptr %sched : i64 to !llvm.ptr
      func.call @__dpu_yield(%s, %ctx) : (!llvm.ptr, !llvm.ptr) -> ()
    } else {
      func.call @__dpu_wait(%gen_p, %gen32) : (!llvm.ptr, i32) -> ()
    }
    return
  }

  // The tasklet of `ctx` lets the next one of its DPU run, where they share
  // one host thread (threads run side by side).
  func.func @${yield}(%ctx: !llvm.ptr) {
    %c0 = arith.constant 0 : i64
    %st = func.call @__dpu_state(%ctx) : (!llvm.ptr) -> !llvm.ptr
    %sched_p = llvm.getelementptr %st[${dpu_scheduler}] : (!llvm.ptr) -> !llvm.ptr, i64
    %sched = llvm.load %sched_p : !llvm.ptr -> i64
    %shared = arith.cmpi ne, %sched, %c0 : i64
    scf.if %shared {
      %s = llvm.inttoptr %sched : i64 to !llvm.ptr
      func.call @__dpu_yield(%s, %ctx) : (!llvm.ptr, !llvm.ptr) -> ()
    }
    return
  }

  // The running tasklet waits a while where the word at `word` holds `value`
  // (abi.WAIT_WORD: a C function's mutex and handshake waits), as at a barrier.
  func.func @${wait_word}(%word: !llvm.ptr, %value: i32) {
    %ctx = func.call @${ctx}() : () -> !llvm.ptr
    %st = func.call @__dpu_state(%ctx) : (!llvm.ptr) -> !llvm.ptr
    %sched_p = llvm.getelementptr %st[${dpu_scheduler}] : (!llvm.ptr) -> !llvm.ptr, i64
    %sched = llvm.load %sched_p : !llvm.ptr -> i64
    func.call @__dpu_pause(%sched, %word, %value, %ctx) : (i64, !llvm.ptr, i32, !llvm.ptr) -> ()
    return
  }

  // Wake the tasklets sleeping on `word` (threads; those on one thread sleep on nothing).
  func.func @${wake_word}(%word: !llvm.ptr) {
    %c0 = arith.constant 0 : i64
    %ctx = func.call @${ctx}() : () -> !llvm.ptr
    %st = func.call @__dpu_state(%ctx) : (!llvm.ptr) -> !llvm.ptr
    %sched_p = llvm.getelementptr %st[${dpu_scheduler}] : (!llvm.ptr) -> !llvm.ptr, i64
    %sched = llvm.load %sched_p : !llvm.ptr -> i64
    %threads = arith.cmpi eq, %sched, %c0 : i64
    scf.if %threads {
      func.call @__dpu_wake(%word) : (!llvm.ptr) -> ()
    }
    return
  }

  // The tasklet of `ctx` has finished: a deadlock if the others all wait (at
  // a barrier or for a mutex).
  func.func @${exit}(%ctx: !llvm.ptr) {
    %c0 = arith.constant 0 : i64
    %c1 = arith.constant 1 : i64
    %mask = arith.constant ${count_field_mask} : i64
    %c32 = arith.constant ${count_finished_shift} : i64
    %inc = arith.constant 4294967296 : i64
    %st = func.call @__dpu_state(%ctx) : (!llvm.ptr) -> !llvm.ptr
    %null = llvm.mlir.zero : !llvm.ptr
    %has = llvm.icmp "ne" %st, %null : !llvm.ptr
    scf.if %has {
      %count_p = llvm.getelementptr %st[${dpu_count}] : (!llvm.ptr) -> !llvm.ptr, i64
      %n_p = llvm.getelementptr %st[${dpu_tasklets}] : (!llvm.ptr) -> !llvm.ptr, i64
      %n = llvm.load %n_p : !llvm.ptr -> i64
      %old = llvm.atomicrmw add %count_p, %inc acq_rel : !llvm.ptr, i64
      %arrived = arith.andi %old, %mask : i64
      %bshift = arith.constant ${count_blocked_shift} : i64
      %blocked_hi = arith.shrui %old, %bshift : i64
      %blocked = arith.andi %blocked_hi, %mask : i64
      %fin0 = arith.shrui %old, %c32 : i64
      %finished = arith.addi %fin0, %c1 : i64
      %sum0 = arith.addi %arrived, %finished : i64
      %sum = arith.addi %sum0, %blocked : i64
      %all_in = arith.cmpi eq, %sum, %n : i64
      %waiters = arith.addi %arrived, %blocked : i64
      %waiting = arith.cmpi ne, %waiters, %c0 : i64
      %dead = arith.andi %all_in, %waiting : i1
      scf.if %dead {
        %ws = llvm.getelementptr %st[${dpu_wait_site}] : (!llvm.ptr) -> !llvm.ptr, i64
        %site = llvm.load %ws : !llvm.ptr -> i64
        %some_blocked = arith.cmpi ne, %blocked, %c0 : i64
        %barrier_code = arith.constant ${err_deadlock} : i64
        %mutex_code = arith.constant ${err_sync_deadlock} : i64
        %code = arith.select %some_blocked, %mutex_code, %barrier_code : i64
        func.call @${fail}(%ctx, %code, %site, %c0, %c0, %c0, %c0)
            : (!llvm.ptr, i64, i64, i64, i64, i64, i64) -> ()
      }
    }
    return
  }

${wait_functions}

${race_functions}

${tasklet_functions}
}
