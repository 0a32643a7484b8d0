#!/usr/bin/env python3
# The largest relative difference between the numbers of two JSON documents of the same shape (two
# binaries' run results), for a change that may move simulated numbers within a stated error
# (scripts/flow-identity.sh --reldiff). Walks both trees in parallel: at each pair of numbers
# |a - b| / max(|a|, |b|) (0 when both are 0); any other difference (a key or list length, a string,
# a number against something else) is non-numeric, and the first one met is reported too. Keys
# given with --ignore (any depth) are left out (simulated_iterations: it counts re-used records,
# not a result). Prints one line, `max_rel <value> at <path>`, followed by `; non-numeric <path>`
# when there is such a difference, and exits 0 either way.
# Cost: one pass over both documents.
#
# Usage: scripts/json_reldiff.py [--ignore KEY]... OLD.json NEW.json
import json
import sys


def walk(a, b, path, ignore, best):
    """Updates best = [max relative difference, its path, first shape difference or None]."""
    if isinstance(a, bool) or isinstance(b, bool) or not (isinstance(a, (int, float)) and isinstance(b, (int, float))):
        if type(a) is not type(b):
            best[2] = best[2] or path
        elif isinstance(a, dict):
            if a.keys() != b.keys():
                best[2] = best[2] or path
            for k in a:
                if k in b and k not in ignore:
                    walk(a[k], b[k], f"{path}.{k}", ignore, best)
        elif isinstance(a, list):
            if len(a) != len(b):
                best[2] = best[2] or path
            for i, (x, y) in enumerate(zip(a, b)):
                walk(x, y, f"{path}[{i}]", ignore, best)
        elif a != b:
            best[2] = best[2] or path
        return
    m = max(abs(a), abs(b))
    r = abs(a - b) / m if m > 0 else 0.0
    if r > best[0]:
        best[0], best[1] = r, path


def main(argv):
    ignore, files = set(), []
    i = 0
    while i < len(argv):
        if argv[i] == "--ignore" and i + 1 < len(argv):
            ignore.add(argv[i + 1])
            i += 2
        else:
            files.append(argv[i])
            i += 1
    if len(files) != 2:
        sys.exit("usage: json_reldiff.py [--ignore KEY]... OLD.json NEW.json")
    with open(files[0]) as f:
        a = json.load(f)
    with open(files[1]) as f:
        b = json.load(f)
    best = [0.0, "$", None]
    walk(a, b, "$", ignore, best)
    print(f"max_rel {best[0]:.3e} at {best[1]}" + (f"; non-numeric {best[2]}" if best[2] else ""))


if __name__ == "__main__":
    main(sys.argv[1:])
