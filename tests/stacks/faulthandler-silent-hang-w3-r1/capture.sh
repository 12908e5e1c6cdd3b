#!/bin/bash
set -u
OUT=$1; mkdir -p $OUT; cd /work/main/lab
LAB_PG_TIMEOUT=120 LAB_CULPRIT=1 LAB_STEP=10 PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1 \
  /work/main/.venv/bin/python -m torch.distributed.run --nnodes 1 --nproc-per-node 3 --rdzv-backend c10d --rdzv-endpoint localhost:0 \
  --log-dir $OUT/logs --redirects 3 silent_hang.py > $OUT/console.log 2>&1 &
TR=$!
sleep 25
for p in $(pgrep -f "silent_hang.py" | grep -v "^$TR$"); do
  r=$(tr '\0' '\n' < /proc/$p/environ 2>/dev/null | grep '^RANK=' | cut -d= -f2)
  [ -n "$r" ] && kill -ABRT $p
done
sleep 8; kill -TERM $TR 2>/dev/null; sleep 2; pkill -9 -f silent_hang.py; true
