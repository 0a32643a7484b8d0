#!/usr/bin/env python3
"""The module layering holds: a file of src/<module>/ includes only headers of its own module or of
modules the build orders before it (the order of `subdir('src/...')` in meson.build, each library
linking only earlier ones). Prints every violation as FILE:LINE: MODULE includes LATER_MODULE.
Usage: layering_test.py SOURCE_ROOT"""
import os
import re
import sys

root = sys.argv[1]
order = re.findall(r"subdir\('src/([a-z_]+)'\)", open(os.path.join(root, 'meson.build')).read())
rank = {m: i for i, m in enumerate(order)}
include = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/')
bad, files = [], 0
for module in order:
    for dirpath, _, names in os.walk(os.path.join(root, 'src', module)):
        for name in sorted(names):
            if not name.endswith(('.hpp', '.cpp', '.cu', '.h')):
                continue
            files += 1
            path = os.path.join(dirpath, name)
            for n, line in enumerate(open(path, encoding='utf-8'), 1):
                m = include.match(line)
                if m and m.group(1) in rank and rank[m.group(1)] > rank[module]:
                    bad.append(f'{os.path.relpath(path, root)}:{n}: {module} includes {m.group(1)}, '
                               f'which the build orders after it')
for b in bad:
    print(b)
print(f'{files} files of {len(order)} modules ({", ".join(order)}): {len(bad)} include(s) against the build order')
print(f'{0 if bad else 1} passed, {1 if bad else 0} failed')
sys.exit(1 if bad else 0)
