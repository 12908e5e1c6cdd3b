#!/usr/bin/env bash
# Generate the benchmark corpus under bench/data/ (deterministic; skipped when present
# and the generator has not changed).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
D=bench/data
STAMP=$D/.corpus-$(cat bench/gen_corpus.py | cksum | cut -d' ' -f1)
mkdir -p $D
if [ ! -e "$STAMP" ]; then
  rm -rf $D/rank-1g $D/rank-256m $D/noisy-256m $D/console-512m.log $D/small $D/.corpus-*
  $PY bench/gen_corpus.py $D/rank-1g --ranks 64 --total-mb 1024
  $PY bench/gen_corpus.py $D/rank-256m --ranks 64 --total-mb 256
  $PY bench/gen_corpus.py $D/noisy-256m --ranks 64 --total-mb 256 --noisy 0.01
  $PY bench/gen_corpus.py $D/console-512m --ranks 64 --total-mb 512 --single
  $PY bench/gen_corpus.py --small $D/small
  touch "$STAMP"
fi
$PY bench/literals.py $D/literals.txt
