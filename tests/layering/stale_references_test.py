#!/usr/bin/env python3
"""No stale references in the docs (issue 34, item 2):
1. every repository path a doc names in backticks exists: in README.md, docs/*.md, examples/README.md,
   models/README.md, topologies/README.md and traces/README.md, a backticked word that contains '/'
   and starts with src/, docs/, tests/, scripts/, models/, topologies/, traces/, validation/,
   examples/ or layouts/ (a trailing
   ':LINE', '#anchor' or punctuation is dropped; a word with a placeholder, '<...>', '*', '{' or
   '...', or a path component in capitals such as models/M.yaml, is a pattern, not a path, and is
   matched as a glob where it has '*', else skipped). A path that is not here is another project's
   when its line or the line before names that project (NCCL, msccl-tools, DeepEP: the docs cite
   their sources, e.g. NVIDIA/nccl `src/graph/topo.h`); any other missing path is stale;
2. every 'model.md §N' citation in src/ names a '## §N' heading of docs/model.md, and where the
   citation quotes a subsection ('docs/model.md §4 "Title"'), a heading of that title exists;
3. src/README.md's module map lists every folder of src/, in the build order of meson.build.
Prints each stale reference as FILE:LINE: what. Usage: stale_references_test.py SOURCE_ROOT"""
import glob
import os
import re
import sys

root = sys.argv[1]
docs = ['README.md', 'src/README.md', 'models/README.md', 'topologies/README.md', 'traces/README.md',
        'examples/README.md'] + sorted(
    os.path.relpath(p, root) for p in glob.glob(os.path.join(root, 'docs', '*.md')))
prefixes = ('src/', 'docs/', 'tests/', 'scripts/', 'models/', 'topologies/', 'traces/', 'validation/',
            'examples/', 'layouts/')
bad, paths, external, cites = [], 0, 0, 0

# 1. Paths in backticks. A word is a run without blanks inside one backtick span.
for doc in docs:
    prev = ''
    for n, line in enumerate(open(os.path.join(root, doc), encoding='utf-8'), 1):
        foreign = re.search(r'nccl|msccl|deepep', prev + line, re.IGNORECASE)
        prev = line
        for span in re.findall(r'`([^`]+)`', line):
            for word in span.split():
                if not word.startswith(prefixes):
                    continue
                word = re.sub(r'(:\d+(-\d+)?|#[\w-]*)$', '', word.rstrip('.,;:)'))
                if '<' in word or '{' in word or '...' in word or re.search(r'(^|/)[A-Z][A-Z0-9_]*(\.|/|$)', word):
                    if '*' not in word:
                        continue  # a placeholder such as traces/NAME.json: not a path
                paths += 1
                found = glob.glob(os.path.join(root, word)) if '*' in word else \
                    [word] if os.path.exists(os.path.join(root, word)) else []
                if not found and foreign:
                    external += 1
                elif not found:
                    bad.append(f'{doc}:{n}: `{word}` does not exist')

# 2. docs/model.md section citations in src/.
heads = [l.strip() for l in open(os.path.join(root, 'docs', 'model.md'), encoding='utf-8')
         if l.startswith('#')]
sections = {m.group(1) for h in heads for m in [re.match(r'#+\s*§(\d+)\b', h)] if m}
titles = {re.sub(r'^#+\s*(§[\d.]+\s*)?', '', h).lower() for h in heads}
cite = re.compile(r'model\.md[ ,]*§(\d+)(?:\s+"([^"]+)")?')
for dirpath, _, names in os.walk(os.path.join(root, 'src')):
    for name in sorted(names):
        path = os.path.join(dirpath, name)
        try:
            text = open(path, encoding='utf-8').read()
        except UnicodeDecodeError:
            continue
        for n, line in enumerate(text.splitlines(), 1):
            for m in cite.finditer(line):
                cites += 1
                where = f'{os.path.relpath(path, root)}:{n}'
                if m.group(1) not in sections:
                    bad.append(f'{where}: docs/model.md has no section §{m.group(1)} '
                               f'(it has §{", §".join(sorted(sections))})')
                elif m.group(2) and m.group(2).lower() not in titles:
                    bad.append(f'{where}: docs/model.md has no heading "{m.group(2)}"')

# 3. The module map.
order = re.findall(r"subdir\('src/([a-z_]+)'\)", open(os.path.join(root, 'meson.build')).read())
folders = sorted(d for d in os.listdir(os.path.join(root, 'src'))
                 if os.path.isdir(os.path.join(root, 'src', d)))
mapped = re.findall(r'^\| `([a-z_]+)/` \|', open(os.path.join(root, 'src', 'README.md'),
                                                 encoding='utf-8').read(), re.MULTILINE)
if mapped != order or sorted(mapped) != folders:
    bad.append(f'src/README.md: the module map lists {", ".join(mapped)}; the build orders '
               f'{", ".join(order)}; src/ holds {", ".join(folders)}')

for b in bad:
    print(b)
print(f'{paths} path(s) in {len(docs)} docs ({external} of another project), {cites} docs/model.md citation(s) in src/, '
      f'{len(mapped)} module(s) mapped: {len(bad)} stale')
print(f'{0 if bad else 1} passed, {1 if bad else 0} failed')
sys.exit(1 if bad else 0)
