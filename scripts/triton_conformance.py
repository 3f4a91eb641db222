#!/usr/bin/env python3
"""Conformance of the `dpu` backend with Triton's own language tests.

Runs Triton's test_core.py (kept outside the project: pass its folder) under
pytest in a subprocess (or `--workers` at once), `--device cpu`, either on the `dpu`
backend (TRITON_DEFAULT_BACKEND=dpu) or on Triton's interpreter
(TRITON_INTERPRET=1), and prints pass/fail/skip counts by test function.

    triton_conformance.py run TESTS --mode dpu [--cases FILE | -k EXPR] [--out R.json]
    triton_conformance.py compare INTERP.json DPU.json
    triton_conformance.py select TESTS --timings R.json [--budget-s S] > cases.txt

`run --expected FILE` judges the run against a list of cases expected to pass
(CI): it exits 1 if one of them does not pass, and names the cases that pass
but are not listed so the file can be updated (`--update-expected` rewrites
it). Outcomes are read from pytest's report log (pytest-reportlog), one JSON
line per test phase, so a run whose process dies (a crash in compiled code)
or stalls keeps what it finished: the case in flight is recorded as
`crashed` or `timeout` and pytest is started again on the remaining cases.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

MODES = {
    # mode -> (variables set, variables removed)
    "dpu": ({"TRITON_DEFAULT_BACKEND": "dpu"}, ("TRITON_INTERPRET",)),
    "interpreter": ({"TRITON_INTERPRET": "1"}, ("TRITON_DEFAULT_BACKEND",)),
    # dpu, and every launch also exported and run against the SDK stand-ins
    # (the pytest plugin conformance/export_each_launch.py)
    "dpu-export": ({"TRITON_DEFAULT_BACKEND": "dpu"}, ("TRITON_INTERPRET",)),
    # dpu, every launch that sets no num_tasklets on 16 tasklets
    # (the pytest plugin conformance/tasklets_each_launch.py)
    "dpu-tasklets": ({"TRITON_DEFAULT_BACKEND": "dpu"}, ("TRITON_INTERPRET",)),
}
PLUGINS = {mode: Path(__file__).resolve().parent / "conformance" / f"{name}.py"
           for mode, name in (("dpu-export", "export_each_launch"), ("dpu-tasklets", "tasklets_each_launch"))}
PASSING = ("passed", "xpassed")
# Outcomes, in the order the tables print them.
OUTCOMES = ("passed", "failed", "error", "timeout", "crashed", "skipped", "xfailed", "xpassed", "missing")


# ---- case lists ------------------------------------------------------------

def read_case_file(path: Path) -> list[str]:
    """Node ids, one a line (`test_core.py::test_x[...]`); blank lines and `#` comments ignored."""
    ids = []
    for line in path.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            ids.append(line.rstrip("\n"))
    return ids


def function_of(nodeid: str) -> str:
    return nodeid.split("::")[-1].split("[", 1)[0]


def pytest_base(tests: Path, timeout: float) -> tuple[list[str], Path]:
    """The pytest command line shared by collection and runs, and its working
    folder. Triton's tests take `--device cpu` (an option of their
    conftest.py); a library's choose their device themselves (Liger-Kernel's
    `infer_device()` gives the CPU where there is no GPU)."""
    folder = tests if tests.is_dir() else tests.parent
    target = "." if tests.is_dir() else tests.name
    conftest = folder / "conftest.py"
    device = ["--device", "cpu"] if conftest.exists() and '"--device"' in conftest.read_text() else []
    cmd = [sys.executable, "-m", "pytest", target, *device, "-p", "no:cacheprovider",
           "--rootdir", ".", "-q", "-o", "console_output_style=classic"]
    if timeout:
        cmd += ["--timeout", str(timeout)]
    return cmd, folder


def environment(mode: str, scratch: Path) -> dict:
    env = dict(os.environ)
    set_, removed = MODES[mode]
    for name in removed:
        env.pop(name, None)
    env.update(set_)
    # Fresh compilation caches for every run (results must not depend on what an
    # earlier run left), and no bytecode written beside the tests.
    env["TRITON_CACHE_DIR"] = str(scratch / "triton-cache")
    env["EDSL_CACHE_DIR"] = str(scratch / "edsl-cache")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if mode in PLUGINS:
        plugin = PLUGINS[mode]
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(plugin.parent), env.get("PYTHONPATH")]))
        env["PYTEST_ADDOPTS"] = f"{env.get('PYTEST_ADDOPTS', '')} -p {plugin.stem}".strip()
    if mode == "dpu-export":
        env["TMPDIR"] = str(scratch)
    return env


def collect(tests: Path, mode: str, keyword: str | None, scratch: Path,
            files: list[str] | None = None) -> list[str]:
    """Node ids pytest collects, in its order (optionally filtered by `-k`);
    with `files`, from those files of the folder only (a folder may hold test
    files that cannot be collected here, such as one needing scipy)."""
    cmd, folder = pytest_base(tests, 0)
    if files and tests.is_dir():
        cmd = cmd[:3] + files + cmd[4:]
    cmd += ["--collect-only"]
    if keyword:
        cmd += ["-k", keyword]
    proc = subprocess.run(cmd, cwd=folder, env=environment(mode, scratch), capture_output=True, text=True)
    # `-q --collect-only` prints one node id a line; warnings are indented.
    ids = [line for line in proc.stdout.splitlines() if "::" in line and not line[:1].isspace()]
    if proc.returncode not in (0, 5) or (not ids and proc.returncode != 5):
        sys.exit(f"collection failed (pytest exit {proc.returncode}):\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return ids


# ---- running ---------------------------------------------------------------

def error_key(message: str) -> str:
    """The line that says what went wrong, with what varies between variants
    of one cause taken out (numbers, source locations, argument and kernel
    names, quoted IR, sets of names, the details after a `;`), so that they group together."""
    lines = [l.strip() for l in message.strip().splitlines() if l.strip()]
    if not lines:
        return ""
    line = lines[0]
    # Triton's CompilationError starts with the kernel's source; the cause is last.
    if re.match(r"triton\.compiler\.errors\.\w+: at \d+:\d+:", line):
        line = lines[-1]
    line = re.sub(r"(/[^\s:'\"]+)+\.py:\d+(:\d+)?:?", "<file>", line)
    line = re.sub(r"\b\d+(\.\d+)?\b", "N", line)
    line = re.sub(r"\[N(, N)*\]", "[N...]", line)
    line = re.sub(r"\b(argument|kernel) '\w+'", r"\1 '<name>'", line)
    line = re.sub(r": %.*", "", line)  # an IR operation quoted after the message
    while re.search(r"\{[^{}]*\}", line):  # sets of names, in any order
        line = re.sub(r"\{[^{}]*\}", "<set>", line)
    return line.split("; ")[0][:200]


class CaseResults:
    """Outcome, error and duration of each case, from report-log lines (of
    one pytest process or of several at once: hence the lock)."""

    def __init__(self):
        self.cases: dict[str, dict] = {}
        self.phases: dict[str, set] = collections.defaultdict(set)
        self.lock = threading.Lock()

    def add_report(self, rep: dict) -> None:
        with self.lock:
            self._add_report(rep)

    def _add_report(self, rep: dict) -> None:
        nodeid, when, outcome = rep["nodeid"], rep["when"], rep["outcome"]
        self.phases[nodeid].add(when)
        case = self.cases.setdefault(nodeid, {"outcome": "passed", "duration": 0.0})
        case["duration"] = round(case["duration"] + (rep.get("duration") or 0.0), 3)
        if outcome == "passed":
            if when == "call" and "wasxfail" in rep:
                case["outcome"] = "xpassed"
            return
        if case["outcome"] not in PASSING:
            return  # the first problem of a case is the one to report
        longrepr = rep.get("longrepr")
        if outcome == "skipped":
            case["outcome"] = "xfailed" if "wasxfail" in rep else "skipped"
            message = longrepr[2] if isinstance(longrepr, list) else str(longrepr or "")
            message = message.removeprefix("Skipped: ")
        else:
            case["outcome"] = "failed" if when == "call" else "error"
            crash = (longrepr or {}).get("reprcrash") if isinstance(longrepr, dict) else None
            message = crash["message"] if crash else str(longrepr or "")
            if "Timeout (>" in message and "pytest-timeout" in message:
                case["outcome"] = "timeout"
        case["message"] = message[:2000]
        case["error"] = error_key(message)

    def finished(self, nodeid: str) -> bool:
        return "teardown" in self.phases.get(nodeid, ())

    def mark(self, nodeid: str, outcome: str, message: str) -> None:
        """Ends a case that pytest did not finish."""
        with self.lock:
            self.cases[nodeid] = {"outcome": outcome, "duration": self.cases.get(nodeid, {}).get("duration", 0.0),
                                  "message": message, "error": message}
            self.phases[nodeid].add("teardown")

    def snapshot(self) -> dict[str, dict]:
        with self.lock:
            return {nodeid: dict(case) for nodeid, case in self.cases.items()}


def run_cases(tests: Path, mode: str, ids: list[str], timeout: float, stall_s: float | None, scratch: Path,
              progress: bool = False, checkpoint=None, workers: int = 1) -> CaseResults:
    """Runs the cases, starting pytest again after a crash, or after `stall_s`
    seconds without a report (a case stuck where pytest-timeout's signal does
    not reach, in compiled code): the process is then killed. `checkpoint(results)`
    is called about once a minute. With `workers` > 1 the cases are dealt out
    in turn to that many pytest processes at once, each with its own caches."""
    results = CaseResults()
    shards = [ids[k::workers] for k in range(workers) if ids[k::workers]]
    if len(shards) <= 1:
        _run_shard(tests, mode, ids, timeout, stall_s, scratch, results, ids, progress, checkpoint)
        return results
    failures, stop = [], threading.Event()

    def run(k, shard):
        folder = scratch / f"worker-{k}"
        folder.mkdir()
        try:
            _run_shard(tests, mode, shard, timeout, stall_s, folder, results, ids, progress,
                       checkpoint if k == 0 else None, stop)
        except BaseException as e:  # sys.exit in a thread: raised again below
            failures.append(e)
            stop.set()

    threads = [threading.Thread(target=run, args=(k, shard)) for k, shard in enumerate(shards)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        # Ctrl-C or SIGTERM reach this thread only: the others stop their pytest.
        stop.set()
        for thread in threads:
            thread.join()
    if failures:
        raise failures[0]
    return results


def _run_shard(tests, mode, ids, timeout, stall_s, scratch, results, all_ids, progress, checkpoint,
               stop: threading.Event | None = None) -> None:
    """One pytest process at a time over `ids`, in `scratch`; outcomes go to
    `results`. Ends early, its process killed, once `stop` is set."""
    base, folder = pytest_base(tests, timeout)
    base = base[:3] + base[4:]  # the cases are given by id, not the whole target
    env = environment(mode, scratch)
    remaining = list(ids)
    attempt = 0
    while remaining:
        attempt += 1
        argfile = scratch / f"cases-{attempt}.txt"
        argfile.write_text("".join(i + "\n" for i in remaining))
        log = scratch / f"report-{attempt}.jsonl"
        cmd = base + [f"@{argfile}", "--report-log", str(log)]
        with open(scratch / f"pytest-{attempt}.out", "w") as out:
            proc = subprocess.Popen(cmd, cwd=folder, env=env, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)
            try:
                stalled = _watch(proc, log, results, all_ids, stall_s, checkpoint, progress, stop)
            finally:
                # Stopped (Ctrl-C, SIGTERM) or done: pytest runs in its own
                # session, so it must not outlive this run.
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
        if stop is not None and stop.is_set():
            return
        if progress:
            print(file=sys.stderr)
        unfinished = [i for i in remaining if not results.finished(i)]
        if not unfinished:
            break
        if proc.returncode in (2, 3, 4) and not any(results.finished(i) for i in remaining):
            tail = (scratch / f"pytest-{attempt}.out").read_text()[-3000:]
            sys.exit(f"pytest could not run the cases (exit {proc.returncode}):\n{tail}")
        # The case in flight is the first unfinished one in pytest's order (the ids' order).
        culprit = unfinished[0]
        if stalled:
            results.mark(culprit, "timeout", f"no progress for {stall_s:.0f} s: process killed")
        else:
            code = proc.returncode
            why = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"
            results.mark(culprit, "crashed", f"pytest process died ({why})")
        remaining = unfinished[1:]


def _watch(proc, log, results, ids, stall_s, checkpoint, progress, stop=None) -> bool:
    """Follow one pytest process's report log until it ends, until `stall_s`
    pass without a report (then kill it), or until `stop` is set; True if it stalled."""
    offset, last_change, saved = 0, time.monotonic(), time.monotonic()
    while True:
        try:
            proc.wait(timeout=2)
            stalled = False
        except subprocess.TimeoutExpired:
            stalled = stall_s is not None and time.monotonic() - last_change > stall_s
        new, offset = read_log(log, offset, results)
        if checkpoint and time.monotonic() - saved > 60:
            checkpoint(results)
            saved = time.monotonic()
        if new:
            last_change = time.monotonic()
            if progress:
                done = sum(results.finished(i) for i in ids)
                print(f"\r{done}/{len(ids)} cases", end="", file=sys.stderr, flush=True)
        if proc.returncode is not None or (stop is not None and stop.is_set()):
            return stalled
        if stalled:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return stalled


def read_log(log: Path, offset: int, results: CaseResults):
    """New complete lines of the report log since `offset`."""
    if not log.exists():
        return False, offset
    with open(log) as f:
        f.seek(offset)
        chunk = f.read()
    end = chunk.rfind("\n") + 1
    new = False
    for line in chunk[:end].splitlines():
        rep = json.loads(line)
        if rep.get("$report_type") == "TestReport":
            results.add_report(rep)
            new = True
    return new, offset + len(chunk[:end].encode())


# ---- printing --------------------------------------------------------------

def count_table(cases: dict[str, dict], title: str) -> str:
    by_function = collections.defaultdict(collections.Counter)
    for nodeid, case in cases.items():
        by_function[function_of(nodeid)][case["outcome"]] += 1
    columns = [o for o in OUTCOMES if any(c[o] for c in by_function.values())]
    width = max([len(f) for f in by_function] + [len("test function")])
    lines = [title, f"{'test function':<{width}} {'cases':>6} " + " ".join(f"{c:>8}" for c in columns)]
    total = collections.Counter()
    for function in sorted(by_function):
        counts = by_function[function]
        total.update(counts)
        lines.append(f"{function:<{width}} {sum(counts.values()):>6} " + " ".join(f"{counts[c]:>8}" for c in columns))
    lines.append(f"{'total':<{width}} {sum(total.values()):>6} " + " ".join(f"{total[c]:>8}" for c in columns))
    return "\n".join(lines)


def summary_line(cases: dict[str, dict]) -> str:
    counts = collections.Counter(c["outcome"] for c in cases.values())
    passed = counts["passed"] + counts["xpassed"]
    failed = counts["failed"] + counts["error"] + counts["timeout"] + counts["crashed"]
    return f"{passed} passed, {failed} failed, {counts['skipped'] + counts['xfailed']} skipped"


def key_of(case: dict) -> str:
    """The error line of a case, from its message (so that a result file
    written by an older version of this script groups the same way)."""
    if case["outcome"] in ("crashed", "missing") or "message" not in case:
        return case.get("error", "")
    return error_key(case["message"])


def grouped_failures(ids: list[str], cases: dict[str, dict], limit: int | None = None) -> str:
    """Cases grouped by test function, then by error line, with one example each."""
    groups = collections.defaultdict(lambda: collections.defaultdict(list))
    for nodeid in ids:
        case = cases[nodeid]
        groups[function_of(nodeid)][f"[{case['outcome']}] {key_of(case)}"].append(nodeid)
    lines = []
    for function in sorted(groups, key=lambda f: -sum(map(len, groups[f].values()))):
        errors = groups[function]
        lines.append(f"{function}: {sum(map(len, errors.values()))}")
        for error, members in sorted(errors.items(), key=lambda e: -len(e[1]))[:limit]:
            lines.append(f"    {len(members):>5}  {error}")
            lines.append(f"           e.g. {members[0]}")
    return "\n".join(lines)


def grouped_by_error(ids: list[str], cases: dict[str, dict]) -> str:
    """Cases grouped by error line across test functions, largest group first."""
    groups = collections.defaultdict(list)
    for nodeid in ids:
        case = cases[nodeid]
        groups[f"[{case['outcome']}] {key_of(case)}"].append(nodeid)
    lines = []
    for error, members in sorted(groups.items(), key=lambda e: -len(e[1])):
        functions = collections.Counter(function_of(i) for i in members)
        lines.append(f"{len(members):>5}  {error}")
        lines.append("       in " + ", ".join(f"{f} ({n})" for f, n in functions.most_common()))
        lines.append(f"       e.g. {members[0]}")
    return "\n".join(lines)


# ---- commands --------------------------------------------------------------

def cmd_run(args) -> int:
    tests = Path(args.tests).resolve()
    if not tests.exists():
        sys.exit(f"no such tests path: {tests}")
    for plugin in map(Path, args.plugin):       # (the runs' environments start from this one's)
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(plugin.resolve().parent),
                                                                 os.environ.get("PYTHONPATH")]))
        os.environ["PYTEST_ADDOPTS"] = f"{os.environ.get('PYTEST_ADDOPTS', '')} -p {plugin.stem}".strip()
    with tempfile.TemporaryDirectory(prefix="triton-conformance-") as tmp:
        scratch = Path(tmp)
        wanted = read_case_file(Path(args.cases or args.expected_cases)) if args.cases or args.expected else None
        files = sorted({i.split("::")[0] for i in wanted}) if wanted else None
        collected = collect(tests, args.mode, args.k, scratch, files)
        if wanted is not None:
            present = set(collected)
            missing = [i for i in wanted if i not in present]
            ids = [i for i in wanted if i in present]
        else:
            ids, missing = collected, []
        if args.spread:
            ids = spread_over_functions(ids)
        print(f"{args.mode}: {len(ids)} cases from {tests}", flush=True)
        started = time.monotonic()

        def save(results, complete=False):
            import triton
            Path(args.out).write_text(json.dumps(
                {"mode": args.mode, "tests": str(tests), "triton": triton.__version__, "complete": complete,
                 "seconds": round(time.monotonic() - started), "cases": results.snapshot()}, indent=0))

        stall_s = args.stall_s if args.stall_s is not None else (2 * args.timeout + 60 if args.timeout else None)
        results = run_cases(tests, args.mode, ids, args.timeout, stall_s, scratch, sys.stderr.isatty(),
                            save if args.out else None, args.workers)
        elapsed = time.monotonic() - started
    cases = results.cases
    for nodeid in missing:
        cases[nodeid] = {"outcome": "missing", "duration": 0.0, "message": "not collected", "error": "not collected"}
    if args.out:
        save(results, complete=True)
    print(count_table(cases, f"{args.mode}, by test function ({elapsed / 60:.1f} min):"))
    print(summary_line(cases))
    if args.expected:  # the verdict comes last
        return judge(cases, Path(args.expected), args.update_expected)
    return 0


def judge(cases: dict[str, dict], expected_file: Path, update: bool) -> int:
    expected = set(read_case_file(expected_file))
    regressed = sorted(i for i in expected if i in cases and cases[i]["outcome"] not in PASSING
                       and cases[i]["outcome"] != "missing")
    missing = sorted(i for i in expected if cases.get(i, {}).get("outcome", "missing") == "missing")
    improved = sorted(i for i, c in cases.items() if c["outcome"] in PASSING and i not in expected)
    if missing:
        print(f"\n{len(missing)} cases expected to pass are no longer collected (Triton's tests changed):")
        print("\n".join(f"    {i}" for i in missing))
    if improved:
        print(f"\n{len(improved)} cases pass that {expected_file.name} does not list:"
              + ("" if update else " add them (or run with --update-expected)"))
        print("\n".join(f"    {i}" for i in improved))
    if update:
        keep = [i for i in read_case_file(expected_file) if i not in set(regressed)] + improved
        order = {i: n for n, i in enumerate(cases)}
        keep.sort(key=lambda i: order.get(i, len(order)))
        header = [l for l in expected_file.read_text().splitlines() if l.startswith("#")]
        expected_file.write_text("\n".join(header + keep) + "\n")
        print(f"\n{expected_file} rewritten: {len(keep)} cases")
        return 0
    if regressed:
        print(f"\nFAILED: {len(regressed)} cases expected to pass did not:")
        print(grouped_failures(regressed, cases))
        return 1
    print(f"\nconformance: the {len(expected) - len(missing)} cases expected to pass all passed")
    return 0


def cmd_compare(args) -> int:
    a, b = (json.loads(Path(p).read_text()) for p in (args.first, args.second))
    ca, cb = a["cases"], b["cases"]
    common = [i for i in ca if i in cb]
    lost = [i for i in common if ca[i]["outcome"] in PASSING and cb[i]["outcome"] not in PASSING]
    gained = [i for i in common if cb[i]["outcome"] in PASSING and ca[i]["outcome"] not in PASSING]
    both = sum(ca[i]["outcome"] in PASSING and cb[i]["outcome"] in PASSING for i in common)
    print(f"{len(common)} cases in both runs; both pass: {both}; "
          f"{a['mode']} passes, {b['mode']} does not: {len(lost)}; "
          f"{b['mode']} passes, {a['mode']} does not: {len(gained)}")
    if lost:
        print(f"\nCases {a['mode']} passes and {b['mode']} does not, by test function and error:")
        print(grouped_failures(lost, cb, args.limit))
        print(f"\nThe same cases by error:")
        print(grouped_by_error(lost, cb))
    skipped_a = [i for i in common if ca[i]["outcome"] == "skipped" and cb[i]["outcome"] not in PASSING
                 and cb[i]["outcome"] != "skipped"]
    if skipped_a:
        print(f"\nCases {a['mode']} skips and {b['mode']} fails, by {a['mode']}'s skip reason:")
        reasons = collections.Counter(key_of(ca[i]) for i in skipped_a)
        for reason, n in reasons.most_common():
            print(f"    {n:>5}  {reason}")
        print(f"\nThe same cases by {b['mode']}'s error:")
        print(grouped_by_error(skipped_a, cb))
    return 0


def cmd_select(args) -> int:
    """A fixed subset spread over test functions: every case of a small
    function, evenly spaced cases of a large one, leaving out cases that the
    timing run skipped (they test nothing on this backend) or that took longer
    than --max-case-s, until the timed total reaches the budget."""
    tests = Path(args.tests).resolve()
    timing = json.loads(Path(args.timings).read_text())["cases"]
    with tempfile.TemporaryDirectory(prefix="triton-conformance-") as tmp:
        collected = collect(tests, "dpu", None, Path(tmp))
    by_function = collections.defaultdict(list)
    for nodeid in collected:
        case = timing.get(nodeid)
        if case and case["outcome"] not in ("timeout", "crashed", "skipped", "xfailed") \
                and case["duration"] <= args.max_case_s:
            by_function[function_of(nodeid)].append(nodeid)
    # Round-robin over functions, each taking its cases at spreading positions
    # (0, 1/2, 1/4, 3/4, ... of its list), until the budget is spent.
    orders = {f: spread_order(len(ids)) for f, ids in by_function.items()}
    chosen, spent, rank = set(), 0.0, 0
    while spent < args.budget_s and any(rank < len(o) for o in orders.values()):
        for function in sorted(by_function):
            if rank < len(orders[function]):
                nodeid = by_function[function][orders[function][rank]]
                chosen.add(nodeid)
                spent += timing[nodeid]["duration"] + args.overhead_s
        rank += 1
    picked = [i for i in collected if i in chosen]
    print(f"# {len(picked)} cases of {len(collected)}, {len(by_function)} test functions, "
          f"about {spent / 60:.0f} min on the timing run's machine")
    print("# made by: scripts/triton_conformance.py select TESTS --timings RUN.json "
          f"--budget-s {args.budget_s:g} --max-case-s {args.max_case_s:g} --overhead-s {args.overhead_s:g}")
    print("\n".join(picked))
    return 0


def spread_over_functions(ids: list[str]) -> list[str]:
    """`ids` round-robin over their test functions, each function's cases in
    spread order, so that any prefix (a run stopped early) samples them all."""
    by_function = collections.defaultdict(list)
    for nodeid in ids:
        by_function[function_of(nodeid)].append(nodeid)
    ranked = []
    for position, members in enumerate(by_function.values()):
        ranked += [(rank, position, members[i]) for rank, i in enumerate(spread_order(len(members)))]
    return [nodeid for _, _, nodeid in sorted(ranked)]


def spread_order(n: int) -> list[int]:
    """0..n-1 ordered so that every prefix is spread evenly over the range
    (positions of the van der Corput sequence 0, 1/2, 1/4, 3/4, 1/8, ...)."""
    order, seen = [], set()
    for k in range(4 * n):
        x, weight = 0.0, 0.5
        while k:
            x, k, weight = x + weight * (k & 1), k >> 1, weight / 2
        if int(x * n) not in seen:
            seen.add(int(x * n))
            order.append(int(x * n))
    return order + [i for i in range(n) if i not in seen]


def main(argv=None) -> int:
    # SIGTERM ends the run as Ctrl-C does: through `finally`, so pytest goes too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run Triton's tests in one mode and print counts by test function")
    run.add_argument("tests", help="Triton's test folder (or one test file)")
    run.add_argument("--mode", choices=sorted(MODES), required=True)
    pick = run.add_mutually_exclusive_group()
    pick.add_argument("--cases", help="file of node ids to run, one a line")
    pick.add_argument("-k", help="pytest -k expression")
    run.add_argument("--expected", help="file of node ids expected to pass: exit 1 if one does not")
    run.add_argument("--expected-cases", help="with --expected: the case file to run (default: --cases)")
    run.add_argument("--update-expected", action="store_true", help="rewrite --expected from this run")
    run.add_argument("--timeout", type=float, default=60, help="seconds per case (pytest-timeout)")
    run.add_argument("--stall-s", type=float, default=None,
                     help="kill pytest after this long without a report (default: 2 timeouts + 60 s)")
    run.add_argument("--workers", type=int, default=1,
                     help="pytest processes at once, the cases dealt out in turn (default: 1)")
    run.add_argument("--out", help="write the outcome of every case to this JSON file (also once a minute)")
    run.add_argument("--plugin", action="append", default=[],
                     help="a pytest plugin file to load in every run (a library's shim)")
    run.add_argument("--spread", action="store_true",
                     help="run round-robin over test functions, so that a run stopped early samples all of them")
    run.set_defaults(func=cmd_run)
    compare = sub.add_parser("compare", help="cases the first run passes and the second does not")
    compare.add_argument("first")
    compare.add_argument("second")
    compare.add_argument("--limit", type=int, default=None, help="error groups shown per test function")
    compare.set_defaults(func=cmd_compare)
    select = sub.add_parser("select", help="print a fixed subset of case ids for CI")
    select.add_argument("tests")
    select.add_argument("--timings", required=True, help="a `run --mode dpu --out` file of the whole file")
    select.add_argument("--budget-s", type=float, default=900)
    select.add_argument("--max-case-s", type=float, default=5)
    select.add_argument("--overhead-s", type=float, default=0.3,
                        help="time per case outside the test's own phases (pytest, the report log)")
    select.set_defaults(func=cmd_select)
    args = parser.parse_args(argv)
    if args.command == "run" and args.expected and not (args.cases or args.expected_cases):
        parser.error("--expected needs --cases (the subset to run)")
    if args.command == "run" and args.expected and not args.expected_cases:
        args.expected_cases = args.cases
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
