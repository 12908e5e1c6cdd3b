#!/bin/bash
# run silent_hang (4 ranks, rank 1 blocks) and dump every worker's stack with py-spy while the others wait
set -u
OUT=$1
mkdir -p $OUT
cd /work/main/lab
LAB_PG_TIMEOUT=120 LAB_CULPRIT=1 LAB_STEP=10 PYTHONUNBUFFERED=1 \
  /work/main/.venv/bin/python -m torch.distributed.run --nnodes 1 --nproc-per-node 4 --rdzv-backend c10d --rdzv-endpoint localhost:0 silent_hang.py > $OUT/console.log 2>&1 &
TR=$!
sleep 25
PIDS=$(pgrep -f "silent_hang.py" | grep -v "^$TR$")
for p in $PIDS; do
  r=$(tr '\0' '\n' < /proc/$p/environ 2>/dev/null | grep '^RANK=' | cut -d= -f2)
  [ -z "$r" ] && continue
  /tmp/pyspyenv/bin/py-spy dump --pid $p > $OUT/pyspy_rank$r.txt 2>&1
  /tmp/pyspyenv/bin/py-spy dump --pid $p --json > $OUT/pyspy_rank$r.json 2>&1
done
kill -TERM $TR; sleep 3; pkill -9 -f silent_hang.py; true
