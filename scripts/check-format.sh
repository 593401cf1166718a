#!/bin/sh
# Fails, listing the files, when clang-format would change any C file.
set -u
cf=${1:-clang-format}
files=$(git ls-files --cached --others --exclude-standard '*.c' '*.h')
bad=""
for f in $files; do
    if [ -f "$f" ] && ! "$cf" --dry-run -Werror "$f" >/dev/null 2>&1; then
        bad="$bad $f"
    fi
done
if [ -n "$bad" ]; then
    echo "clang-format would change these files (run 'make format'):"
    printf '  %s\n' $bad
    exit 1
fi
echo "clang-format: $(echo "$files" | wc -w) files as formatted"
