#!/usr/bin/env python3
"""setup.coverage: everything the build and the tests use comes from a package setup.sh installs.

Collects, from the configured and built tree (nothing here is a hand-kept list of tools):
  - every file or directory CMake found (CMakeCache.txt: FILEPATH/PATH entries: find_program,
    find_library, find_path, find_package's <Pkg>_DIR, the compiler, ninja, pkg-config);
  - every system header any compiled target included (ninja's dependency log, `ninja -t deps`);
  - every library the link commands name (-lNAME resolved by the compiler, or an absolute path);
  - every absolute program path and argument a ctest entry runs (`ctest --show-only=json-v1`,
    commands and environment);
  - every program a test script calls by name: the `# programs:` line of each tests/**/*.sh;
  - with a Conan 2 found (AQUEDUCT_CONAN or PATH): every installed Python module of a package that
    Conan's own code imports by name (found by importing all of Conan's client modules).
For each, `dpkg -S` names the owning Debian package, which must be in scripts/debian-packages.txt
(the list scripts/setup.sh installs with --no-install-recommends), in the Depends/Pre-Depends
closure of that list (installed with it), or Essential (on every Debian system). A file no package
owns, a CMake find that came back NOTFOUND, or a program that is not on PATH fails the test.

usage: coverage.py SOURCE_DIR BUILD_DIR [--ctest CTEST] [--cxx CXX] [--ninja NINJA] [--packages FILE]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def read_list(path):
    out = []
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                out.append(line)
    return out


def installed_db():
    """name -> (essential, [alternative groups]) for installed packages; virtual name -> providers."""
    fmt = "${db:Status-Abbrev}\t${Package}\t${Essential}\t${Pre-Depends}, ${Depends}\t${Provides}\n"
    r = run(["dpkg-query", "-W", "-f", fmt])
    pkgs, provides = {}, {}
    for line in r.stdout.splitlines():
        parts = line.split("\t")
        if len(parts) != 5 or not parts[0].startswith("ii"):
            continue
        _, name, essential, deps, prov = parts
        groups = []
        for grp in deps.split(","):
            alts = [re.sub(r"[\s(].*", "", a.strip()).split(":")[0] for a in grp.split("|")]
            alts = [a for a in alts if a]
            if alts:
                groups.append(alts)
        pkgs[name] = (essential.strip() == "yes", groups)
        for p in prov.split(","):
            p = re.sub(r"[\s(].*", "", p.strip()).split(":")[0]
            if p:
                provides.setdefault(p, set()).add(name)
    return pkgs, provides


def closure(roots, pkgs, provides):
    """package -> the listed root it came in with (Depends/Pre-Depends, installed alternatives)."""
    via = {}
    for root in roots:  # in list order: a package is attributed to the first listed one bringing it
        stack = [root] if root in pkgs else []
        while stack:
            name = stack.pop()
            if name in via:
                continue
            via[name] = root
            for alts in pkgs[name][1]:
                for a in alts:
                    for cand in ([a] if a in pkgs else []) + sorted(provides.get(a, ())):
                        if cand not in via:
                            stack.append(cand)
    return via


def owners(paths):
    """path -> set of packages (dpkg -S), one call for all of them."""
    res = {}
    paths = sorted(set(paths))
    for i in range(0, len(paths), 2000):
        r = run(["dpkg", "-S", *paths[i:i + 2000]])
        for line in r.stdout.splitlines():
            if line.startswith("diversion "):
                continue
            pk, sep, path = line.rpartition(": ")
            if not sep:
                continue
            res.setdefault(path, set()).update(p.strip().split(":")[0] for p in pk.split(","))
    return res


def candidates(path):
    """The path, its resolved target, and the merged-/usr twins dpkg may know it by."""
    out = [path]
    real = os.path.realpath(path)
    for p in (path, real):
        out.append(p)
        if p.startswith("/usr/"):
            out.append(p[4:])
        elif re.match(r"/(bin|sbin|lib\w*)/", p):
            out.append("/usr" + p)
    seen, res = set(), []
    for p in out:
        if p not in seen:
            seen.add(p)
            res.append(p)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("source")
    ap.add_argument("build")
    ap.add_argument("--ctest", default="ctest")
    ap.add_argument("--cxx", default="c++")
    ap.add_argument("--ninja", default="ninja")
    ap.add_argument("--packages")
    a = ap.parse_args()
    src, build = os.path.realpath(a.source), os.path.realpath(a.build)
    listed = read_list(a.packages or os.path.join(src, "scripts", "debian-packages.txt"))

    items = {}     # path -> why (first reason seen)
    problems = []  # human-readable failures

    def add(path, why):
        path = os.path.normpath(path)
        if path.startswith((src + "/", build + "/")) or path in (src, build):
            return
        if not path.startswith("/") or path.startswith(("/tmp/", "/proc/", "/dev/")):
            return
        items.setdefault(path, why)

    # 1. what CMake found
    internal_ok_notfound = re.compile(r"^CMAKE_")
    n_cache = 0
    with open(os.path.join(build, "CMakeCache.txt")) as f:
        for line in f:
            m = re.match(r"^([A-Za-z0-9_.+-]+):(FILEPATH|PATH)=(.*)$", line.rstrip("\n"))
            if not m:
                continue
            name, _, value = m.groups()
            if name.startswith("CMAKE_INSTALL_"):
                continue
            if value.endswith("-NOTFOUND"):
                if not internal_ok_notfound.match(name):
                    problems.append(f"CMake did not find {name} (scripts/setup.sh should install what provides it)")
                continue
            for v in value.split(";"):
                if v.startswith("/"):
                    add(v, f"CMake cache {name}")
                    n_cache += 1

    # 2. headers every built object included
    n_hdr = 0
    r = run([a.ninja, "-C", build, "-t", "deps"])
    if r.returncode != 0:
        problems.append(f"ninja -t deps failed: {r.stderr.strip()}")
    for line in r.stdout.splitlines():
        if line.startswith("    /"):
            p = line.strip()
            if not p.startswith((src + "/", build + "/")):
                n_hdr += 1
                add(p, "header included by the build")

    # 3. libraries the link commands name
    r = run([a.ninja, "-C", build, "-t", "commands"])
    libs = set()
    for line in r.stdout.splitlines():
        if " -o " not in line or " -c " in line:
            continue
        for tok in line.split():
            if tok.startswith("-l") and len(tok) > 2:
                libs.add(tok[2:])
            elif tok.startswith("/") and re.search(r"\.(so(\.[0-9.]+)?|a)$", tok):
                add(tok, "library on a link line")
    for lib in sorted(libs):
        found = None
        for name in (f"lib{lib}.so", f"lib{lib}.a"):
            out = run([a.cxx, f"-print-file-name={name}"]).stdout.strip()
            if os.path.isabs(out) and os.path.exists(out):
                found = out
                break
        if found:
            add(found, f"-l{lib} on a link line")
        else:
            problems.append(f"-l{lib} is on a link line but the compiler finds no lib{lib}.so/.a")

    # 4. what ctest runs
    r = run([a.ctest, "--test-dir", build, "--show-only=json-v1"])
    n_ctest = 0
    try:
        tests = json.loads(r.stdout).get("tests", [])
    except json.JSONDecodeError:
        tests = []
        problems.append("ctest --show-only=json-v1 gave no JSON")
    for t in tests:
        words = list(t.get("command", []))
        for p in t.get("properties", []):
            if p.get("name") == "ENVIRONMENT":
                words += [v.split("=", 1)[-1] for v in p.get("value", [])]
        for w in words:
            for part in re.split(r"[;=]", w):
                if part.startswith("/") and os.path.isfile(part):
                    add(part, f"run by test {t.get('name')}")
                    n_ctest += 1

    # 5. programs the test scripts call by name
    scripts = []
    for root, dirs, files in os.walk(os.path.join(src, "tests")):
        scripts += [os.path.join(root, f) for f in files if f.endswith(".sh")]
    for s in sorted(scripts):
        with open(s) as f:
            for line in f:
                m = re.match(r"^#\s*programs:\s*(.*)$", line)
                if m:
                    for prog in m.group(1).split():
                        p = shutil.which(prog)
                        if p:
                            add(p, f"called by {os.path.relpath(s, src)}")
                        else:
                            problems.append(f"{prog} (called by {os.path.relpath(s, src)}) is not on PATH")

    # 6. Conan's Python modules
    conan = os.environ.get("AQUEDUCT_CONAN") or shutil.which("conan")
    n_py = 0
    if conan and os.path.isfile(conan):
        conan_src = os.path.join(os.path.dirname(os.path.realpath(conan)), "conan-src")
        if os.path.isdir(conan_src):
            code = r"""
