#!/usr/bin/env python3
"""The layout's dependency rules, checked over the #include lines.

docs/layout.md's table has a row a folder of code, `| `folder/` | holds | may
include |`; the third column names, in backticks, the folders whose headers the
folder's files may include besides their own. This reads the table and every
C++ and CUDA file of the tree outside tests/, and fails, naming file, line and
rule, when:
  - a file sits in no folder of the table (a new folder must say what it is);
  - a file includes a header of a folder its row does not name;
  - a row names a folder that is not above it in the table (arrows point one way);
  - a row names a folder the table does not have.
A file belongs to the row of the longest folder that holds it (exec/cpu/ops/x.hpp
to `exec/cpu/`, exec/backend.hpp to `exec/`); so does an included header.

Usage: include_rules.py ROOT        check the tree at ROOT
       include_rules.py --self-test check that the rules catch what they should
"""
import os
import re
import sys
import tempfile

SOURCE = re.compile(r"\.(cpp|hpp|cu|cuh)$")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
ROW = re.compile(r"^\|\s*`([a-z0-9_./-]+)/`\s*\|[^|]*\|([^|]*)\|\s*$")
SKIPPED = ("tests/", "build")  # tests may include anything; build trees are not the source


def read_rules(layout_path):
    """The table's rows in order: [(folder, [allowed folders])]."""
    rows = []
    with open(layout_path, encoding="utf-8") as f:
        for line in f:
            m = ROW.match(line.strip())
            if m:
                rows.append((m.group(1), re.findall(r"`([a-z0-9_./-]+)`", m.group(2))))
    return rows


def owner(path, folders):
    """The longest folder of the table that holds `path`, or None."""
    best = None
    for folder in folders:
        if path.startswith(folder + "/") and (best is None or len(folder) > len(best)):
            best = folder
    return best


def sources(root):
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and
                             not (rel_dir == "." and (d + "/").startswith(SKIPPED)))
        for name in sorted(filenames):
            if SOURCE.search(name):
                yield os.path.normpath(os.path.join(rel_dir, name))


def check(root):
    """The broken rules, one line each."""
    layout = os.path.join(root, "docs", "layout.md")
    rows = read_rules(layout)
    if not rows:
        return [f"{layout}: no table of folders (| `folder/` | holds | may include |)"]
    folders = [folder for folder, _ in rows]
    allowed = dict(rows)
    errors = []
    for index, (folder, names) in enumerate(rows):
        for name in names:
            if name not in allowed:
                errors.append(f"docs/layout.md: `{folder}/` may include `{name}`, which has no row")
            elif folders.index(name) >= index:
                errors.append(f"docs/layout.md: `{folder}/` may include `{name}`, which is not above it")
    for path in sources(root):
        here = owner(path, folders)
        if here is None:
            errors.append(f"{path}: in no folder of docs/layout.md's table")
            continue
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            text = f.read()
        for m in INCLUDE.finditer(text):
            target = owner(m.group(1), folders)
            if target is None or target == here or target in allowed[here]:
                continue
            line = text.count("\n", 0, m.start()) + 1
            errors.append(f"{path}:{line}: includes {m.group(1)}, but `{here}/` may not include `{target}/` "
                          "(docs/layout.md)")
    return errors


def self_test():
    """A small tree with each kind of broken rule, and one without."""
    def tree(table, files):
        root = tempfile.mkdtemp(prefix="include_rules_")
        os.makedirs(os.path.join(root, "docs"))
        with open(os.path.join(root, "docs", "layout.md"), "w") as f:
            f.write("| folder | holds | may include |\n| --- | --- | --- |\n" + table)
        for path, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
            with open(os.path.join(root, path), "w") as f:
                f.write(text)
        return root

    table = "| `low/` | x | |\n| `high/` | y | `low` |\n| `high/sub/` | z | `low`, `high` |\n"
    good = {"low/a.hpp": "", "high/b.cpp": '#include "low/a.hpp"\n#include "high/c.hpp"\n',
            "high/sub/d.cpp": '#include "high/b.hpp"\n#include <vector>\n', "tests/t.cpp": '#include "x/y.hpp"\n'}
    failures = []
    if check(tree(table, good)):
        failures.append(f"a tree that keeps the rules was refused: {check(tree(table, good))}")
    cases = {
        "an include upwards": ({**good, "low/e.cpp": '#include "high/b.hpp"\n'}, "low/e.cpp:1: includes high/b.hpp"),
        "a subfolder's header from its parent": ({**good, "high/f.cpp": '#include "high/sub/d.hpp"\n'},
                                                  "high/f.cpp:1: includes high/sub/d.hpp"),
        "a folder without a row": ({**good, "other/g.cpp": ""}, "other/g.cpp: in no folder"),
        "a rule pointing down": (None, "`low/` may include `high`, which is not above it"),
    }
    for what, (files, expected) in cases.items():
        root = tree(table.replace("| `low/` | x | |", "| `low/` | x | `high` |"), good) if files is None \
            else tree(table, files)
        found = check(root)
        if not any(expected in e for e in found):
            failures.append(f"{what}: expected '{expected}', got {found}")
    return failures


def main():
    if sys.argv[1:] == ["--self-test"]:
        failures = self_test()
    elif len(sys.argv) == 2:
        failures = check(sys.argv[1])
    else:
        print(__doc__.strip().splitlines()[-2], file=sys.stderr)
        return 2
    for f in failures:
        print(f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
