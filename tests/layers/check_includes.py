#!/usr/bin/env python3
"""The include-layer check: every `#include "dir/..."` in src/ and include/
must name a folder that the including folder may call, by the layer graph
that the build declares (spate_layer(<name> ... DEPS ...) in each
src/<dir>/CMakeLists.txt, written by CMake into the graph file below).

usage: check_includes.py GRAPH_FILE SOURCE_ROOT

GRAPH_FILE has one line per layer: `<name> <folder> [<dep>...]`, the folder
relative to SOURCE_ROOT. A folder may include its own headers and those of
every layer its DEPS reach (the link check of spate_<name>_layercheck allows
the same). Public headers under include/ may include no folder of src/.
Prints one line per violation (file:line, the two folders, what is allowed)
and exits 1 when there is any, 2 when the graph itself is wrong.
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SOURCE_SUFFIXES = ('.c', '.h')


def read_graph(path):
    """{layer: (folder, [deps])} from the graph file CMake wrote."""
    graph = {}
    with open(path, encoding='utf-8') as f:
        for n, line in enumerate(f, 1):
            words = line.split()
            if not words or words[0].startswith('#'):
                continue
            if len(words) < 2:
                raise ValueError(f'{path}:{n}: a layer line needs a name and a folder: {line!r}')
            name, folder, deps = words[0], words[1], words[2:]
            if name in graph:
                raise ValueError(f'{path}:{n}: layer {name!r} is declared twice')
            graph[name] = (folder, deps)
    for name, (_, deps) in graph.items():
        for d in deps:
            if d not in graph:
                raise ValueError(f'layer {name!r} depends on {d!r}, which no spate_layer() declares')
    for name in graph:
        if name in reachable(graph, name):
            raise ValueError(f'layer {name!r} depends on itself through its DEPS: '
                             f'the layers must form a graph without cycles')
    return graph


def reachable(graph, name):
    """The layers `name` may call: its DEPS and theirs, transitively."""
    seen, todo = set(), list(graph[name][1])
    while todo:
        d = todo.pop()
        if d not in seen:
            seen.add(d)
            todo.extend(graph[d][1])
    return seen


def source_files(root, top):
    base = os.path.join(root, top)
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames.sort()
        for fn in sorted(filenames):
            if fn.endswith(SOURCE_SUFFIXES):
                yield os.path.join(dirpath, fn)


def include_folder(root, rel, name):
    """The folder of src/ an include names: "dir/x.h" is src/dir; a path
    with ".." is resolved from the including file's folder, so that
    "../dir/x.h" counts as src/dir too; None for "x.h" (the file's own
    folder) and for what lies outside src/."""
    if '..' in name.split('/'):
        path = os.path.normpath(os.path.join(os.path.dirname(rel), name))
        parts = path.split(os.sep)
        return parts[1] if len(parts) > 2 and parts[0] == 'src' else None
    if '/' not in name:
        return None
    return name.split('/', 1)[0]


def check(graph, root):
    """The violations, one message each."""
    by_folder = {folder: name for name, (folder, _) in graph.items()}
    allowed = {name: reachable(graph, name) | {name} for name in graph}
    src_dirs = set()
    if os.path.isdir(os.path.join(root, 'src')):
        src_dirs = {d for d in os.listdir(os.path.join(root, 'src'))
                    if os.path.isdir(os.path.join(root, 'src', d))}
    problems = []
    for top in ('src', 'include'):
        for path in source_files(root, top):
            rel = os.path.relpath(path, root)
            parts = rel.split(os.sep)
            with open(path, encoding='utf-8', errors='replace') as f:
                lines = f.readlines()
            for n, line in enumerate(lines, 1):
                m = INCLUDE.match(line)
                if m is None:
                    continue
                target = include_folder(root, rel, m.group(1))
                if target is None:
                    continue
                inc = line.strip()
                if top == 'include':
                    if target in src_dirs or target in graph:
                        problems.append(
                            f'{rel}:{n}: the public API (include/) includes src/{target}: '
                            f'{inc}; public headers include only <spate/...> headers')
                    continue
                folder = 'src/' + parts[1] if len(parts) > 2 else None
                if folder is None:
                    continue
                layer = by_folder.get(folder)
                if layer is None:
                    problems.append(f'{rel}:{n}: {folder} declares no layer '
                                    f'(spate_layer() in {folder}/CMakeLists.txt), so it may '
                                    f'include nothing of another folder: {inc}')
                    continue
                if target not in graph:
                    if target in src_dirs:
                        problems.append(f'{rel}:{n}: {folder} includes src/{target}, which '
                                        f'declares no layer: {inc}')
                    continue
                if target not in allowed[layer]:
                    may = ' '.join(sorted(allowed[layer] - {layer})) or 'nothing'
                    problems.append(
                        f'{rel}:{n}: layer {layer} ({folder}) includes layer {target} '
                        f'({graph[target][0]}), which its DEPS do not allow: {inc} '
                        f'({layer} may include: {may})')
    return problems


def main(argv):
    if len(argv) != 3:
        print('usage: check_includes.py GRAPH_FILE SOURCE_ROOT', file=sys.stderr)
        return 2
    try:
        graph = read_graph(argv[1])
    except (OSError, ValueError) as e:
        print(f'check_includes: {e}', file=sys.stderr)
        return 2
    problems = check(graph, argv[2])
    for p in problems:
        print(p)
    if problems:
        print(f'check_includes: {len(problems)} include(s) against the layer graph '
              f'(src/*/CMakeLists.txt, spate_layer DEPS)', file=sys.stderr)
        return 1
    print(f'check_includes: {len(graph)} layers, every include allowed')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