import importlib, os, pkgutil, sys
root = sys.argv[1]
at_start = set(sys.modules)  # what site's .pth hooks load is this machine's, not Conan's
for pkg in ("conan", "conans"):
    for m in pkgutil.walk_packages([os.path.join(root, pkg)], pkg + "."):
        # not the client: its tests, the Conan server, the `conan new` templates
        if ".test" in m.name or m.name.startswith("conans.server") or "internal.api.new" in m.name:
            continue
        try:
            importlib.import_module(m.name)
        except Exception:
            pass
# Only packages Conan's own code imports by name: what those import in turn comes with their
# Debian packages' Depends (an optional extra a machine happens to have is not Conan's need).
import ast
direct = set()
for dirpath, _, files in os.walk(root):
    if "/test" in dirpath or "/server" in dirpath:
        continue
    for fn in files:
        if fn.endswith(".py"):
            try:
                tree = ast.parse(open(os.path.join(dirpath, fn), encoding="utf-8").read())
            except (SyntaxError, UnicodeDecodeError):
                continue
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    direct.update(a.name.split(".")[0] for a in node.names)
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    direct.add(node.module.split(".")[0])
for name, m in list(sys.modules.items()):
    f = getattr(m, "__file__", None) if name not in at_start and name.split(".")[0] in direct else None
    if f and not os.path.realpath(f).startswith(root):
        print(os.path.realpath(f))
