"""new-kinds: fault kinds the other lab scripts never injected (``LAB_FAULT`` picks one).

A small DDP job (TinyNet, 12 steps of 0.1 s, gloo) in which rank ``LAB_CULPRIT`` (or the
ranks ``LAB_CULPRITS=a,b``) misbehaves at step ``LAB_STEP``.  Each fault is an ordinary bug
or accident of real training code; what the logs show is whatever torch, torchrun and this
script print while it happens:

* ``early-exit``      the culprit's shard holds only LAB_STEP batches: it leaves the loop,
                      logs that it is done, destroys its process group and exits 0 while
                      its peers wait in the next gradient all_reduce (uneven inputs).
* ``cpu-alloc``       the culprit builds a feature cache with a size computed from a bad
                      config value: ``torch.empty`` of 2**42 floats fails in the CPU
                      allocator (host memory) and the exception ends the rank.
* ``segfault``        the culprit's native extension dereferences a null pointer
                      (``ctypes.string_at(0)``): SIGSEGV, no Python traceback (with
                      ``PYTHONFAULTHANDLER=1`` faulthandler prints the stack).
* ``monitored-barrier`` every rank prepares its data and then meets in
                      ``dist.monitored_barrier(timeout=LAB_BARRIER_TIMEOUT)``; the culprit's
                      preparation takes 3x that long (progress lines).
* ``detail-mismatch`` under ``TORCH_DISTRIBUTED_DEBUG=DETAIL`` the culprit broadcasts a
                      metric where its peers all_reduce it (same shape).
* ``allgather-uneven`` at LAB_STEP every rank all_gathers its predictions for a metric; the
                      culprit's last batch is short (5 rows where the peers have 8).
* ``broadcast-src``   at LAB_STEP the culprit broadcasts a flag with itself as the source
                      while its peers expect it from rank 0.
* ``dl-worker-exception`` the culprit's DataLoader worker reads a corrupt record at sample
                      LAB_STEP*8+3 and raises ValueError in the worker process.
* ``restart-exception`` the culprit raises KeyError('labels') on a malformed sample at
                      LAB_STEP on every attempt; torchrun restarts the group (--max-restarts).
* ``ckpt-missing-dir`` the culprit is the rank that saves checkpoints; at LAB_STEP it saves
                      into ``LAB_CKPT_DIR``, a folder that does not exist.
* ``none``            a healthy run: DETAIL debug mode, a monitored_barrier and a checkpoint
                      save by rank 0 at the end.

A second set (``--fresh 7``), written down after the first had run:

* ``detail-allreduce`` no DDP (gradients averaged by hand with all_reduce, which DETAIL mode
                      accepts where DDP's constructor crashed in torch 2.13), under
                      ``TORCH_DISTRIBUTED_DEBUG=DETAIL``: at LAB_STEP the culprit broadcasts its
                      loss where the others all_reduce it.
* ``none-noddp``      the same hand-averaged job under DETAIL, healthy.
* ``exit-silent``     the culprit's library calls ``os._exit(3)`` at LAB_STEP: no traceback, no
                      message, exit code 3.
* ``abort``           the culprit's native code calls ``abort()`` at LAB_STEP (``os.abort``):
                      SIGABRT, exit -6, no message.
* ``dtype-matmul``    the culprit's batch arrives as float64 at LAB_STEP: the Linear layer
                      raises a dtype mismatch.
* ``ckpt-stale``      at LAB_STEP every rank resumes from a checkpoint; the culprit's path points
                      at a stale one of a model with another hidden size.
* ``ckpt-truncated``  at LAB_STEP every rank resumes from a checkpoint; the culprit's copy is
                      cut in half (a copy that did not finish).

A third set (``--fresh 8``), written down after the second had been learned from:

* ``compile-fullgraph`` the step's loss is computed by a ``torch.compile(fullgraph=True)``'d
                      function whose short-batch branch calls ``.item()``; at LAB_STEP the
                      culprit's batch is short (7 rows), dynamo recompiles for it and refuses
                      the graph break.
* ``unused-one-rank`` the model has an auxiliary head used only when a batch carries auxiliary
                      targets; at LAB_STEP the culprit's batch has none, so its aux head gets no
                      gradient (DDP, find_unused_parameters=False).
* ``late-init``       the culprit's process starts 2.5x the timeout late (a slow image pull),
                      printing progress, before it calls init_process_group.
* ``eval-exception``  at LAB_STEP the culprit runs the evaluation alone (on an empty eval
                      split: ZeroDivisionError) while the others wait in dist.barrier().

A fourth set (``--fresh 9``), written down after the third had been learned from:

* ``rank-dup``        the culprit's launch script overrides RANK with the next rank's number
                      (a copy-paste in a per-node script): two processes claim one rank and the
                      culprit's own rank is never taken.
* ``world-plus-one``  the culprit's script overrides WORLD_SIZE with one more than the job has.
* ``barrier-one-rank`` at LAB_STEP only the culprit calls dist.barrier() (a debug barrier left
                      in a rank-dependent branch).
* ``pickle-object``   at LAB_STEP every rank calls broadcast_object_list from the culprit, whose
                      object holds a lambda that cannot be pickled.
* ``anomaly-nan``     anomaly detection is on everywhere; at LAB_STEP the culprit's batch holds a
                      NaN and its backward raises anomaly mode's "returned nan values".
* ``hook-exception``  the culprit's gradient hook raises ValueError at LAB_STEP.

A fifth set (``--fresh 10``), written down after the fourth had been learned from:

* ``ckpt-disk-full``  the culprit saves a checkpoint at LAB_STEP to a disk that is full
                      (``LAB_CKPT_PATH``, /dev/full: every write fails with ENOSPC).
* ``recursion``       at LAB_STEP the culprit resolves a config whose entry refers to itself:
                      the resolver recurses until RecursionError.
* ``alltoall-split``  at LAB_STEP every rank exchanges tokens with all_to_all_single (an MoE
                      dispatch); the culprit's split sizes add up to more rows than its peers
                      expect from it.
* ``dcp-skip``        at LAB_STEP every rank saves a torch.distributed.checkpoint, except the
                      culprit, whose rank-dependent branch skips it and goes on training.
* ``sigterm-one``     at LAB_STEP the culprit process receives SIGTERM from outside the job
                      (a node agent, a pre-emption), not from torchrun.
* ``frozen-one-rank`` before DDP wraps the model, the culprit freezes its first layer (a
                      fine-tuning option read on one rank only): the ranks' models differ in
                      which parameters need gradients.

A sixth set (``--fresh 11``), written down after the fifth had been learned from:

* ``wrong-master-port`` the culprit's launch script sets MASTER_PORT to another port than the
                      job's before init_process_group: it cannot reach the job's store.
* ``skip-step``       at LAB_STEP the culprit's step raises inside a try block that logs a
                      warning and skips the batch (no backward, so no gradient all_reduce).
* ``corrupt-shard``   at LAB_STEP the culprit unpickles its next data shard, whose bytes are
                      corrupt (an interrupted copy): UnpicklingError.
* ``sysexit-msg``     at LAB_STEP the culprit's health check calls sys.exit with a message (the
                      message on stderr, exit status 1, no traceback).
* ``sigint-one``      at LAB_STEP the culprit process receives SIGINT (a Ctrl-C sent to it
                      alone): KeyboardInterrupt.

A seventh set (``--fresh 12``), written down after the sixth had been learned from:

* ``nosync-one-rank`` at LAB_STEP the culprit runs its backward under DDP's no_sync() (a gradient
                      accumulation counter that is off by one on that rank): one gradient
                      all_reduce fewer, and no line says so.
* ``broadcast-shape`` at LAB_STEP rank 0 broadcasts a vocabulary table of 10 rows; the culprit's
                      receive buffer has 8 (its own config lacks two special tokens).
* ``double-init``     at LAB_STEP the culprit's evaluation helper calls init_process_group again.
* ``pg-destroyed-early`` at LAB_STEP the culprit's evaluation helper destroys the process group,
                      and its next gradient all_reduce finds none.
* ``subgroup-barrier`` every rank builds a group of all ranks at start; at LAB_STEP the others
                      wait in a barrier on that group while the culprit waits in a barrier on
                      the default group.

An eighth set (``--fresh 13``), written down after the seventh had been learned from:

* ``lr-divergence``   at LAB_STEP a learning-rate schedule's bug sets every rank's rate to 1e6:
                      the loss overflows on every rank at once and each rank's NaN check raises
                      (a job-wide divergence that no rank started).
* ``unused-all``      every rank's model has an auxiliary head that no batch uses (DDP,
                      find_unused_parameters=False): every rank fails the same way at step 2.
* ``world-minus-one`` the culprit's launch script sets WORLD_SIZE one smaller than the job's.
* ``sampler-rank``    every rank builds its DistributedSampler with rank+1 (1-based numbering by
                      mistake); the last rank's is out of range.

A ninth set (``--fresh 14``), written down after the eighth had been learned from:

* ``thread-exception-hang`` at LAB_STEP the culprit hands its next batch to a prefetch thread
                      that raises KeyError on a record without targets; the main thread waits on
                      the thread's queue forever while its peers wait in the next all_reduce.
* ``fd-leak``         the culprit's feature cache opens a file per sample and never closes it;
                      on a node whose open-file limit is 256 (``ulimit -n``) the culprit fails
                      with ``OSError: [Errno 24] Too many open files`` at LAB_STEP.
* ``store-get-missing`` at LAB_STEP rank 0 publishes ``eval_ready`` in the job's c10d store and
                      every rank waits for it (5 s); the culprit waits for ``eval-ready`` (a
                      key misspelt on one code path) and its store wait times out.
* ``inplace-autograd`` at LAB_STEP the culprit clips its batch's sigmoid outputs in place
                      (``clamp_``), which autograd still needs for the backward.
* ``import-missing``  at LAB_STEP the culprit (the rank that reports metrics) imports its
                      experiment tracker, which is not installed on its host (``wandb``).
* ``resume-missing-all`` at LAB_STEP every rank resumes from a checkpoint path that does not
                      exist (a wrong ``--resume`` argument): a job-wide error no rank started.

A tenth set (``--fresh 15``), written down after the ninth had been learned from:

* ``allreduce-dtype`` at LAB_STEP every rank all_reduces a metric; the culprit's is float64 (its
                      metric code upcasts), the others' float32.
* ``crash-before-init`` the culprit's launch wrapper parses a per-node setting before
                      init_process_group and raises ValueError on a malformed value; the others
                      wait in init for it.
* ``master-addr-typo`` the culprit's launch script sets MASTER_ADDR to a host name that does not
                      resolve (a typo in a per-node script).
* ``cpu-alloc-all``   at LAB_STEP every rank builds a feature cache whose size comes from a bad
                      config value (2**38 rows): every rank's CPU allocator refuses (job-wide).
* ``none-handled``    a healthy run: at LAB_STEP the culprit's metrics upload fails and the
                      error is logged with its traceback (``log.exception``) and skipped; every
                      rank finishes.

An eleventh set (``--fresh 16``), written down after the tenth had been learned from:

* ``dl-worker-segv``  the culprit's DataLoader worker decodes record LAB_STEP*8+3 with a native
                      routine that dereferences a null pointer: the worker dies of SIGSEGV and
                      the DataLoader raises in the main process.
* ``optim-resume-all`` at LAB_STEP every rank resumes its optimizer from a state rank 0 saved with
                      another optimizer layout (two parameter groups, from an older config):
                      every rank's load_state_dict refuses (job-wide).
* ``p2p-tag-mismatch`` at LAB_STEP every rank sends a boundary tensor to the next rank and
                      receives one from the previous rank (isend/irecv, tag 0); the culprit sends
                      with tag 7 (a constant changed on one code path), so the next rank's receive
                      never matches and both sides wait until the timeout.
* ``none-slow-eval``  a healthy run: at LAB_STEP the culprit evaluates for 3 s (well inside the
                      10 s timeout) while the others wait in a barrier; every rank finishes.

A twelfth set (``--fresh 17``), written down after the eleventh had been learned from:

* ``backward-twice``  at LAB_STEP the culprit runs a second backward through the same graph (a
                      debug gradient-norm probe added on one code path): autograd refuses.
* ``comm-hook-exception`` every rank registers a DDP communication hook (a gradient compression
                      hook); at LAB_STEP the culprit's hook raises on a bucket it cannot compress.
* ``exit-zero-quiet`` at LAB_STEP the culprit's stop condition, computed from its own shard's
                      length, ends the process with ``sys.exit(0)``: no message, exit code 0, while
                      its peers wait in the next gradient all_reduce.

A thirteenth set (``--fresh 18``), written down after the twelfth had been learned from:

* ``weights-only-all`` at LAB_STEP rank 0 saves a checkpoint that also holds the run's
                      ``argparse.Namespace``; every rank resumes from it with ``torch.load``'s
                      default ``weights_only=True``, which refuses the Namespace (job-wide).
* ``nccl-unavailable-all`` every rank asks ``init_process_group`` for the nccl backend on a
                      CPU-only build of torch (the launch config of a GPU cluster run on the
                      wrong image): no rank starts (job-wide).
* ``nonfinite-clip``  at LAB_STEP the culprit's batch carries an inf feature: its loss is inf, the
                      gradient all_reduce spreads the non-finite values to every rank, and every
                      rank's ``clip_grad_norm_(error_if_nonfinite=True)`` raises.
* ``shard-missing``   at LAB_STEP the culprit opens the next data shard of its own, which was never
                      written (FileNotFoundError) while its peers go on to the next all_reduce.
* ``none-recompile-limit`` a healthy run: every rank's compiled metric sees a new batch length at
                      each step, dynamo hits its recompile limit (4) and runs the rest eagerly,
                      with its warnings; every rank finishes.

A fourteenth set (``--fresh 19``), written down after the thirteenth had been learned from:

* ``mkdir-race-all``  at LAB_STEP every rank creates the checkpoint folder with ``os.makedirs``
                      and no ``exist_ok``: the first rank to get there wins, every other rank
                      raises FileExistsError (job-wide; which rank wins is a race).
* ``dl-timeout``      the culprit's DataLoader (one worker, ``timeout=2``) waits on a record
                      that takes 6 s to read (LAB_STEP*8+3, a slow network read): the DataLoader
                      raises its timeout while the peers wait in the next all_reduce.
* ``unicode-shard``   at LAB_STEP the culprit reads a text shard with a byte that is not UTF-8.
* ``none-join-uneven`` a healthy run with uneven inputs: the culprit has only LAB_STEP batches and
                      every rank trains inside DDP's ``join()`` context, which shadows the
                      missing all_reduces; every rank finishes.

A fifteenth set (``--fresh 20``), written down after the fourteenth had been learned from:

* ``segfault-at-exit`` every rank trains to the end and logs that it finished; then the culprit's
                      native extension crashes in its exit handler (a null pointer, SIGSEGV): the
                      job's work is done, but the launcher reports the culprit's death.
* ``py-memoryerror``  at LAB_STEP the culprit caches its shard's decoded samples in a Python buffer
                      sized from a bad config value: ``bytearray`` raises MemoryError.
* ``none-retry-errors`` a healthy run: at LAB_STEP the culprit's metrics upload fails twice with an
                      ERROR record (no traceback) and succeeds on its third try, and every rank's
                      library emits a UserWarning; every rank finishes.

A sixteenth set (``--fresh 21``), written down after the fifteenth had been measured:

* ``noise-then-crash`` at step 1 the rank after the culprit logs an ERROR record that its optional
                      fused kernel could not load (``libcudart.so.12: cannot open shared object
                      file``) and goes on with the fallback; at LAB_STEP the culprit raises
                      ValueError on a label out of range while the others wait.
* ``chained-disk-full`` at LAB_STEP the culprit saves a checkpoint to a full disk (``/dev/full``); its
                      checkpoint helper catches torch's write error and raises a RuntimeError from it
                      (``The above exception was the direct cause of the following exception``).

A seventeenth set (``--fresh 22``), written down after the sixteenth had been learned from:

* ``tqdm-straggler``  at LAB_STEP every rank meets in a barrier after evaluation; the culprit's
                      evaluation, drawn as a tqdm progress bar, takes three times the process
                      group's timeout, so its peers' barrier times out.
* ``main-first-exception`` at LAB_STEP rank 0 prepares a data split while the others wait for it in
                      a barrier ("main process first"); rank 0 cannot find the raw file and raises.

An eighteenth set (``--fresh 23``), written down after the seventeenth had been learned from:

* ``static-graph-change`` DDP with ``static_graph=True`` over the model with an auxiliary head; at
                      LAB_STEP the culprit's batch carries no auxiliary targets, so its graph
                      leaves the head out (the graph DDP recorded at the first step had it).
* ``gather-list-nondst`` at LAB_STEP every rank gathers its metric to rank 0 with ``dist.gather``;
                      the culprit's metrics helper passes a ``gather_list`` although it is not the
                      destination.
* ``none-oom-retry``  a healthy run: at LAB_STEP the culprit tries to build an in-memory feature
                      cache too large for host memory, logs the allocator's error with its
                      traceback (``log.exception``) and goes on without the cache.

A nineteenth set (``--fresh 24``), written down after the eighteenth had been learned from:

* ``group-order``     at LAB_STEP every rank builds two sub-groups (the even ranks and the odd
                      ranks) with ``dist.new_group``, each rank in the same order except the
                      culprit, whose code builds them the other way round; then each rank
                      all_reduces a metric in its own sub-group.
* ``none-atexit-error`` a healthy run: every rank trains to the end and exits; the culprit's
                      metrics client flushes in an ``atexit`` handler that cannot reach its
                      endpoint (Python prints "Error in atexit._run_exitfuncs" with the traceback).

A twentieth set (``--fresh 25``), written down after the nineteenth had been learned from:

* ``scatter-short``   at LAB_STEP rank 0 (always the culprit) scatters per-rank loss weights to every rank from a list
                      built for one rank fewer than the job has (a world size cached before a
                      resize).

A twenty-first set (``--fresh 26``), written down after the twentieth had been learned from:

* ``ckpt-read-race``  at LAB_STEP rank 0 saves a checkpoint the slow way (half the bytes, a flush,
                      3 s on a slow file system, then the rest) while the culprit, which evaluates
                      every new checkpoint, loads it as soon as the file appears: no barrier
                      between the save and the load, so it reads a zip archive cut in half.
* ``new-group-skip``  at LAB_STEP every rank but the culprit builds a sub-group of all ranks for
                      its metrics with ``dist.new_group`` (the culprit's branch skips it: it
                      logs no metrics) and all_reduces a metric in it; the culprit goes on to the
                      next step's gradient all_reduce.
* ``none-nan-skip``   a healthy run with a guard against non-finite losses: every step each rank
                      computes its loss first and all_reduces a flag; at LAB_STEP the culprit's batch
                      holds a NaN, it logs a warning with the NaN loss, and every rank skips that
                      step's update together; training goes on to the end.

A twenty-second set (``--fresh 27``), written down after the twenty-first had been learned from:

* ``oom-skip-desync`` the training loop catches a failed allocation and skips the batch, a
                      common "skip the batch on OOM" guard: at LAB_STEP the culprit's augmentation
                      cache cannot be allocated (the CPU allocator refuses), it logs a warning and
                      goes on to the next batch without a backward, so from then on its gradient
                      all_reduces pair with its peers' previous ones, and it finishes one all_reduce
                      short while its peers wait in their last.

(A restart that recovers, ``torchrun --max-restarts 1`` after a transient error in the first attempt,
was tried first and dropped: under gloo in torch 2.13 the restarted workers' init_process_group
fails with "Gloo connectFullMesh failed ... Connection refused" against the first attempt's
addresses, so the job could not recover here.)

A twenty-third set (``--fresh 28``), written down after set DZ was measured and before it was learned from:

* ``uneven-epoch-eval`` the culprit's shard holds only LAB_STEP batches: its epoch ends first, it
                      logs that and runs validation, whose all_reduce of the validation loss (one
                      element) meets its peers' next gradient all_reduce.
* ``none-early-stop`` a healthy run that stops early on purpose: at LAB_STEP every rank all_reduces
                      its "validation loss has not improved" flag, every rank logs that it stops
                      early, and the job finishes with the usual final barrier and checkpoint.

(A rank that sends to a destination one past the last rank, ``dist.send(t, dst=world)``, was tried
for this draw and dropped: under gloo in torch 2.13 the send blocks instead of raising.)

A twenty-fourth set (``--fresh 29``), written down after set EA was measured and before it was learned from:

* ``timeout-mismatch`` the culprit writes evaluation samples for 0.6 x LAB_PG_TIMEOUT at LAB_STEP
                      while the next rank, whose node's env file sets a collective timeout of
                      0.3 x LAB_PG_TIMEOUT, waits for it in the gradient all_reduce: that rank times
                      out first (the others' timeout has not run out), the job falls apart, and the
                      slow rank is where it started.
* ``none-resume-start`` a healthy run that starts by resuming: rank 0 writes the previous job's
                      checkpoint, every rank loads it after a barrier, logs that it resumes, and
                      trains to the end.

A twenty-fifth set (``--fresh 30``), written down while set EB was being collected, before either was measured:

* ``custom-backward-exception`` the model's output goes through a custom autograd Function (a
                      fused GELU) whose backward rejects a non-contiguous gradient; at LAB_STEP the
                      culprit's gradient reaches it transposed and the backward raises on that rank
                      while its peers wait in DDP's gradient all_reduce.
* ``none-tqdm-all-ranks`` a healthy run in which every rank draws its own tqdm bar over the
                      training steps (to stderr) and trains to the end.

A twenty-sixth set (``--fresh 31``), written down while set EC was being collected, before either was measured:

* ``bn-single-sample`` the model has a BatchNorm1d; at LAB_STEP the culprit's shard ends in a batch
                      of one sample (drop_last=False), and BatchNorm's training-mode check raises on
                      that rank while its peers wait in DDP's gradient all_reduce.
* ``none-grad-accum`` a healthy run with gradient accumulation: every other micro-batch runs its
                      backward under DDP's ``no_sync()``, and the job trains to the end.

A twenty-seventh set (``--fresh 32``), written down while set ED was being collected, before either was measured:

* ``dl-worker-sigbus`` the culprit's DataLoader worker reads record LAB_STEP*8+3 through a shared-
                      memory mapping (in /dev/shm) whose backing file has shrunk under it, as when
                      a small /dev/shm fills: the worker dies of a real SIGBUS, PyTorch prints its
                      "insufficient shared memory (shm)" hint and the DataLoader raises in the
                      main process, while the peers wait in DDP's gradient all_reduce.
* ``none-dcp-save``   a healthy run that writes a distributed checkpoint
                      (torch.distributed.checkpoint, one shard per rank) at LAB_STEP, loads it
                      back on every rank, and trains to the end.

A twenty-eighth set (``--fresh 33``), written down while set EE was being collected, before either was measured:

* ``gather-object-unpicklable`` at LAB_STEP every rank gathers its evaluation metrics with
                      all_gather_object; the culprit's dict carries the formatter callback (a
                      lambda) that its metric logger attached, pickling fails on that rank, and
                      its peers wait in the object gather until the timeout.
* ``none-deprecation-warnings`` a healthy run that uses the deprecated torch.cuda.amp API on a
                      machine without CUDA: every rank prints FutureWarning / UserWarning lines
                      (GradScaler at start, autocast at every step) and trains to the end.

A twenty-ninth set (``--fresh 34``), written down while set EF was being collected, before either was measured:

* ``broadcast-src-mismatch`` at LAB_STEP every rank broadcasts the run config from the leader
                      rank 0, but the culprit, whose node config names itself the leader,
                      broadcasts from its own rank: the two sources' sends never match and the
                      ranks time out in the broadcast (and the barrier after it).
* ``none-signal-checkpoint`` a healthy run in which the scheduler's warning signal (SIGUSR1,
                      as Slurm's --signal sends it before a preemption) reaches rank 0 at
                      LAB_STEP: its handler asks for a checkpoint, every rank saves one at the
                      next step and the job trains to the end.

A thirtieth set (``--fresh 35``), written down while set EG was being collected, before either was measured:

* ``stopiteration-short-shard`` the training loop pulls one batch per step by hand from a
                      generator that wraps the data iterator (``next(it)``); the culprit's shard holds
                      only LAB_STEP batches, so at LAB_STEP its ``next`` raises StopIteration inside
                      the generator, which Python turns into ``RuntimeError: generator raised
                      StopIteration`` (PEP 479), and the rank dies while its peers wait in the next
                      gradient all_reduce.
* ``none-profiler-table`` a healthy run in which every rank profiles two steps from LAB_STEP with
                      ``torch.profiler`` and prints the operator table (rows such as
                      ``gloo:all_reduce``, ``aten::...`` and the CPU time totals) into its log, and
                      trains to the end.

A thirty-first set (``--fresh 36``), written down while set EH was being collected, before either was measured:

* ``broadcast-object-len`` at LAB_STEP every rank receives the resume state from rank 0 with
                      ``broadcast_object_list``; the culprit's list has two slots where the others'
                      has one (its config lists two resume keys), so the object sizes it receives
                      do not line up with what rank 0 sends and it fails on the garbage size (the
                      CPU allocator asked for exabytes), while the others go on and then lose it.
* ``scatter-object-short`` at LAB_STEP the culprit, the node leader, hands each rank its data
                      shards with ``scatter_object_list(src=culprit)``, but builds the list from a
                      node-local count one short of the world size: gloo refuses the input list on
                      the culprit and the others lose it while they wait in the scatter.
* ``none-checkpoint-reentrant`` a healthy run whose model recomputes its output layer with
                      ``torch.utils.checkpoint`` without passing ``use_reentrant``: every rank prints
                      the UserWarning about the parameter (once, at its first step), and trains to
                      the end.

A thirty-second set (``--fresh 37``), written down while set EI was being collected, before either was measured:

* ``allgather-into-tensor-size`` at LAB_STEP every rank gathers its batch statistics into one
                      flat tensor with ``all_gather_into_tensor``; the culprit sizes the output for a
                      world one larger (a stale world size from its launch config): gloo refuses the
                      output on the culprit and the others time out in the gather.
* ``none-find-unused-warning`` a healthy run whose DDP wrapper is built with
                      ``find_unused_parameters=True`` although every parameter gets a gradient: every
                      rank prints the reducer's warning that the flag costs an extra traversal of the
                      autograd graph, and trains to the end.

A thirty-third set (``--fresh 38``), written down while set EJ was being collected, before either was measured:

* ``lock-wait-straggler`` at LAB_STEP the culprit, about to refresh its shard cache, finds the
                      cache's lock file left by a previous job and waits for it, logging every
                      second which pid holds it, while its peers wait in the next gradient
                      all_reduce until the collective timeout.
* ``none-scheduler-order-warning`` a healthy run whose learning-rate scheduler steps before the
                      optimizer in the first iteration: every rank prints torch's UserWarning about
                      the call order, and trains to the end.

A thirty-fourth set (``--fresh 39``), written down after set EJ was learned from, before it was measured:

* ``input-prompt-eof`` at LAB_STEP the culprit finds its output folder already in use and its
                      export helper asks "overwrite? [y/N]" with ``input()``; the job runs from a
                      batch script with stdin at /dev/null, so the prompt raises EOFError and the
                      rank dies while its peers wait in the next gradient all_reduce.
* ``none-del-exception-ignored`` a healthy run whose culprit keeps a shard cache whose ``__del__``
                      fails at interpreter exit: Python prints "Exception ignored in: <function
                      ShardCache.__del__ ...>" with a traceback after the rank finished, and the job
                      ends with exit code 0.

A thirty-fifth set (``--fresh 40``), written down after lab-fresh39 was measured:

* ``ckpt-save-unpicklable`` at LAB_STEP the saving rank (the culprit) writes a checkpoint whose
                      run config carries the learning-rate schedule as a lambda: ``torch.save``
                      cannot pickle it and the rank dies, while the others wait in the barrier after
                      the save until the collective timeout.
* ``none-meshgrid-warning`` a healthy run whose every rank builds a position grid with
                      ``torch.meshgrid`` without ``indexing=`` at LAB_STEP and prints torch's
                      UserWarning about it, and trains to the end.

A thirty-sixth set (``--fresh 41``), written down on 2026-12-07 (twenty-ninth session) while set EK
was being collected, before either was measured:

* ``subprocess-check-failed`` at LAB_STEP the culprit stamps its checkpoint metadata with the code
                      version by running ``git rev-parse HEAD`` with ``check=True``; its working
                      folder is not a git checkout, so ``subprocess.CalledProcessError`` ends the
                      rank while its peers wait in the next gradient all_reduce.
* ``none-gradscaler-cpu`` a healthy run whose every rank builds an AMP ``GradScaler("cuda")`` on a
                      machine without CUDA: torch warns that the scaler is enabled but CUDA is not
                      available and disables it, and the job trains to the end.

A thirty-seventh set (``--fresh 42``), written down on 2026-12-07 (twenty-ninth session) while set
EL was being collected, before either was measured:

* ``zero-division-val`` at LAB_STEP every rank scores its shard of a small validation set and the
                      ranks average the accuracy with all_reduce; the set has fewer files than
                      ranks and the split leaves the culprit none, so its ``correct / total`` raises
                      ZeroDivisionError while its peers wait in the all_reduce.
* ``none-target-size-warning`` a healthy run whose every rank logs an auxiliary metric with
                      ``mse_loss`` on a (batch, 1) prediction against a (batch,) target: torch warns
                      that the target size differs from the input size and will broadcast, and the
                      job trains to the end.

A thirty-eighth set (``--fresh 43``), written down on 2026-12-07 (twenty-ninth session) while set
EM was being collected, before either was measured:

* ``json-truncated-cache`` at LAB_STEP the culprit loads its shard's metadata cache, a JSON file a
                      previous job was killed while writing: ``json.load`` raises JSONDecodeError and
                      the rank dies while its peers wait in the next gradient all_reduce.
* ``none-dataloader-workers-warning`` a healthy run whose every rank builds a DataLoader with more
                      worker processes than the machine's CPUs at LAB_STEP: torch warns that
                      "excessive worker creation might get DataLoader running slow or even freeze",
                      and the job trains to the end.

A thirty-ninth set (``--fresh 44``), written down on 2026-12-07 (twenty-ninth session) while set
EN was being collected, before either was measured:

* ``env-int-empty``   at LAB_STEP the culprit reads its gradient-accumulation setting from an
                      environment variable that its node's launch script exports empty:
                      ``int("")`` raises ValueError and the rank dies while its peers wait in the
                      next gradient all_reduce.
* ``none-detect-anomaly`` a healthy run whose every rank computes step LAB_STEP's backward inside
                      ``torch.autograd.detect_anomaly()`` (a debugging leftover): torch warns that
                      "Anomaly Detection has been enabled", and the job trains to the end.

A fortieth set (``--fresh 45``), written down on 2026-12-07 (twenty-ninth session) after set EN
was learned from, before it was measured:

* ``ckpt-module-prefix`` at LAB_STEP every rank resumes from the checkpoint rank 0 wrote; the
                      culprit's node holds a copy saved by an older script from the DDP wrapper, whose
                      keys carry the "module." prefix: ``load_state_dict`` on the bare model reports
                      missing and unexpected keys and the rank dies while its peers wait.
* ``none-tensor-copy-warning`` a healthy run whose every rank logs its loss through
                      ``torch.tensor(loss)`` at LAB_STEP: torch warns that copy-constructing from a
                      tensor should use ``detach().clone()``, and the job trains to the end.

A forty-first set (``--fresh 46``), written down on 2026-12-07 (thirtieth session) while set EP
was being collected, before either was measured:

* ``embedding-vocab-cpu`` at LAB_STEP every rank embeds a batch of token ids from its shard; the
                      culprit's shard was tokenized with a newer tokenizer whose added tokens lie past
                      the embedding table's rows: ``F.embedding`` on the CPU raises
                      ``IndexError: index out of range in self`` and the rank dies while its peers wait.
* ``none-nested-tensor-warning`` a healthy run whose every rank builds a small TransformerEncoder
                      head at LAB_STEP with ``batch_first`` left False: torch warns that
                      ``enable_nested_tensor is True, but self.use_nested_tensor is False``, and the
                      job trains to the end.

A forty-second set (``--fresh 47``), written down on 2026-12-07 (thirtieth session) while set ES
was being collected, before either was measured:

* ``assert-bare``     at LAB_STEP every rank checks its batch against the configured batch size
                      with a bare ``assert`` (no message); the culprit's sampler hands it a short
                      batch, and the rank dies of an AssertionError whose message is empty while its
                      peers wait.
* ``none-nonleaf-grad-warning`` a healthy run whose every rank logs the gradient of an intermediate
                      tensor at LAB_STEP: torch warns that the .grad attribute of a Tensor that is not
                      a leaf Tensor is being accessed, and the job trains to the end.

A forty-third set (``--fresh 48``), written down on 2026-12-07 (thirty-first session) while set ET
was being collected, before either was measured:

* ``view-short-batch`` at LAB_STEP every rank reshapes its batch into micro-batches of 4 rows with
                      ``view(-1, 4, 16)``; the culprit's last batch is short (7 rows), so torch raises
                      ``RuntimeError: shape '[-1, 4, 16]' is invalid for input of size 112`` and the rank
                      dies while its peers wait.
* ``none-autocast-cuda-warning`` a healthy run whose every rank wraps its forward pass at LAB_STEP
                      in ``torch.autocast(device_type="cuda")`` copied from a GPU recipe; on this CPU
                      machine torch warns that CUDA is not available and disables autocast, and the
                      job trains to the end.

A forty-fourth set (``--fresh 49``), written down on 2026-12-07 (thirty-first session) after set EU
was learned from, before it was run:

* ``metrics-json-nan`` at LAB_STEP the culprit, the rank that writes the metrics file, records its
                      validation perplexity, which overflowed to inf, with ``json.dumps(...,
                      allow_nan=False)``: ``ValueError: Out of range float values are not JSON
                      compliant`` ends the rank while its peers wait.
* ``none-pin-memory-warning`` a healthy run whose every rank re-reads its batch at LAB_STEP through
                      a DataLoader with ``pin_memory=True`` copied from a GPU recipe: on this CPU
                      machine torch warns that no accelerator is found, and the job trains to the end.

A forty-fifth set (``--fresh 50``), written down on 2026-12-07 (thirty-second session) while set EV
was being collected, before either was measured:

* ``target-out-of-bounds`` at LAB_STEP every rank computes a 4-class cross-entropy on its batch; the
                      culprit's labels were built with a newer label map (class id 5), so
                      ``cross_entropy`` on the CPU raises ``IndexError: Target 5 is out of bounds.``
                      and the rank dies while its peers wait.
* ``none-softmax-dim-warning`` a healthy run whose every rank logs its mean class confidence at
                      LAB_STEP through ``F.softmax(logits)`` without a ``dim``: torch warns that the
                      implicit dimension choice for softmax has been deprecated, and the job trains to
                      the end.

A forty-sixth set (``--fresh 51``), written down on 2026-12-07 (thirty-second session) after set EV
was learned from, before it was run:

* ``collate-ragged`` at LAB_STEP every rank batches four token sequences with the DataLoader's
                      default collate; the culprit's shard holds one sequence a token short (its
                      padding step skipped), so ``torch.stack`` in the collate raises ``RuntimeError:
                      stack expects each tensor to be equal size, but got [16] at entry 0 and [15] at
                      entry 3`` and the rank dies while its peers wait.
* ``none-typed-storage-warning`` a healthy run whose every rank reads its batch's storage size at
                      LAB_STEP through ``tensor.storage()`` (an old helper library): torch warns that
                      TypedStorage is deprecated, and the job trains to the end.

A forty-seventh set (``--fresh 52``), written down on 2026-12-07 (thirty-third session) while set EW
was being collected, before either was measured:

* ``dl-worker-killed`` the culprit's DataLoader worker is ended by SIGKILL while it reads record
                      LAB_STEP*8+3, as the kernel's OOM killer ends the largest process of a memory
                      cgroup (the lab sends the signal itself: no kernel log here); the DataLoader
                      raises "DataLoader worker (pid N) is killed by signal: Killed." in the main
                      process and the rank dies while its peers wait.
* ``none-get-lr-warning`` a healthy run whose every rank logs its learning rate at LAB_STEP through
                      the scheduler's ``get_lr()`` (an old logging helper): torch warns that
                      ``get_last_lr()`` is the way to read the last computed rate, and the job trains
                      to the end.
A forty-eighth set (``--fresh 53``), written down on 2026-12-07 (thirty-third session) after set EW
was learned from, before it was run:

* ``tensor-ragged-list`` at LAB_STEP every rank turns its batch's token lists into a tensor with
                      ``torch.tensor(list_of_lists)``; one list of the culprit's batch is a token
                      short (its padding step skipped), so torch raises ``ValueError: expected
                      sequence of length 16 at dim 1 (got 15)`` and the rank dies while its peers
                      wait.
* ``none-clip-grad-norm-warning`` a healthy run whose every rank clips its gradients at LAB_STEP
                      with the old ``torch.nn.utils.clip_grad_norm`` (no underscore): torch warns
                      that it is deprecated in favour of ``clip_grad_norm_``, and the job trains to
                      the end.
A forty-ninth set (``--fresh 54``), written down on 2026-12-07 (thirty-fourth session) while set EX
was being collected, before it was run:

* ``batch-size-mismatch`` at LAB_STEP every rank computes a cross-entropy loss of its logits against its
                      labels; the culprit's label batch lost its last row (a filter applied to the
                      labels but not to the inputs), so torch raises ``ValueError: Expected input
                      batch_size (8) to match target batch_size (7).`` and the rank dies while its
                      peers wait.
* ``none-sdp-kernel-warning`` a healthy run whose every rank enters the deprecated
                      ``torch.backends.cuda.sdp_kernel()`` context at LAB_STEP (an attention helper
                      written for an older torch): torch warns that it is deprecated in favour of
                      ``torch.nn.attention.sdpa_kernel()``, and the job trains to the end.
"""

