#!/usr/bin/env python3
"""Where a fresh thread's first context spends its time, by compiled method and by machine
instruction, without a probe in the code: FreshThreads.java (as run.py runs it) under `perf record
-e cpu-clock` of the carriers for the measured seconds, the JIT's symbols from `jcmd PID
Compiler.perfmap`, and the compiled code's bytes read from /proc/PID/mem while the JVM still
holds them, disassembled with `objdump`.

  bench/fresh/profile.py [--jdk DIR] [--agent SO] [--jar JAR] [--rate N] [--seconds S]
                        [--warmup S] [--kind virtual|platform] [--options OPTS]
                        [--context snapshot|new] [--annotate SUBSTRING ...] [--share PERCENT]

Prints the carriers' (ForkJoinPool-*; `--kind platform`: the fresh threads, `Thread-*`) CPU by
compiled method in ns per fresh thread (perf's cpu-clock periods summed, divided by the threads
started while perf ran), then for each method whose name contains an --annotate substring (by
default `dev.jfrctx`), and the three compiled methods with the most samples (the JIT may inline
the whole first context into the thread's body), the instructions that got at least --share
percent of its samples, each with the four before it. A timer sample names the instruction the
thread was about to retire, so a stall shows on the instruction after the one that waited (a
load's first use, or the instruction after a store whose retirement waited). Needs `perf`
(Debian: linux-perf; software events are enough, a VM without a PMU works) and `objdump`
(binutils), and ptrace access to the JVM (root, or kernel.yama.ptrace_scope 0).
"""
import argparse, collections, os, shutil, subprocess, sys, tempfile, time

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))
sys.path.insert(0, here)
import run as fresh  # noqa: E402  (bench/fresh/run.py: options, compilation, heap settings)

def jit_symbols(pid, jcmd):
    """(start, size, name) of every compiled method, from the JVM's perf map."""
    subprocess.run([jcmd, str(pid), "Compiler.perfmap"], check=True, stdout=subprocess.DEVNULL)
    syms = []
    with open(f"/tmp/perf-{pid}.map") as f:
        for line in f:
            start, size, name = line.rstrip("\n").split(" ", 2)
            syms.append((int(start, 16), int(size, 16), name))
    return sorted(syms)

def samples(data, comm_prefixes):
    """(instruction pointer, period ns) of each sample of a thread whose name starts with one of
    comm_prefixes."""
    out = subprocess.run(["perf", "script", "-i", data, "-F", "comm,ip,period"],
                         capture_output=True, text=True, check=True).stdout
    found = []
    for line in out.splitlines():
        fields = line.split()
        if len(fields) >= 3 and fields[0].startswith(comm_prefixes):
            try:
                found.append((int(fields[-1], 16), int(fields[-2])))  # perf prints period, ip
            except ValueError:
                pass
    return found

def owner(syms, ip):
    """The symbol whose code holds ip, None outside the JIT's code."""
    lo, hi = 0, len(syms)
    while lo < hi:
        mid = (lo + hi) // 2
        if syms[mid][0] <= ip:
            lo = mid + 1
        else:
            hi = mid
    if lo and syms[lo - 1][0] <= ip < syms[lo - 1][0] + syms[lo - 1][1]:
        return syms[lo - 1]
    return None

def disassemble(pid, sym):
    """[(address, text)] of a compiled method's instructions, read from the live process."""
    start, size, _ = sym
    with open(f"/proc/{pid}/mem", "rb") as mem:
        mem.seek(start)
        code = mem.read(size)
    with tempfile.NamedTemporaryFile(suffix=".bin") as f:
        f.write(code)
        f.flush()
        text = subprocess.run(["objdump", "-D", "-b", "binary", "-m", "i386:x86-64",
                               f"--adjust-vma={start}", f.name], capture_output=True, text=True,
                              check=True).stdout
    lines = []
    for line in text.splitlines():
        head, _, rest = line.partition(":")
        try:
            lines.append((int(head.strip(), 16), rest.strip()))
        except ValueError:
            pass
    return lines

def main():
    ap = argparse.ArgumentParser()
    fresh.common_args(ap, 2000, 30, 10, "seconds recorded by perf")
    ap.add_argument("--annotate", action="append", help="annotate methods containing this")
    ap.add_argument("--share", type=float, default=2.0, help="percent of a method's samples shown")
    a = ap.parse_args()
    for tool in ("perf", "objdump"):
        if not shutil.which(tool):
            sys.exit(f"profile.py: `{tool}` is not installed (Debian: linux-perf, binutils)")
    if a.warmup < 1:
        sys.exit("profile.py: --warmup must be at least 1 (perf starts after the warm-up)")
    classes = fresh.compile_fresh(a, "profile.py")
    agent = f"-agentpath:{a.agent}=sink=jsonl:/dev/null" + (f",{a.options}" if a.options else "")
    # perf starts 2 s after the warm-up (1 s of hold), the threads run 6 s beyond its end: the
    # symbols and the code are read while the JVM still runs them.
    cmd = [os.path.join(a.jdk, "bin/java"), *fresh.HEAP, "-Dhold=1000", f"-Dwarmup={a.warmup}",
           "-cp", f"{a.jar}:{classes}", agent, "FreshThreads", str(a.seconds + 6),
           fresh.context_mode(a), str(a.rate), a.kind]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        if p.stdout.readline().strip() != "warm":
            sys.exit("profile.py: FreshThreads did not warm up")
        time.sleep(2)
        data = os.path.join(classes, "perf.data")
        subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", "20000", "-p", str(p.pid),
                        "-o", data, "--", "sleep", str(a.seconds)], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        threads = a.seconds * a.rate
        syms = jit_symbols(p.pid, os.path.join(a.jdk, "bin/jcmd"))
        carriers = ("ForkJoinPool",) if a.kind == "virtual" else ("Thread-",)
        taken = samples(data, carriers)
        by_method = collections.Counter()
        by_ip = collections.Counter()
        for ip, period in taken:
            sym = owner(syms, ip)
            by_method[sym[2] if sym else "(outside compiled Java code)"] += period
            by_ip[ip] += 1
        total = sum(by_method.values())
        print(f"{a.rate} fresh {a.kind} threads/s, {threads} threads while perf ran; carriers "
              f"{total / threads:.0f} ns per thread ({len(taken)} samples)")
        for name, ns in by_method.most_common(25):
            print(f"{ns / threads:8.1f} ns  {name}")
        wanted = a.annotate or ["dev.jfrctx"]
        top = [name for name, _ in by_method.most_common(4) if not name.startswith("(")][:3]
        for sym in syms:
            if not any(w in sym[2] for w in wanted) and sym[2] not in top:
                continue
            hits = {ip: n for ip, n in by_ip.items() if sym[0] <= ip < sym[0] + sym[1]}
            count = sum(hits.values())
            if count < 5:
                continue
            print(f"\n{sym[2]} at {sym[0]:#x}: {count} samples")
            lines = disassemble(p.pid, sym)
            for i, (addr, text) in enumerate(lines):
                n = hits.get(addr, 0)
                if n * 100 >= a.share * count:
                    for _, before in lines[max(0, i - 4):i]:
                        print(f"          {before}")
                    print(f"  {n:4d} -> {addr:#x}: {text}\n")
    finally:
        p.kill()
        p.wait()

if __name__ == "__main__":
    main()