"""
            r = run(["/usr/bin/python3", "-c", code, conan_src],
                    env=dict(os.environ, PYTHONPATH=conan_src))
            add("/usr/bin/python3", "runs Conan")
            for line in r.stdout.splitlines():
                if line.startswith("/usr/lib/python3/dist-packages/"):
                    n_py += 1
                    add(line, "Python module Conan imports")

    # owners
    cand = {p: candidates(p) for p in items}
    own = owners([c for cs in cand.values() for c in cs])
    pkgs, provides = installed_db()
    missing_listed = [p for p in listed if p not in pkgs]
    for p in missing_listed:
        problems.append(f"{p} is in scripts/debian-packages.txt but not installed (run scripts/setup.sh)")
    via = closure(listed, pkgs, provides)

    seen_pkgs, unlisted = {}, {}
    for path in sorted(items):
        o = set()
        for c in cand[path]:
            if c in own:
                o = own[c]
                break
        if not o:
            problems.append(f"{path} ({items[path]}) belongs to no Debian package")
            continue
        if os.path.isdir(path) and len(o) > 1:
            continue  # a shared directory (/usr/include): its files are checked one by one
        how = None
        for rank, test in ((0, lambda pk: pk in listed and "listed"),
                           (1, lambda pk: pk in pkgs and pkgs[pk][0] and "Essential"),
                           (2, lambda pk: pk in via and f"via {via[pk]}")):
            for pk in sorted(o):
                if test(pk):
                    how = (pk, test(pk))
                    break
            if how:
                break
        if not how:
            unlisted.setdefault(", ".join(sorted(o)), []).append(f"{path} ({items[path]})")
            continue
        seen_pkgs.setdefault(how, []).append(path)

    print(f"setup.coverage: {len(items)} files checked "
          f"({n_cache} from CMake, {n_hdr} header uses, {len(libs)} -l libraries, "
          f"{n_ctest} from ctest commands, {len(scripts)} scripts, {n_py} Conan Python modules)")
    for (pk, how), paths in sorted(seen_pkgs.items()):
        ex = ", ".join(paths[:3]) + (f" (+{len(paths) - 3})" if len(paths) > 3 else "")
        print(f"  {pk:28} {how:26} {ex}")
    unused = [p for p in listed if p in pkgs and not any(k[0] == p or k[1] == f"via {p}" for k in seen_pkgs)]
    if unused:
        print(f"  (listed, nothing checked here came from them: {' '.join(unused)})")
    for pk, uses in sorted(unlisted.items()):
        more = f" (+{len(uses) - 3} more)" if len(uses) > 3 else ""
        problems.append(f"{pk}: not installed by scripts/debian-packages.txt (add it), owns "
                        f"{len(uses)} file(s) used: " + "; ".join(uses[:3]) + more)
    if n_cache == 0 or n_hdr == 0 or not tests:
        problems.append("nothing found to check: is BUILD_DIR configured with Ninja and built?")
    if problems:
        print("\nsetup.coverage: FAILED")
        for p in problems:
            print("  " + p)
        return 1
    print("setup.coverage: every file used belongs to a package scripts/setup.sh installs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