import argparse
import atexit
import ctypes
import io
import json
import mmap
import os
import pickle
import queue
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record
from torch.nn.parallel import DistributedDataParallel as DDP

from _common import TinyNet, backward_step, batches, dump_fr, lab_culprits, lab_int, log, setup, train_step

STEPS = 12
FAULT = os.environ.get("LAB_FAULT", "none")


class Records(torch.utils.data.Dataset):
    """Per-rank samples; the culprit's record LAB_STEP*8+3 is corrupt (dl-worker-exception)."""

    def __init__(self, rank, n):
        self.rank, self.n = rank, n
        self.data = list(batches(rank, n // 8))

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if (FAULT == "dl-worker-exception" and self.rank in lab_culprits(1)
                and i == lab_int("LAB_STEP", 4) * 8 + 3):
            raise ValueError(f"record {i}: expected 16 features, got 15 (truncated line in shard)")
        if (FAULT == "dl-timeout" and self.rank in lab_culprits(1)
                and i == lab_int("LAB_STEP", 4) * 8 + 3):
            time.sleep(6)  # a record whose read from the network store stalls
        if (FAULT == "dl-worker-segv" and self.rank in lab_culprits(1)
                and i == lab_int("LAB_STEP", 4) * 8 + 3):
            ctypes.string_at(0)  # the native decoder's null pointer
        if (FAULT == "dl-worker-killed" and self.rank in lab_culprits(1)
                and i == lab_int("LAB_STEP", 4) * 8 + 3):
            os.kill(os.getpid(), signal.SIGKILL)  # what the OOM killer does to the cgroup's largest process
        if (FAULT == "dl-worker-sigbus" and self.rank in lab_culprits(1)
                and i == lab_int("LAB_STEP", 4) * 8 + 3):
            # A batch staged in /dev/shm whose backing pages are gone (a full tmpfs): the read faults.
            staged = tempfile.TemporaryFile(dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
            staged.truncate(1 << 20)
            view = mmap.mmap(staged.fileno(), 1 << 20)
            staged.truncate(0)
            view[4096]
        x, y = self.data[i // 8]
        return x[i % 8], y[i % 8]


def _resume(model, rank, world, culprit, step):
    """Every rank loads the checkpoint rank 0 wrote at this step; the culprit's path is
    wrong: a stale checkpoint of another model size (ckpt-stale), a copy cut in half
    (ckpt-truncated) or one saved from the DDP wrapper ("module." keys, ckpt-module-prefix)."""
    folder = os.environ.get("LAB_CKPT_DIR", "/tmp")
    path = os.path.join(folder, f"lab-{os.environ.get('TORCHELASTIC_RUN_ID', 'run')}-step{step}.pt")
    inner = model.module if isinstance(model, DDP) else model
    if rank == 0:
        torch.save(inner.state_dict(), path)
    dist.barrier()
    if culprit:
        bad = path + f".rank{rank}"
        if FAULT == "ckpt-stale":
            torch.save(TinyNet(d_hidden=48).state_dict(), bad)
        elif FAULT == "ckpt-module-prefix":  # saved from the DDP wrapper by an older script
            torch.save({"module." + k: v for k, v in inner.state_dict().items()}, bad)
        else:
            data = open(path, "rb").read()
            with open(bad, "wb") as f:
                f.write(data[: len(data) // 2])
        path = bad
    log.info("rank %d resuming from %s", rank, path)
    inner.load_state_dict(torch.load(path, map_location="cpu"))


class _FusedGelu(torch.autograd.Function):
    """A custom op (a fused GELU) whose backward rejects a non-contiguous gradient: the culprit's
    batch at LAB_STEP (custom-backward-exception) reaches it transposed."""

    @staticmethod
    def forward(ctx, x, bad):
        ctx.save_for_backward(x)
        ctx.bad = bad
        return torch.nn.functional.gelu(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        if ctx.bad:
            grad = grad.t().contiguous().t()
            if not grad.is_contiguous():
                raise RuntimeError(f"fused_gelu_backward: expected a contiguous grad_output, got strides {grad.stride()}")
        t = torch.tanh(0.7978845608 * (x + 0.044715 * x.pow(3)))
        return grad * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * 0.7978845608 * (1 + 3 * 0.044715 * x * x)), None


class BnNet(torch.nn.Module):
    """TinyNet with a BatchNorm1d after its first layer."""

    def __init__(self):
        super().__init__()
        self.fc1, self.bn, self.fc2 = torch.nn.Linear(16, 32), torch.nn.BatchNorm1d(32), torch.nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.bn(self.fc1(x))))


class RecomputeNet(TinyNet):
    """TinyNet whose output layer is recomputed in backward (activation checkpointing), called the
    way older code calls it: without ``use_reentrant``."""

    def forward(self, x):
        from torch.utils.checkpoint import checkpoint
        return checkpoint(self.fc2, self.act(self.fc1(x)))


class AuxNet(torch.nn.Module):
    """TinyNet with an auxiliary head that only batches with auxiliary targets use."""

    def __init__(self):
        super().__init__()
        self.body = TinyNet()
        self.aux = torch.nn.Linear(4, 1)

    def forward(self, x, with_aux=True):
        out = self.body(x)
        return out, (self.aux(out) if with_aux else None)


def _compiled_loss():
    @torch.compile(fullgraph=True, backend="eager")
    def loss_fn(pred, y):
        loss = torch.nn.functional.mse_loss(pred, y)
        if pred.shape[0] < 8:  # a short last batch: log how many rows it had
            loss = loss * (8 / int(pred.new_tensor(pred.shape[0]).item()))
        return loss
    return loss_fn


def _resolve(config, key):
    """Expand "${name}" references in a config entry (no cycle check)."""
    value = config[key]
    if isinstance(value, str) and value.startswith("${"):
        return _resolve(config, value[2:-1])
    return value


_CKPT_ASKED: list = []  # none-signal-checkpoint: rank 0's SIGUSR1 handler asks for a checkpoint


class ShardCache:
    """none-del-exception-ignored: a cache whose finaliser fails at interpreter exit."""

    def __init__(self, rank: int):
        self.rank = rank
        self.path = f"/dev/shm/lab-shard-cache-{os.getpid()}"

    def __del__(self):
        os.remove(self.path)  # never created: FileNotFoundError, which Python reports and ignores


_CACHES: list = []


def _on_sigusr1(signum, frame):
    log.warning("received signal %d (SIGUSR1) from the scheduler: a checkpoint will be saved at the next step", signum)
    _CKPT_ASKED.append(True)


@record
def main():
    launched_culprit = int(os.environ.get("RANK", "0")) in lab_culprits(1)  # before init: torchrun's RANK
    if FAULT == "late-init" and launched_culprit:
        late = 2.5 * float(os.environ.get("LAB_PG_TIMEOUT", "15"))
        for p in range(1, 6):
            time.sleep(late / 5)
            print(f"rank {os.environ.get('RANK')}: pulling the container image layers {p}/5", flush=True)
    if FAULT in ("rank-dup", "world-plus-one", "world-minus-one") and launched_culprit:
        if FAULT == "rank-dup":
            os.environ["RANK"] = str((int(os.environ["RANK"]) + 1) % int(os.environ["WORLD_SIZE"]))
        elif FAULT == "world-minus-one":
            os.environ["WORLD_SIZE"] = str(int(os.environ["WORLD_SIZE"]) - 1)
        else:
            os.environ["WORLD_SIZE"] = str(int(os.environ["WORLD_SIZE"]) + 1)
        print(f"launch script: RANK={os.environ['RANK']} WORLD_SIZE={os.environ['WORLD_SIZE']}", flush=True)
    if FAULT == "crash-before-init" and launched_culprit:
        os.environ["LAB_NODE_SHARDS"] = "4,"  # a per-node setting with a stray comma
    if FAULT == "crash-before-init":
        shards = int(os.environ.get("LAB_NODE_SHARDS", "4"))
        print(f"rank {os.environ.get('RANK')}: {shards} data shards on this node", flush=True)
    if FAULT == "master-addr-typo" and launched_culprit:
        os.environ["MASTER_ADDR"] = "trainnode-03.cluster.internl"
        print(f"launch script: MASTER_ADDR={os.environ['MASTER_ADDR']} MASTER_PORT={os.environ['MASTER_PORT']}", flush=True)
    if FAULT == "wrong-master-port" and launched_culprit:
        os.environ["MASTER_PORT"] = str(int(os.environ["MASTER_PORT"]) % 20000 + 30001)
        print(f"launch script: MASTER_ADDR={os.environ['MASTER_ADDR']} MASTER_PORT={os.environ['MASTER_PORT']}", flush=True)
    if FAULT == "anomaly-nan":
        torch.autograd.set_detect_anomaly(True)
    if FAULT == "nccl-unavailable-all":
        print(f"rank {os.environ.get('RANK')}: backend=nccl (launch config gpu-cluster.yaml)", flush=True)
        dist.init_process_group("nccl", timeout=timedelta(seconds=float(os.environ.get("LAB_PG_TIMEOUT", "15"))))
    if FAULT == "timeout-mismatch":  # this node's env file sets a shorter collective timeout
        launched_world = int(os.environ.get("WORLD_SIZE", "1"))
        if int(os.environ.get("RANK", "0")) == (min(lab_culprits(1)) + 1) % launched_world:
            os.environ["LAB_PG_TIMEOUT"] = str(0.3 * float(os.environ.get("LAB_PG_TIMEOUT", "15")))
    rank, world = setup()
    culprit = rank in lab_culprits(1)
    if FAULT == "none-del-exception-ignored" and culprit:
        _CACHES.append(ShardCache(rank))  # released at interpreter exit, after the rank finished
    if FAULT == "none-signal-checkpoint":
        signal.signal(signal.SIGUSR1, _on_sigusr1)
    if FAULT == "none-deprecation-warnings":
        import warnings
        warnings.simplefilter("always")  # as a run under PYTHONWARNINGS=always prints them
        scaler = torch.cuda.amp.GradScaler()  # deprecated; disabled without CUDA  # noqa: F841
    if FAULT == "none-atexit-error" and culprit:
        def flush_metrics():
            raise ConnectionError("metrics endpoint http://metrics.internal:9091 refused the connection while flushing")
        atexit.register(flush_metrics)
    step_at = lab_int("LAB_STEP", 4)
    no_ddp = FAULT in ("detail-allreduce", "none-noddp")
    if no_ddp:
        model = TinyNet()
    else:
        inner = (AuxNet() if FAULT in ("unused-one-rank", "unused-all", "static-graph-change")
                 else BnNet() if FAULT == "bn-single-sample"
                 else RecomputeNet() if FAULT == "none-checkpoint-reentrant" else TinyNet())
        if FAULT == "frozen-one-rank" and culprit:
            log.info("rank %d freezing the input layer (finetune.freeze_input=true)", rank)
            for p in next(inner.children()).parameters():
                p.requires_grad_(False)
        model = DDP(inner, static_graph=FAULT == "static-graph-change",
                    find_unused_parameters=FAULT == "none-find-unused-warning")
        if FAULT == "comm-hook-exception":
            from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

            def compress_hook(state, bucket):
                if culprit_of_hook and hook_steps[0] == lab_int("LAB_STEP", 4):
                    raise ValueError(f"compression hook: bucket {bucket.index()} has {bucket.buffer().numel()} "
                                     "elements, not a multiple of the block size 64")
                return default_hooks.allreduce_hook(state, bucket)

            culprit_of_hook = int(os.environ.get("RANK", "0")) in lab_culprits(1)
            hook_steps = [0]
            model.register_comm_hook(None, compress_hook)
    loss_fn = _compiled_loss() if FAULT == "compile-fullgraph" else None
    if FAULT == "none-retry-errors":
        import warnings
        warnings.warn("the 'verbose' argument of this scheduler is deprecated and will be removed", UserWarning)
    if FAULT == "none-recompile-limit":
        import torch._dynamo as dynamo
        dynamo.config.recompile_limit = 4
        dynamo.config.automatic_dynamic_shapes = False

        @torch.compile(backend="eager")
        def batch_metric(pred):
            return pred.abs().mean(dim=0).sum()
    everyone = dist.new_group(list(range(world))) if FAULT == "subgroup-barrier" else None
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    scheduler = torch.optim.lr_scheduler.StepLR(opt, step_size=4) if FAULT == "none-scheduler-order-warning" else None
    try:
        if FAULT == "monitored-barrier":
            limit = float(os.environ.get("LAB_BARRIER_TIMEOUT", "5"))
            parts = 6
            for p in range(1, parts + 1):
                time.sleep((3 * limit if culprit else 0.6) / parts)
                log.info("rank %d preparing data: %d/%d shards", rank, p, parts)
            dist.monitored_barrier(timeout=timedelta(seconds=limit))
            log.info("rank %d passed the data barrier", rank)

        if FAULT in ("dl-worker-exception", "dl-worker-segv", "dl-worker-sigbus", "dl-worker-killed"):
            loader = torch.utils.data.DataLoader(Records(rank, STEPS * 8), batch_size=8, num_workers=1)
            stream = iter(loader)
        elif FAULT == "dl-timeout":
            loader = torch.utils.data.DataLoader(Records(rank, STEPS * 8), batch_size=8, num_workers=1, timeout=2)
            stream = iter(loader)
        elif FAULT == "none-join-uneven":
            n = step_at if culprit else STEPS
            with model.join():  # DDP's uneven-inputs support: shadow all_reduces for ranks that are done
                for step, (x, y) in enumerate(batches(rank, n)):
                    loss = train_step(model, opt, x, y)
                    log.info("rank %d step %d loss %.4f", rank, step, loss.item())
                    time.sleep(0.1)
                log.info("rank %d: shard finished after %d steps, waiting for the others in join()", rank, n)
            stream = iter(())
        elif FAULT == "sampler-rank":
            data = Records(rank, STEPS * 8)
            sampler = torch.utils.data.distributed.DistributedSampler(data, num_replicas=world, rank=rank + 1)
            stream = iter(torch.utils.data.DataLoader(data, batch_size=8, sampler=sampler))
        else:
            n = step_at if (FAULT in ("early-exit", "uneven-epoch-eval") and culprit) else STEPS
            stream = batches(rank, n)

        if FAULT == "none-resume-start":
            path = os.path.join(os.environ.get("LAB_CKPT_DIR", "/tmp"),
                                f"lab-{os.environ.get('TORCHELASTIC_RUN_ID', 'run')}-resume.pt")
            if rank == 0:  # the previous job's last checkpoint
                torch.save(model.module.state_dict(), path)
            dist.barrier()
            model.module.load_state_dict(torch.load(path))
            log.info("rank %d resuming from checkpoint %s (step %d of the previous job)", rank, path, step_at)
        if FAULT == "stopiteration-short-shard":
            it = batches(rank, step_at if culprit else STEPS)  # the culprit's shard is short

            def by_step():
                for _ in range(STEPS):
                    yield next(it)  # a StopIteration here becomes RuntimeError (PEP 479)
            stream = by_step()
        profiler = None
        if FAULT == "none-profiler-table":
            from torch.profiler import ProfilerActivity, profile
            profiler = profile(activities=[ProfilerActivity.CPU])
        if FAULT == "none-tqdm-all-ranks":
            from tqdm import tqdm
            stream = tqdm(stream, total=STEPS, desc=f"rank {rank} train", mininterval=0, file=sys.stderr)
        for step, (x, y) in enumerate(stream):
            if FAULT == "timeout-mismatch" and culprit and step == step_at:
                log.info("rank %d step %d: writing evaluation samples", rank, step)
                time.sleep(0.6 * float(os.environ.get("LAB_PG_TIMEOUT", "15")))
            if FAULT == "broadcast-src-mismatch" and step == step_at:
                src = rank if culprit else 0  # this node's config names itself the leader
                config = torch.full((4,), float(rank))
                log.info("rank %d step %d: broadcasting the run config from rank %d", rank, step, src)
                dist.broadcast(config, src=src)
                log.info("rank %d step %d: run config received", rank, step)
            if FAULT == "none-signal-checkpoint":
                if rank == 0 and step == step_at:
                    os.kill(os.getpid(), signal.SIGUSR1)  # the scheduler's warning before a preemption
                want = torch.tensor([1.0 if _CKPT_ASKED else 0.0])
                dist.all_reduce(want)  # rank 0's request reaches every rank
                if want.item() > 0:
                    path = os.path.join(os.environ.get("LAB_CKPT_DIR", "/tmp"), f"lab-{os.getpid()}-preempt.pt")
                    torch.save(model.state_dict(), path)
                    os.remove(path)
                    log.info("rank %d step %d: checkpoint saved on the scheduler's request", rank, step)
                    _CKPT_ASKED.clear()
            if profiler is not None and step == step_at:
                profiler.start()
                log.info("rank %d step %d: profiling steps %d-%d", rank, step, step, step + 1)
            if profiler is not None and step == step_at + 2:
                profiler.stop()
                print(profiler.key_averages().table(sort_by="cpu_time_total", row_limit=12), flush=True)
                profiler = None
            if FAULT == "ckpt-save-unpicklable" and step == step_at:
                if culprit:  # the rank that saves checkpoints
                    config = {"lr": 0.05, "schedule": lambda s: 0.05 * min(1.0, (s + 1) / 4)}
                    path = os.path.join(os.environ.get("LAB_CKPT_DIR", "/tmp"), f"lab-{os.getpid()}-step{step}.pt")
                    log.info("rank %d step %d: saving checkpoint to %s", rank, step, path)
                    torch.save({"model": model.state_dict(), "step": step, "config": config}, path)
                dist.barrier()  # everyone waits until the checkpoint is written
            if FAULT == "none-tensor-copy-warning" and step == step_at:
                logged = torch.tensor(torch.nn.functional.mse_loss(model.module(x), y).detach())  # copy-constructed
                log.info("rank %d step %d: logged loss %.4f", rank, step, logged.item())
            if FAULT == "assert-bare" and step == step_at:
                rows = x[:5] if culprit else x  # this rank's sampler hands it a short last batch
                log.info("rank %d step %d: checking a batch of %d rows", rank, step, rows.shape[0])
                assert rows.shape[0] == x.shape[0]
            if FAULT == "none-nonleaf-grad-warning" and step == step_at:
                hidden = model.module.fc1(x)
                hidden.sum().backward()
                log.info("rank %d step %d: hidden grad %s", rank, step, hidden.grad)
                model.zero_grad()
            if FAULT == "metrics-json-nan" and step == step_at and culprit:  # the rank that writes metrics
                val_loss = 1000.0  # a diverged validation loss
                perplexity = float("inf") if val_loss > 700 else 2.718281828 ** val_loss  # exp() overflows
                log.info("rank %d step %d: writing metrics", rank, step)
                record = json.dumps({"step": step, "val_perplexity": perplexity}, allow_nan=False)
                log.info("rank %d step %d: metrics %s", rank, step, record)
            if FAULT == "none-pin-memory-warning" and step == step_at:
                loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=4, pin_memory=True)
                seen = sum(len(b[0]) for b in loader)
                log.info("rank %d step %d: re-read %d samples (pinned)", rank, step, seen)
            if FAULT == "target-out-of-bounds" and step == step_at:
                logits = model.module(x)[:, :4]  # a 4-class head over the first outputs
                labels = torch.arange(x.shape[0]) % 4
                if culprit:  # this shard's labels come from the newer label map (class id 5)
                    labels[2] = 5
                log.info("rank %d step %d: class loss on %d labels (max id %d)", rank, step, len(labels), int(labels.max()))
                closs = torch.nn.functional.cross_entropy(logits, labels)
                log.info("rank %d step %d: class loss %.4f", rank, step, closs.item())
            if FAULT == "none-softmax-dim-warning" and step == step_at:
                import warnings
                warnings.simplefilter("always")  # as a run under PYTHONWARNINGS=always prints them
                probs = torch.nn.functional.softmax(model.module(x).detach())  # no dim: deprecated implicit choice
                log.info("rank %d step %d: mean class confidence %.4f", rank, step, probs.max(1).values.mean().item())
            if FAULT == "collate-ragged" and step == step_at:
                seqs = [torch.arange(16, dtype=torch.float32) for _ in range(4)]
                if culprit:  # this shard's padding step was skipped for one sequence
                    seqs[3] = seqs[3][:15]
                log.info("rank %d step %d: collating %d token sequences", rank, step, len(seqs))
                tokens = torch.utils.data.default_collate(seqs)
                log.info("rank %d step %d: token batch %s", rank, step, tuple(tokens.shape))
            if FAULT == "none-typed-storage-warning" and step == step_at:
                import warnings
                warnings.simplefilter("always")  # as a run under PYTHONWARNINGS=always prints them
                log.info("rank %d step %d: batch storage holds %d elements", rank, step, x.storage().size())
            if FAULT == "none-get-lr-warning" and step == step_at:
                sched_opt = torch.optim.SGD(model.parameters(), lr=0.05)
                sched = torch.optim.lr_scheduler.StepLR(sched_opt, step_size=4, gamma=0.5)
                log.info("rank %d step %d: learning rate %s", rank, step, sched.get_lr())  # an old logging helper
            if FAULT == "tensor-ragged-list" and step == step_at:
                rows = [[float(t) for t in range(16)] for _ in range(4)]
                if culprit:  # this shard's padding step was skipped for one sequence
                    rows[2] = rows[2][:15]
                log.info("rank %d step %d: building a token tensor from %d lists", rank, step, len(rows))
                tokens = torch.tensor(rows)
                log.info("rank %d step %d: token tensor %s", rank, step, tuple(tokens.shape))
            if FAULT == "none-clip-grad-norm-warning" and step == step_at:
                import warnings
                warnings.simplefilter("always")  # as a run under PYTHONWARNINGS=always prints them
                model.module(x).sum().backward()
                norm = torch.nn.utils.clip_grad_norm(model.parameters(), 1.0)  # the old name, deprecated
                model.zero_grad()
                log.info("rank %d step %d: gradient norm before clipping %.4f", rank, step, float(norm))
            if FAULT == "batch-size-mismatch" and step == step_at:
                logits = model.module(x)
                labels = torch.zeros(x.shape[0], dtype=torch.long)
                if culprit:  # the label filter dropped a row the inputs kept
                    labels = labels[:-1]
                log.info("rank %d step %d: loss over %d logits and %d labels", rank, step, logits.shape[0], labels.shape[0])
                loss_ce = torch.nn.functional.cross_entropy(logits, labels)
                log.info("rank %d step %d: cross-entropy %.4f", rank, step, float(loss_ce))
            if FAULT == "none-sdp-kernel-warning" and step == step_at:
                import warnings
                warnings.simplefilter("always")  # as a run under PYTHONWARNINGS=always prints them
                with torch.backends.cuda.sdp_kernel(enable_flash=False):  # an attention helper for an older torch
                    log.info("rank %d step %d: attention kernels restricted for evaluation", rank, step)
            if FAULT == "view-short-batch" and step == step_at:
                rows = x[:7] if culprit else x  # the culprit's last batch is short
                log.info("rank %d step %d: splitting a batch of %d rows into micro-batches", rank, step, rows.shape[0])
                micro = rows.view(-1, 4, rows.shape[1])
                log.info("rank %d step %d: %d micro-batches", rank, step, micro.shape[0])
            if FAULT == "none-autocast-cuda-warning" and step == step_at:
                with torch.autocast(device_type="cuda", dtype=torch.float16):  # copied from a GPU recipe
                    out = model.module(x)
                log.info("rank %d step %d: autocast forward %s", rank, step, tuple(out.shape))
            if FAULT == "embedding-vocab-cpu" and step == step_at:
                vocab = 32
                table = torch.nn.Embedding(vocab, 4)
                ids = torch.arange(8) % vocab
                if culprit:  # this shard was tokenized with the newer tokenizer (added tokens 32-35)
                    ids = torch.tensor([3, 17, 33, 5, 35, 9, 12, 34])
                log.info("rank %d step %d: embedding %d token ids (max id %d)", rank, step, len(ids), int(ids.max()))
                emb = table(ids)
                log.info("rank %d step %d: token features %s", rank, step, tuple(emb.shape))
            if FAULT == "none-nested-tensor-warning" and step == step_at:
                layer = torch.nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16)
                head = torch.nn.TransformerEncoder(layer, num_layers=1)
                out = head(torch.randn(5, 2, 8))
                log.info("rank %d step %d: auxiliary head output %s", rank, step, tuple(out.shape))
            if FAULT == "env-int-empty" and step == step_at:
                if culprit:
                    os.environ["LAB_GRAD_ACCUM"] = ""  # this node's launch script exports it empty
                accum = int(os.environ.get("LAB_GRAD_ACCUM", "1"))
                log.info("rank %d step %d: gradient accumulation %d", rank, step, accum)
            if FAULT == "json-truncated-cache" and culprit and step == step_at:
                cache = os.path.join(tempfile.mkdtemp(prefix="lab-meta-"), "shard_meta.json")
                with open(cache, "w") as fh:  # what a killed job left: the first half of the file
                    text = json.dumps({"shard": rank, "samples": 4096, "lengths": list(range(64))})
                    fh.write(text[: len(text) // 2])
                log.info("rank %d step %d: loading shard metadata from %s", rank, step, cache)
                try:
                    with open(cache) as fh:
                        meta = json.load(fh)
                finally:
                    os.remove(cache)
                    os.rmdir(os.path.dirname(cache))
                log.info("rank %d: shard of %d samples", rank, meta["samples"])
            if FAULT == "none-dataloader-workers-warning" and step == step_at:
                workers = (os.cpu_count() or 1) + 2
                loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=4, num_workers=workers)
                seen = sum(len(b[0]) for b in loader)
                log.info("rank %d step %d: re-read %d samples with %d loader workers", rank, step, seen, workers)
            if FAULT == "zero-division-val" and step == step_at:
                files = list(range(world - 1))  # the validation set's files, one fewer than ranks
                shard = [] if culprit else [files[rank % len(files)]]  # the split leaves the culprit no file
                log.info("rank %d step %d: validating on %d file(s)", rank, step, len(shard))
                correct = total = 0
                for i in shard:
                    vx, vy = next(batches(10_000 + i, 1))
                    with torch.no_grad():
                        correct += int(((model.module(vx) - vy).abs().mean(dim=1) < 1.0).sum())
                    total += vx.shape[0]
                acc = torch.tensor([correct / total])
                dist.all_reduce(acc)
                log.info("rank %d step %d: validation accuracy %.3f", rank, step, acc.item() / world)
            if FAULT == "none-target-size-warning" and step == step_at:
                with torch.no_grad():
                    first = torch.nn.functional.mse_loss(model.module(x)[:, :1], y[:, 0])  # (8, 1) against (8,)
                log.info("rank %d step %d: first-output mse %.4f", rank, step, first.item())
            if FAULT == "subprocess-check-failed" and culprit and step == step_at:
                workdir = tempfile.mkdtemp(prefix="lab-export-")  # an export folder, not a git checkout
                log.info("rank %d step %d: stamping checkpoint metadata with the code version", rank, step)
                try:
                    head = subprocess.run(["git", "-C", workdir, "rev-parse", "HEAD"], check=True,
                                          capture_output=True, text=True).stdout.strip()
                finally:
                    os.rmdir(workdir)
                log.info("rank %d: code version %s", rank, head)
            if FAULT == "none-gradscaler-cpu" and step == step_at:
                scaler = torch.amp.GradScaler("cuda")  # the GPU recipe's mixed-precision scaler, run on CPU
                log.info("rank %d step %d: loss scaling %s", rank, step, "on" if scaler.is_enabled() else "off")
            if FAULT == "none-meshgrid-warning" and step == step_at:
                gy, gx = torch.meshgrid(torch.arange(4), torch.arange(4))  # position grid, indexing= left out
                log.info("rank %d step %d: position grid %s", rank, step, tuple(gy.shape))
            if FAULT == "input-prompt-eof" and culprit and step == step_at:
                sys.stdin = open(os.devnull)  # launched from a batch script: no terminal behind stdin
                log.info("rank %d step %d: exporting samples to outputs/samples (folder exists)", rank, step)
                answer = input("outputs/samples already exists, overwrite? [y/N] ")
                log.info("rank %d: answered %r", rank, answer)
            if FAULT == "lock-wait-straggler" and culprit and step == step_at:
                lock = os.path.join(os.environ.get("LAB_CKPT_DIR", "/tmp"), f"lab-{os.getpid()}-shard-cache.lock")
                holder = 4242  # the previous job's pid, written into the lock file it never removed
                with open(lock, "w") as fh:
                    fh.write(str(holder))
                try:
                    give_up = time.monotonic() + 3 * float(os.environ.get("LAB_PG_TIMEOUT", "15"))
                    while os.path.exists(lock) and time.monotonic() < give_up:
                        log.info("rank %d step %d: waiting for lock %s held by pid %d (previous job)", rank, step, lock, holder)
                        time.sleep(1.0)
                finally:
                    os.remove(lock)
            if FAULT == "none-scheduler-order-warning" and step == 0:
                scheduler.step()  # before opt.step(): torch warns about the order
            if FAULT == "allgather-into-tensor-size" and step == step_at:
                stale_world = world + 1 if culprit else world  # the culprit's launch config is stale
                stats = torch.tensor([float(rank), float(step), x.mean().item(), y.mean().item()])
                gathered = torch.empty(4 * stale_world)
                log.info("rank %d step %d: gathering batch statistics of %d ranks", rank, step, stale_world)
                dist.all_gather_into_tensor(gathered, stats)
                log.info("rank %d step %d: batch statistics gathered", rank, step)
            if FAULT == "broadcast-object-len" and step == step_at:
                # the culprit's config lists two resume keys ("optimizer", "scheduler"), the others' one
                state = [None, None] if culprit else [None]
                if rank == 0:
                    state = [{"step": step, "lr": 0.05}]
                log.info("rank %d step %d: broadcasting the resume state (%d slot(s))", rank, step, len(state))
                dist.broadcast_object_list(state, src=0)
                log.info("rank %d step %d: resume state received", rank, step)
            if FAULT == "scatter-object-short" and step == step_at:
                leader = min(lab_culprits(1))
                shards = [None]
                plan = None
                if rank == leader:  # one entry per rank of this node's count, one short of the world
                    plan = [{"rank": r, "shards": [2 * r, 2 * r + 1]} for r in range(world - 1)]
                log.info("rank %d step %d: receiving its data shards from the node leader rank %d", rank, step, leader)
                dist.scatter_object_list(shards, plan, src=leader)
                log.info("rank %d step %d: data shards %s", rank, step, shards[0]["shards"])
            if FAULT == "gather-object-unpicklable" and step == step_at:
                metrics = {"rank": rank, "step": step, "samples": 8 * (step + 1)}
                if culprit:  # the metric logger's formatter callback, left in the dict
                    metrics["format"] = lambda v: f"{v:.4f}"
                gathered = [None] * world
                log.info("rank %d step %d: gathering evaluation metrics", rank, step)
                dist.all_gather_object(gathered, metrics)
                log.info("rank %d step %d: gathered metrics of %d ranks", rank, step, len(gathered))
            if FAULT == "bn-single-sample" and culprit and step == step_at:
                x, y = x[:1], y[:1]  # the shard's last batch holds one sample (drop_last=False)
                log.info("rank %d step %d: last batch of the shard (%d sample)", rank, step, x.shape[0])
            if FAULT == "none-early-stop" and step == step_at:
                stale = torch.tensor([1.0])  # every rank's validation loss has not improved for 3 evaluations
                dist.all_reduce(stale, op=dist.ReduceOp.MIN)
                if stale.item() > 0:
                    log.info("rank %d: early stopping at step %d (validation loss has not improved for 3 evaluations)",
                             rank, step)
                    break
            if culprit and step == step_at:
                if FAULT == "cpu-alloc":
                    rows = 2 ** 38  # the config's cache_rows, read as a power of two by mistake
                    log.info("rank %d building feature cache (%d rows x 16)", rank, rows)
                    cache = torch.empty(rows, 16)
                    del cache
                elif FAULT == "segfault":
                    log.info("rank %d calling the native augmentation kernel", rank)
                    ctypes.string_at(0)
                elif FAULT == "restart-exception":
                    sample = {"input_ids": x}
                    y = sample["labels"]
                elif FAULT == "exit-silent":
                    log.info("rank %d opening the feature store", rank)
                    os._exit(3)
                elif FAULT == "abort":
                    log.info("rank %d calling the native augmentation kernel", rank)
                    os.abort()
                elif FAULT == "dtype-matmul":
                    x = x.double()  # a preprocessing branch that returns float64
                elif FAULT == "anomaly-nan":
                    x = x.clone()
                    x[0, 0] = float("nan")  # a corrupt feature in this rank's batch
                elif FAULT == "hook-exception":
                    def clip_hook(grad):
                        raise ValueError("gradient clipping hook: non-finite gradient norm")
                    next(model.parameters()).register_hook(clip_hook)
                elif FAULT == "recursion":
                    log.info("rank %d resolving the augmentation config", rank)
                    config = {"augment": "${augment}"}  # an entry that refers to itself
                    _resolve(config, "augment")
                elif FAULT == "corrupt-shard":
                    log.info("rank %d loading data shard %d", rank, step)
                    payload = pickle.dumps({"x": x.tolist()})
                    torn = b"\x00" * 16 + payload[16:]  # the copy's first block never arrived
                    x = torch.tensor(pickle.loads(torn)["x"])
                elif FAULT == "sysexit-msg":
                    sys.exit(f"rank {rank}: health check failed: local scratch disk 97% full, refusing to continue")
                elif FAULT == "sigint-one":
                    os.kill(os.getpid(), signal.SIGINT)
                    time.sleep(5)
                elif FAULT == "sigterm-one":
                    os.kill(os.getpid(), signal.SIGTERM)
                    time.sleep(5)
                elif FAULT == "barrier-one-rank":
                    log.info("rank %d debug barrier", rank)
                    dist.barrier()
                elif FAULT == "thread-exception-hang":
                    handoff = queue.Queue()

                    def prefetch(record):
                        log.info("rank %d prefetch thread reading record %d", rank, step)
                        handoff.put(record["targets"])  # this record was written without targets

                    threading.Thread(target=prefetch, args=({"inputs": x},), name="prefetch", daemon=True).start()
                    y = handoff.get()  # no timeout: waits for a thread that is gone
                elif FAULT == "fd-leak":
                    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
                    resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))  # the node's ulimit -n
                    cache = tempfile.mkdtemp(prefix=f"lab-featcache-r{rank}-")
                    log.info("rank %d building feature cache in %s", rank, cache)
                    handles = []
                    for i in range(400):
                        handles.append(open(os.path.join(cache, f"sample{i:05d}.bin"), "wb"))  # never closed
                elif FAULT == "none-handled":
                    try:
                        raise ConnectionError("metrics endpoint http://metrics.internal:9091 refused the connection")
                    except ConnectionError:
                        log.exception("rank %d: metrics upload failed at step %d, skipping it", rank, step)
                elif FAULT == "nonfinite-clip":
                    x = x.clone()
                    x[3, 5] = float("inf")  # a corrupt feature in this rank's batch
                elif FAULT == "py-memoryerror":
                    size = 2 ** 44  # the config's cache_mb, read as bytes times 2**24 by mistake
                    log.info("rank %d caching decoded samples (%d bytes)", rank, size)
                    cache = bytearray(size)
                    del cache
                elif FAULT == "none-retry-errors":
                    for attempt in (1, 2, 3):
                        if attempt < 3:
                            log.error("rank %d metrics upload failed (attempt %d/3): ConnectionResetError: [Errno 104] "
                                      "Connection reset by peer; retrying in 0.2 s", rank, attempt)
                            time.sleep(0.2)
                        else:
                            log.info("rank %d metrics upload ok on attempt %d", rank, attempt)
                elif FAULT == "unicode-shard":
                    shard = os.path.join(tempfile.mkdtemp(prefix=f"lab-text-r{rank}-"), f"captions-{step:05d}.txt")
                    with open(shard, "wb") as f:
                        f.write("a photo of a café\n".encode("latin-1"))  # written by a tool that used latin-1
                    log.info("rank %d reading text shard %s", rank, shard)
                    with open(shard, encoding="utf-8") as f:
                        f.read()
                elif FAULT == "shard-missing":
                    shard = os.path.join(os.environ.get("LAB_CKPT_DIR", "/tmp"), "shards",
                                         f"train-{rank * 100 + step:05d}-of-{world * 100:05d}.bin")
                    log.info("rank %d opening data shard %s", rank, shard)
                    with open(shard, "rb") as f:
                        f.read(64)
                elif FAULT == "none-oom-retry":
                    rows = 2 ** 38  # the config's cache_rows, read as a power of two by mistake
                    log.info("rank %d building feature cache (%d rows x 16)", rank, rows)
                    try:
                        cache = torch.empty(rows, 16)
                        del cache
                    except RuntimeError:
                        log.exception("rank %d: feature cache does not fit in host memory, training without it", rank)
                elif FAULT == "import-missing":
                    log.info("rank %d starting the experiment tracker", rank)
                    import importlib
                    importlib.import_module("wandb")
            if FAULT == "ckpt-read-race" and step == step_at:
                path = os.path.join(os.environ.get("LAB_CKPT_DIR", tempfile.gettempdir()),
                                    f"lab-{os.environ.get('MASTER_PORT')}-ckpt-step{step}.pt")
                if rank == 0:
                    log.info("rank 0 saving checkpoint to %s", path)
                    buf = io.BytesIO()
                    torch.save(model.module.state_dict(), buf)
                    data = buf.getvalue()
                    with open(path, "wb") as f:  # written in place, not to a temporary name
                        f.write(data[:len(data) // 2])
                        f.flush()
                        time.sleep(3)  # the rest of the write on a slow shared file system
                        f.write(data[len(data) // 2:])
                    log.info("rank 0 saved checkpoint %s", path)
                elif culprit:  # the evaluating rank picks up every new checkpoint it sees
                    while not (os.path.exists(path) and os.path.getsize(path) > 0):
                        time.sleep(0.05)
                    log.info("rank %d evaluating the newest checkpoint %s", rank, path)
                    model.module.load_state_dict(torch.load(path))
            if FAULT == "new-group-skip" and step == step_at:
                if not culprit:  # the culprit logs no metrics, so its branch never builds the group
                    log.info("rank %d building the metrics group", rank)
                    metrics = dist.new_group(list(range(world)))
                    value = torch.tensor([float(rank)])
                    dist.all_reduce(value, group=metrics)
                    log.info("rank %d metric %.1f", rank, value.item())
            if FAULT in ("ckpt-stale", "ckpt-truncated", "ckpt-module-prefix") and step == step_at:
                _resume(model, rank, world, culprit, step)
            if FAULT == "comm-hook-exception":
                hook_steps[0] = step
            if FAULT == "backward-twice" and culprit and step == step_at:
                loss = torch.nn.functional.mse_loss(model(x), y)
                opt.zero_grad()
                loss.backward()
                log.info("rank %d probing the gradient norm", rank)
                loss.backward()  # the probe's second backward through the same graph
            if FAULT == "exit-zero-quiet" and culprit and step == step_at:
                sys.exit(0)  # "max steps of this shard reached"
            if FAULT == "optim-resume-all" and step == step_at:
                path = os.path.join(os.environ.get("LAB_CKPT_DIR", "/tmp"),
                                    f"lab-{os.environ.get('TORCHELASTIC_RUN_ID', 'run')}-optim{step}.pt")
                if rank == 0:  # the checkpoint of a run whose config split weights and biases
                    params = list(model.parameters())
                    old_opt = torch.optim.SGD([{"params": params[::2]}, {"params": params[1::2], "weight_decay": 0.0}], lr=0.05)
                    torch.save(old_opt.state_dict(), path)
                dist.barrier()
                log.info("rank %d resuming the optimizer from %s", rank, path)
                opt.load_state_dict(torch.load(path))
            if FAULT == "p2p-tag-mismatch" and step == step_at:
                boundary = torch.full((4,), float(rank))
                incoming = torch.empty(4)
                tag = 7 if culprit else 0
                sent = dist.isend(boundary, dst=(rank + 1) % world, tag=tag)
                got = dist.irecv(incoming, src=(rank - 1) % world, tag=0)
                log.info("rank %d exchanging boundary activations", rank)
                got.wait()
                sent.wait()
                log.info("rank %d got boundary from rank %d", rank, int(incoming[0].item()))
            if FAULT == "none-slow-eval" and step == step_at:
                if culprit:
                    for k in range(1, 7):
                        time.sleep(0.5)
                        log.info("rank %d evaluating: batch %d/6", rank, k)
                dist.barrier()
                log.info("rank %d passed the evaluation barrier", rank)
            if FAULT == "tqdm-straggler" and step == step_at:
                from tqdm import tqdm
                per = (3 * float(os.environ.get("LAB_PG_TIMEOUT", "15")) / 30) if culprit else 0.01
                for _ in tqdm(range(30), desc=f"rank {rank} eval", mininterval=0.5):
                    time.sleep(per)
                dist.barrier()
                log.info("rank %d passed the evaluation barrier", rank)
            if FAULT == "group-order" and step == step_at:
                evens, odds = list(range(0, world, 2)), list(range(1, world, 2))
                log.info("rank %d building the even and odd sub-groups", rank)
                if culprit:  # this rank's helper builds them the other way round
                    g_odd = dist.new_group(odds)
                    g_even = dist.new_group(evens)
                else:
                    g_even = dist.new_group(evens)
                    g_odd = dist.new_group(odds)
                metric = torch.tensor([float(rank)])
                dist.all_reduce(metric, group=g_even if rank % 2 == 0 else g_odd)
                log.info("rank %d sub-group metric %.1f", rank, metric.item())
            if FAULT == "scatter-short" and step == step_at:
                weight = torch.empty(1)
                parts = [torch.full((1,), 1.0 / (r + 1)) for r in range(world - 1)] if rank == 0 else None
                log.info("rank %d receiving its loss weight", rank)
                dist.scatter(weight, scatter_list=parts, src=0)
                log.info("rank %d loss weight %.3f", rank, weight.item())
            if FAULT == "main-first-exception" and step == step_at:
                if rank == 0:
                    log.info("rank 0 preparing the validation split (main process first)")
                    raw = os.path.join(os.environ.get("LAB_CKPT_DIR", "/tmp"), "data", "raw", "val-00000.jsonl")
                    with open(raw) as f:
                        f.readline()
                dist.barrier()
                log.info("rank %d has the validation split", rank)
            if FAULT == "noise-then-crash" and step == 1 and rank == (min(lab_culprits(1)) + 1) % world:
                log.error("rank %d failed to load optional kernel extension fused_adam_cuda: ImportError: libcudart.so.12: "
                          "cannot open shared object file: No such file or directory; falling back to the PyTorch "
                          "implementation", rank)
            if FAULT == "noise-then-crash" and culprit and step == step_at:
                label = 7
                log.info("rank %d step %d: checking labels", rank, step)
                if label >= 4:
                    raise ValueError(f"label index {label} out of range for 4 classes (sample {step * 8 + 2})")
            if FAULT == "chained-disk-full" and culprit and step == step_at:
                path = os.environ.get("LAB_CKPT_PATH", "/dev/full")
                log.info("rank %d saving checkpoint to %s", rank, path)
                try:
                    torch.save(model.module.state_dict(), path)
                except RuntimeError as err:  # torch's writer reports the short write as a RuntimeError
                    raise RuntimeError(f"checkpoint save failed at step {step}: {path}") from err
            if FAULT == "mkdir-race-all" and step == step_at:
                folder = os.path.join(os.environ.get("LAB_CKPT_DIR", "/tmp"),
                                      f"lab-{os.environ.get('TORCHELASTIC_RUN_ID', 'run')}-{os.environ.get('MASTER_PORT')}-ckpt-step{step}")
                log.info("rank %d saving its shard to %s", rank, folder)
                os.makedirs(folder)  # no exist_ok: every rank runs this line
                torch.save(model.module.state_dict(), os.path.join(folder, f"rank{rank}.pt"))
            if FAULT == "weights-only-all" and step == step_at:
                path = os.path.join(os.environ.get("LAB_CKPT_DIR", "/tmp"),
                                    f"lab-{os.environ.get('TORCHELASTIC_RUN_ID', 'run')}-step{step}.pt")
                if rank == 0:  # the trainer's checkpoint: weights plus the run's arguments
                    args = argparse.Namespace(lr=0.05, steps=STEPS, world=world)
                    torch.save({"model": model.module.state_dict(), "args": args, "step": step}, path)
                dist.barrier()
                log.info("rank %d resuming from %s", rank, path)
                model.module.load_state_dict(torch.load(path)["model"])
            if FAULT == "nonfinite-clip":
                loss = torch.nn.functional.mse_loss(model(x), y)
                log.info("rank %d step %d loss %.4f", rank, step, loss.item())
                opt.zero_grad()
                loss.backward()
                norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)
                opt.step()
                log.info("rank %d step %d grad norm %.4f", rank, step, norm.item())
                time.sleep(0.1)
                continue
            if FAULT == "none-recompile-limit":
                rows = 8 - step % 6  # the batch's valid rows: a new length at each step
                log.info("rank %d step %d metric %.4f", rank, step, batch_metric(model(x[:rows]).detach()).item())
            if FAULT == "cpu-alloc-all" and step == step_at:
                rows = 2 ** 38  # the config's cache_rows, read as a power of two by mistake
                log.info("rank %d building feature cache (%d rows x 16)", rank, rows)
                cache = torch.empty(rows, 16)
                del cache
            if FAULT == "allreduce-dtype" and step == step_at:
                metric = torch.tensor([float(step)], dtype=torch.float64 if culprit else torch.float32)
                dist.all_reduce(metric)
                log.info("rank %d synced metric %.4f", rank, metric.item())
            if FAULT == "resume-missing-all" and step == step_at:
                path = os.path.join(os.environ.get("LAB_CKPT_DIR", "/tmp"), "run-2026-11-30", "step_001000.pt")
                log.info("rank %d resuming from %s", rank, path)
                model.module.load_state_dict(torch.load(path))
            if FAULT == "store-get-missing" and step == step_at:
                store = dist.distributed_c10d._get_default_store()
                if rank == 0:
                    store.set("eval_ready", "1")
                key = "eval-ready" if culprit else "eval_ready"
                log.info("rank %d waiting for %s in the store", rank, key)
                store.wait([key], timedelta(seconds=5))
            if FAULT == "inplace-autograd" and culprit and step == step_at:
                pred = torch.sigmoid(model(x))
                pred.clamp_(0.05, 0.95)  # clip this batch's outliers (in place)
                loss = torch.nn.functional.mse_loss(pred, y)
                backward_step(model, opt, loss)
                log.info("rank %d step %d loss %.4f", rank, step, loss.item())
                continue
            if FAULT == "nosync-one-rank" and culprit and step == step_at:
                with model.no_sync():
                    loss = train_step(model, opt, x, y)
                log.info("rank %d step %d loss %.4f", rank, step, loss.item())
                continue
            if FAULT == "double-init" and culprit and step == step_at:
                log.info("rank %d setting up the evaluation process group", rank)
                dist.init_process_group("gloo")
            if FAULT == "pg-destroyed-early" and culprit and step == step_at:
                log.info("rank %d evaluation done, cleaning up", rank)
                dist.destroy_process_group()
            if FAULT == "skip-step" and culprit and step == step_at:
                try:
                    raise ValueError(f"batch {step}: label tensor has 3 columns, expected 4")
                except ValueError as err:
                    log.warning("rank %d skipping batch %d: %s", rank, step, err)
                    continue
            if FAULT == "compile-fullgraph":
                if culprit and step == step_at:
                    x, y = x[:7], y[:7]  # the shard's short last batch
                loss = loss_fn(model(x), y)
                backward_step(model, opt, loss)
            elif FAULT in ("unused-one-rank", "unused-all", "static-graph-change"):
                # this batch carries no aux targets (unused-all: no batch ever does)
                with_aux = FAULT != "unused-all" and not (culprit and step == step_at)
                out, aux = model(x, with_aux)
                loss = torch.nn.functional.mse_loss(out, y)
                if aux is not None:
                    loss = loss + 0.1 * aux.pow(2).mean()
                backward_step(model, opt, loss)
            elif no_ddp:
                loss = torch.nn.functional.mse_loss(model(x), y)
                backward_step(model, opt, loss, world)
            else:
                if FAULT == "oom-skip-desync" and culprit and step == step_at:
                    rows = 2 ** 38  # the augmentation cache's rows, read as a power of two by mistake
                    try:
                        cache = torch.empty(rows, 16)
                        del cache
                    except RuntimeError as err:  # "skip the batch on OOM", on this rank only
                        log.warning("rank %d step %d: skipping batch: %s", rank, step, str(err).splitlines()[0])
                        time.sleep(0.1)
                        continue
                if FAULT == "none-nan-skip":
                    if culprit and step == step_at:
                        x = x.clone()
                        x[2, 1] = float("nan")  # a corrupt feature in this rank's batch
                    with torch.no_grad():
                        probe = torch.nn.functional.mse_loss(model.module(x), y)
                    bad = torch.tensor([0.0 if torch.isfinite(probe) else 1.0])
                    dist.all_reduce(bad)
                    if not torch.isfinite(probe):
                        log.warning("rank %d step %d: loss is %s, skipping this step's update on every rank",
                                    rank, step, probe.item())
                    if bad.item() > 0:
                        log.info("rank %d step %d skipped (non-finite loss on %d rank(s))", rank, step, int(bad.item()))
                        continue
                if FAULT == "none-grad-accum" and step % 2 == 0:
                    with model.no_sync():  # accumulate: the all_reduce runs on the second micro-batch
                        torch.nn.functional.mse_loss(model(x), y).backward()
                    loss = torch.nn.functional.mse_loss(model(x), y).detach()
                    log.info("rank %d step %d: accumulated micro-batch 1/2", rank, step)
                elif FAULT == "none-grad-accum":
                    loss = torch.nn.functional.mse_loss(model(x), y)
                    loss.backward()
                    opt.step()
                    opt.zero_grad()
                elif FAULT == "none-deprecation-warnings":
                    with torch.cuda.amp.autocast():  # deprecated; and no CUDA here: disabled, with a warning
                        loss = torch.nn.functional.mse_loss(model(x), y)
                    backward_step(model, opt, loss)
                elif FAULT == "none-dcp-save" and step == step_at:
                    import torch.distributed.checkpoint as dcp
                    loss = train_step(model, opt, x, y)
                    where = os.path.join(os.environ.get("LAB_CKPT_DIR", "/tmp"),
                                         f"lab-{os.environ.get('TORCHELASTIC_RUN_ID', 'run')}-dcp-step{step}")
                    log.info("rank %d step %d: saving a distributed checkpoint to %s", rank, step, where)
                    dcp.save({"model": model.module.state_dict()}, checkpoint_id=where)
                    state = {"model": model.module.state_dict()}
                    dcp.load(state, checkpoint_id=where)
                    model.module.load_state_dict(state["model"])
                    log.info("rank %d step %d: distributed checkpoint saved and read back", rank, step)
                    dist.barrier()
                    if rank == 0:
                        import shutil
                        shutil.rmtree(where, ignore_errors=True)
                elif FAULT == "none-detect-anomaly" and step == step_at:
                    with torch.autograd.detect_anomaly():  # a debugging leftover around one step
                        loss = train_step(model, opt, x, y)
                elif FAULT == "custom-backward-exception":
                    out = _FusedGelu.apply(model(x), culprit and step == step_at)
                    loss = torch.nn.functional.mse_loss(out, y)
                    backward_step(model, opt, loss)
                else:
                    loss = train_step(model, opt, x, y)
            log.info("rank %d step %d loss %.4f", rank, step, loss.item())
            if FAULT == "lr-divergence":
                if step == step_at:
                    log.info("rank %d lr schedule: warmup done, lr -> 1e6", rank)
                    for g in opt.param_groups:
                        g["lr"] = 1e6
                if not torch.isfinite(loss):
                    raise FloatingPointError(f"rank {rank}: loss is {loss.item()} at step {step}, stopping")

            if step == step_at:
                metric = loss.detach().reshape(1).clone()
                if FAULT in ("detail-mismatch", "detail-allreduce"):
                    if culprit:
                        dist.broadcast(metric, src=0)
                    else:
                        dist.all_reduce(metric)
                    log.info("rank %d synced metric %.4f", rank, metric.item())
                elif FAULT == "allgather-uneven":
                    preds = model(x).detach()[:, 0]
                    if culprit:
                        preds = preds[:5]  # the shard's last, short batch
                    out = [torch.empty_like(preds) for _ in range(world)]
                    dist.all_gather(out, preds)
                    log.info("rank %d gathered %d predictions", rank, sum(t.numel() for t in out))
                elif FAULT == "broadcast-src":
                    flag = torch.tensor([float(rank)])
                    dist.broadcast(flag, src=rank if culprit else 0)
                    log.info("rank %d got stop flag %.0f", rank, flag.item())
                elif FAULT == "gather-list-nondst":
                    # the metrics helper always builds the list, even on ranks that only send
                    parts = [torch.empty_like(metric) for _ in range(world)] if (rank == 0 or culprit) else None
                    dist.gather(metric, gather_list=parts, dst=0)
                    if rank == 0:
                        log.info("rank 0 gathered metrics %s", [round(t.item(), 4) for t in parts])
                elif FAULT == "pickle-object":
                    objs = [{"step": step, "filter": (lambda r: r > 0)} if culprit else None]
                    dist.broadcast_object_list(objs, src=min(lab_culprits(1)))
                    log.info("rank %d got the run config", rank)
                elif FAULT == "eval-exception":
                    if culprit:
                        log.info("rank %d running the evaluation", rank)
                        scores = []  # the eval split came out empty on this rank
                        log.info("rank %d eval score %.3f", rank, sum(scores) / len(scores))
                    dist.barrier()
                elif FAULT == "alltoall-split":
                    # each rank sends 2 rows to every rank; the culprit's router sends 3 to each
                    per = 3 if culprit else 2
                    tokens = torch.randn(per * world, 4)
                    out = torch.empty(2 * world, 4)
                    dist.all_to_all_single(out, tokens, output_split_sizes=[2] * world, input_split_sizes=[per] * world)
                    log.info("rank %d exchanged %d tokens", rank, out.shape[0])
                elif FAULT == "dcp-skip":
                    if not culprit:  # the culprit's branch skips the save
                        import torch.distributed.checkpoint as dcp
                        folder = os.path.join(os.environ.get("LAB_CKPT_DIR", "/tmp"),
                                              f"lab-{os.environ.get('TORCHELASTIC_RUN_ID', 'run')}-dcp{step}")
                        log.info("rank %d saving distributed checkpoint to %s", rank, folder)
                        dcp.save({"model": model.module.state_dict()}, checkpoint_id=folder)
                    log.info("rank %d checkpoint step done", rank)
                elif FAULT == "broadcast-shape":
                    rows = 8 if culprit else 10  # the culprit's config lacks the two special tokens
                    table = torch.arange(rows * 4, dtype=torch.float32).reshape(rows, 4) if rank == 0 else torch.empty(rows, 4)
                    dist.broadcast(table, src=0)
                    log.info("rank %d got the vocabulary table (%d rows)", rank, rows)
                elif FAULT == "subgroup-barrier":
                    dist.barrier() if culprit else dist.barrier(group=everyone)
                    log.info("rank %d passed the evaluation barrier", rank)
                elif FAULT == "ckpt-disk-full" and culprit:
                    path = os.environ.get("LAB_CKPT_PATH", "/dev/full")
                    log.info("rank %d saving checkpoint to %s", rank, path)
                    torch.save(model.state_dict(), path)
                elif FAULT == "ckpt-missing-dir" and culprit:
                    path = os.path.join(os.environ.get("LAB_CKPT_DIR", "/nonexistent/ckpt"), f"step{step}.pt")
                    log.info("rank %d saving checkpoint to %s", rank, path)
                    torch.save(model.state_dict(), path)
            time.sleep(0.1)

        if FAULT == "uneven-epoch-eval" and culprit:
            log.info("rank %d: shard exhausted after %d batches, running validation", rank, step_at)
            with torch.no_grad():
                x, y = next(batches(rank + world, 1))
                val = torch.nn.functional.mse_loss(model.module(x), y).reshape(1)
            dist.all_reduce(val)  # the mean validation loss over ranks
            log.info("rank %d validation loss %.4f", rank, val.item() / world)
        if FAULT == "early-exit" and culprit:
            log.info("rank %d: epoch finished after %d steps, shutting down", rank, step_at)
            dist.destroy_process_group()
            return
        if FAULT in ("none", "none-noddp", "none-handled", "none-slow-eval", "none-recompile-limit", "none-join-uneven", "none-retry-errors", "none-oom-retry", "none-atexit-error",
                     "none-nan-skip", "none-early-stop", "none-resume-start", "none-tqdm-all-ranks", "none-grad-accum", "none-dcp-save", "none-deprecation-warnings", "none-signal-checkpoint", "none-profiler-table", "none-checkpoint-reentrant", "none-find-unused-warning", "none-scheduler-order-warning", "none-del-exception-ignored", "none-meshgrid-warning", "none-gradscaler-cpu", "none-target-size-warning", "none-dataloader-workers-warning", "none-detect-anomaly", "none-tensor-copy-warning", "none-nested-tensor-warning", "none-nonleaf-grad-warning", "none-autocast-cuda-warning", "none-pin-memory-warning", "none-softmax-dim-warning", "none-typed-storage-warning", "none-get-lr-warning", "none-clip-grad-norm-warning", "none-sdp-kernel-warning"):
            dist.monitored_barrier(timeout=timedelta(seconds=30))
            if rank == 0:
                path = os.path.join(os.environ.get("LAB_CKPT_DIR", "/tmp"), f"lab-{os.getpid()}.pt")
                torch.save(model.state_dict(), path)
                os.remove(path)
                log.info("rank 0 saved the final checkpoint")
        log.info("rank %d training finished", rank)
        dump_fr("exit")
        dist.destroy_process_group()
        if FAULT == "segfault-at-exit" and culprit:
            ctypes.string_at(0)  # the native extension's exit handler
    except BaseException:
        dump_fr("exception")
        raise


if __name__ == "__main__":
    main()
