"""Structural patterns the engine reads besides the knowledge base.

These are not failure modes (those live in ``entries/``): they are the shapes of launcher
summaries and world-size hints that let the engine attribute lines and count ranks. They
are scanned in the same pass as the signatures.
"""

from __future__ import annotations

# fact id -> regex (unanchored; named groups are read on hit lines only)
FACTS: dict[str, str] = {
    # torchrun / torchelastic ChildFailedError summary (torch/distributed/elastic/multiprocessing/errors)
    "tr-root-cause": r"Root Cause \(first observed failure\):",
    # ([ \t]* rather than \s* before $: \s would let the scanner's match run into the next line)
    "tr-failures": r"\bFailures:[ \t]*$",
    "tr-failed-binary": r"^\s*\S+ FAILED[ \t]*$",
    "tr-index": r"^\s*\[(?P<value>\d+)\]:$",
    "tr-time": r"^\s*time\s*: (?P<value>\d{4}-\d{2}-\d{2}_\d{2}:\d{2}:\d{2})",
    "tr-host": r"^\s*host\s*: (?P<host>\S+)",
    "tr-rank": r"^\s*rank\s*: (?P<rank>\d+) \(local_rank: (?P<local_rank>\d+)\)",
    "tr-exitcode": r"^\s*exitcode\s*: (?P<exitcode>-?\d+) \(pid: (?P<pid>\d+)\)",
    "tr-traceback": r"^\s*traceback\s*: (?P<value>.*)",
    # torchelastic agent: "failed (exitcode: -7) local_rank: 0 (pid: 5275) of binary: /usr/bin/python"
    # ("... of fn: main (start_method: spawn)" from torch.distributed.run's multiprocessing
    # context; and a vendor build's rewording, seen in a real log: "failed (exitcode: -9) for
    # binary located at /env/bin/python3.10 with local_rank: 0 (process ID: 71)")
    "tr-agent-failed": r"failed \(exitcode: (?P<exitcode>-?\d+)\)(?: for binary located at .*? with)? local_rank: (?P<local_rank>\d+) \((?:pid|process ID): (?P<pid>\d+)\)",
    # the elastic agent about to start the worker group again after a failure (torch/distributed/
    # elastic/agent/server/api.py: "[default] Worker group FAILED. 3/3 attempts left; will restart
    # worker group"): the attempt after it is a new one (diagnose/restarts.py)
    "tr-restart": r"Worker group FAILED\. (?P<value>\d+)/\d+ attempts left; will restart worker group",
    # DeepSpeed's launcher (deepspeed/launcher/launch.py sigkill_handler) after a worker's
    # non-zero exit: "[...cmd...] exits with return code = -9". The cmd is the node's LAST
    # spawned worker's (the spawn loop's variable), so '--local_rank=0' in it means the node
    # ran one worker, which is then the one that exited; any other local rank tells nothing.
    # The line is matched from its tail ("...] exits with return code = N"): pastes quote it
    # without the command ("[launch.py:325:sigkill_handler] exits with return code = -9") or
    # start it in the middle of a long command.
    "ds-exit": r"(?:sigkill_handler\] (?:.*?'--local_rank=(?P<local_rank>0)'[,\]])?.*)?\] exits with return code = (?P<exitcode>-?\d+)",
    # MosaicML Composer's launcher (composer/cli/launcher.py): the first worker it saw exit with
    # an error ("Rank 2 crashed with exit code -7."), each failed worker at the end, and the
    # SIGTERM it sends the others (collateral)
    "lc-composer-crash": r"\bRank (?P<rank>\d+) crashed with exit code (?P<exitcode>-?\d+)\.",
    "lc-composer-exit": r"\bGlobal rank (?P<rank>\d+) \(PID (?P<pid>\d+)\) exited with code (?P<exitcode>-?\d+)",
    "lc-composer-sigterm": r"\bKilling global rank (?P<rank>\d+) \(PID (?P<pid>\d+)\) with SIGTERM",
    # Horovod's launcher (horovod/runner/gloo_run.py, "Process {idx} exit with status code {ec}."
    # with idx = the slot's rank): a worker that exited non-zero, in the order they exited; a
    # status above 128 is a shell's report of a signal (137 = SIGKILL)
    "lc-horovod-exit": r"\bProcess (?P<rank>\d+) exit with status code (?P<exitcode>-?\d+)\.",
    # srun's record of tasks that ended (Slurm's launch plugin: "%s: %s %s: Exited with exit code %d"
    # and "%s: %s %s: %s%s" with strsignal()): "srun: error: node1: task 5: Exited with exit code 1",
    # "srun: error: node1: tasks 0,2,6: Killed", "tasks 9-10,12-15: Terminated". The task id is the
    # Slurm task rank, the training rank when srun starts one task per GPU.
    "lc-srun-task": r"srun: error: (?P<host>[\w.-]+): tasks? (?P<value>\d[\d,-]*): (?:Exited with exit code (?P<exitcode>\d+)|(?P<signal>Killed|Terminated|Aborted|Segmentation fault|Bus error|Floating point exception|Illegal instruction|Hangup|Interrupt))",
    # HPE Cray PALS's mpiexec (Polaris, Aurora and other Cray EX systems), one line per rank that
    # ended abnormally, in the order it saw them: "x3200c0s19b1n0.hsn.cm.polaris.alcf.anl.gov: rank 0
    # exited with code 134", "x4217c5s2b0n0: rank 5 died from signal 11", "... died from signal 6 and
    # dumped core" (real logs); a code above 128 is a shell's report of signal code-128; the ranks
    # it reports dying of SIGTERM after the first are the ones it stopped
    "lc-pals-rank": r"^(?P<host>[\w.-]+): rank (?P<rank>\d+) (?:exited with code (?P<exitcode>\d+)|died from signal (?P<signal_num>\d+))(?: and dumped core)?\s*$",
    # Hugging Face text-generation-inference's launcher (launcher/src/main.rs): a shard process that
    # died of a signal, in the shard's tracing span ("... with signal 7 rank=1")
    "lc-tgi-signal": r"Shard process was signaled to shutdown with signal (?P<signal_num>\d+)(?: rank=(?P<rank>\d+))?",
    # torch.multiprocessing.spawn's ProcessRaisedException (torch/multiprocessing/spawn.py):
    # "-- Process N terminated with the following error:" and then process N's own traceback,
    # unprefixed
    "spawn-raised": r"-- Process (?P<local_rank>\d+) terminated with the following error:",
    # torch_xla's xmp.spawn reports a worker's exception on one line, "Exception in device=TPU:5:
    # <str(e)>" (torch_xla/distributed/xla_multiprocessing.py _start_fn / _mp_start_fn), and then
    # prints its traceback unprefixed; the device's index is the process's global ordinal
    # (_get_mp_device_ordinal: gindex, the local index only in a sea-of-devices set-up)
    "xla-spawn-raised": r"^Exception in device=(?:TPU|GPU|CPU|XPU|NEURON):(?P<rank>\d+): (?P<value>\S.*)",
    # ... and its ProcessExitedException for a process that died without raising: "process 3
    # terminated with signal SIGSEGV", "process 0 terminated with exit code 1" (the first failed
    # process join() found; it then terminates the others)
    "lc-spawn-exited": r"\bprocess (?P<local_rank>\d+) terminated with (?:signal (?P<signal>SIG[A-Z0-9]+)|exit code (?P<exitcode>-?\d+))",
    # the launcher terminating the survivors: collateral, never a cause
    "tr-sigterm-sent": r"Sending process (?P<pid>\d+) closing signal (?P<signal>SIG[A-Z]+)",
    # ... and escalating to SIGKILL when a worker ignores SIGTERM: its exit -9 is the launcher's doing
    "tr-forced-kill": r"Unable to shutdown process (?P<pid>\d+) via \S+, forcefully exiting via \S+",
    # the last line of a Python traceback: which exception ended a rank
    "py-exception": r"^(?P<value>(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Interrupt|Exit))(?::\s|\s*$)",
    # (a logger may put its bracketed fields before it: "[decorator.py (306)] [ERROR] [PID 18175] Traceback ...")
    # ... and IPython's (a notebook, Jupyter's console): the exception's name and then "Traceback (most
    # recent call last)" on one line, padded with dashes above ("OutOfMemoryError     Traceback ...")
    "py-traceback": r"^(?:\[[^\]\n]{0,80}\] ?){0,6}Traceback \(most recent call last\):|^(?P<value>(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Interrupt|Exit)) {3,}Traceback \(most recent call last\)\s*$",
    # an exception a program's excepthook logged before its traceback (OLMo's olmo/util.py:
    # log.critical("Uncaught %s: %s", exctype.__name__, value, exc_info=...)), in a log line
    # whose prefix (host:rank, logger:line, level) the prefix parser does not strip
    "py-uncaught": r"\bCRITICAL\b.{0,80}?\bUncaught (?P<value>(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Interrupt|Exit)): ",
    # a traceback kept as one escaped string ("...\\n  File \\"adamw.py\\", line 502, in step\\n
    # RuntimeError: ...\\n"): a torchelastic error file's message, a JSON log record or a repr
    # printed whole; its exception is the line after an escaped newline
    "py-escaped": r"\\n(?P<value>(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Interrupt|Exit)): \S",
    # Python's report of an exception it could not raise and dropped (sys.unraisablehook: in a
    # __del__, a weakref callback, an atexit callback; "Exception ignored in: <function
    # _MultiProcessingDataLoaderIter.__del__ at 0x...>", "Exception ignored in atexit callback:
    # ..."), followed by that exception's traceback: the program went on, so that exception is
    # not a failure of the process
    "py-ignored": r"^(?:\^C)?Exception ignored (?:in|while)\b",
    # a traceback frame: where a traceback was when a paste or a dying process cut it off
    "py-frame": r"^\s*File \"(?P<value>[^\"]+)\", line \d+, in \S+",
    # a frame of faulthandler's stack (no comma before "in"), printed under a fatal signal's
    # "Fatal Python error: Segmentation fault" / "Current thread 0x... (most recent call first):"
    "py-fault-frame": r"^\s*File \"(?P<value>[^\"]+)\", line \d+ in \S+\s*$",
    # a traceback's code line that calls a barrier or a collective ("accelerator.wait_for_everyone()",
    # "dist.barrier()", "torch.distributed.all_reduce(t)"): a traceback cut off there was
    # waiting for its peers, not failing by itself
    # (and the context managers that make every rank but the main one wait in a barrier while it
    # works: "with training_args.main_process_first(desc=...)", Accelerate's main_process_first,
    # YOLOv5/Ultralytics' "with torch_distributed_zero_first(LOCAL_RANK):")
    "py-collective-call": r"^\s*(?:with\s+)?(?:[\w.]+\.)?(?P<value>wait_for_everyone|barrier|monitored_barrier|all_reduce|all_gather\w*|broadcast|broadcast_object_list|reduce_scatter\w*|all_to_all\w*|gather_object|scatter_object_list|main_process_first|local_main_process_first|torch_distributed_zero_first)\(",
    # a traceback's code line of a point-to-point call with a literal peer ("dist.recv(input,0)",
    # "dist.send(tensor=x, dst=1)"): the rank at the other end of a connection it then lost
    "py-p2p-call": r"^\s*(?:[\w.]+\.)?(?P<value>i?send|i?recv)\(\s*(?:tensor\s*=\s*)?[\w.\[\]]+\s*,\s*(?:(?:src|dst)\s*=\s*)?(?P<peer_rank>\d+)\s*[,)]",
    # a C++ exception that ended the process (std::terminate), and its message: gloo's
    # EnforceNotMet, c10::Error, NCCL and CUDA errors raised outside Python
    # LLVM's libc++abi (PyTorch's macOS builds) says the same on one line, the exception's type and
    # message after it: "libc++abi: terminating due to uncaught exception of type gloo::EnforceNotMet:
    # [enforce fail at ...]" (older: "libc++abi.dylib: terminating with uncaught exception of type ...")
    # ... and the same abort as gdb shows it in a core file's backtrace: its own "Program terminated
    # with signal SIGABRT" line, or the backtrace's first frames in abort() ("#1 0x... in abort ()
    # from /lib64/libc.so.6")
    "cpp-terminate": r"terminate called (?:after throwing an instance of '(?P<value>[^']+)'|recursively|without an active exception)"
                     r"|libc\+\+abi(?:\.dylib)?: terminating (?:due to|with) uncaught exception of type \S"
                     r"|^Program terminated with signal SIGABRT\b|^#[01]\s+(?:0x[0-9A-Fa-f]+ in )?(?:__GI_)?abort \("
                     # glog's LOG(FATAL) / failed CHECK, on its way to abort() (glog's LogMessage::Fail,
                     # under the "F20220801 07:29:34.701110 2256 file.cc:42] message" line)
                     r"|^\*\*\* Check failure stack trace: \*\*\*",
    "cpp-what": r"^\s*what\(\):\s+(?P<value>\S.*)",
    # a fatal signal that ended the process by a fault of its own: faulthandler's report ("Fatal
    # Python error: Floating point exception", Python's faulthandler.c names SIGSEGV, SIGFPE,
    # SIGBUS, SIGILL so) and a shell's note of a child killed by one ("Segmentation fault (core
    # dumped)"). Not SIGABRT ("Aborted"): PyTorch's watchdog and heartbeat monitor take a hung
    # or timed-out process down with it, so it tells how a process ended, not why
    # The same signals as reported by the signal handlers HPC stacks install in every process:
    # UCX's ("[host:pid:0:tid] Caught signal 11 (Segmentation fault: address not mapped to
    # object at address 0x10)", ucs/debug/debug.c) and Open MPI's ("[host:21766] Signal:
    # Segmentation fault (11)", opal/util/stacktrace.c), each followed by its own backtrace;
    # and UCX's backtrace header alone ("==== backtrace (tid:   4304) ===="), which it prints
    # only on its way down (a fatal signal or a failed assertion); and tvm-ffi's SIGSEGV handler
    # (src/ffi/backtrace.cc, loaded with FlashInfer and other kernels built on it), its banner
    # and then the native frames as 'File "<unknown>", line 0, in <symbol>'
    "fatal-signal": r"^(?:==== backtrace \(tid:\s*\d+\) ====\s*$|!!!!!!! Segfault encountered !!!!!!!\s*$|Fatal Python error: (?P<value>Segmentation fault|Floating point exception|Bus error|Illegal instruction)\s*$|(?:Segmentation fault|Floating point exception|Bus error|Illegal instruction) \(core dumped\)\s*$|\[[^\]\s]+\] (?:Caught signal \d+ \(|Signal: )(?:Segmentation fault|Floating point exception|Bus error|Illegal instruction)\b"
                    # gdb opening a core file: "Program terminated with signal SIGSEGV, Segmentation fault."
                    r"|Program terminated with signal SIG(?:SEGV|BUS|FPE|ILL)\b)",
    # a frame of c10's C++ backtrace (c10/util/Backtrace.cpp: "frame #3: c10d::PrefixStore::get(...)
    # + 0x32 (0x7f49b752bb42 in .../libtorch_cpu.so)"), printed under the error's message and
    # "Exception raised from ... (most recent call first):"
    "cpp-frame": r"^\s*frame #\d+: (?P<value>\S.*)",
    # a report that lists one value per process, one line each: Accelerate's check before a
    # gather / pad / broadcast (accelerate/utils/operations.py verify_operation: "Input shapes:"
    # then "  - Process 0: [1024]" ...); the process that differs from the others is the odd one
    "per-rank-value": r"^\s*- Process (?P<rank>\d+): (?P<value>\[[^\]]*\]|\S+)",
    # a row of nvidia-smi's process table: the GPU, the process and the memory it holds there
    # ("|    0   N/A  N/A   2695172      C   ./train.par      26167MiB |"; before the MIG columns
    # "|    0     12345      C   python      1234MiB |"); a log viewer's "| " prefix may already
    # be peeled off. Several processes of one program on one GPU: claims.py
    "nvsmi-proc": r"^\|? *(?P<device>\d{1,2}) +(?:(?:N/A|\d+) +(?:N/A|\d+) +)?(?P<pid>\d{2,9}) +(?:C|G|C\+G|M|M\+C) +(?P<value>[^|\s](?:[^|]*[^|\s])?) +(?P<mem>\d+)MiB *(?:\| *)?$",
    # world size hints
    "world-size": r"\b(?:world_size|WORLD_SIZE|world size)\s*[=:]\s*(?P<world_size>\d+)",
    # NCCL's "comm 0x... rank R nranks N cudaDev D" (init and abort lines): world size, and
    # which global rank a host's device is
    "nccl-nranks": r"comm 0x[0-9a-f]+ rank (?P<rank>\d+) nranks (?P<world_size>\d+) cudaDev (?P<device>\d+)",
    "nproc-per-node": r"nproc_per_node\s*[=:]\s*(?P<value>\d+)",
    # lines in which the printing process states its own rank: c10d's store-based barrier
    # ("Rank 3: Completed store-based barrier for key:store_based_barrier_key:1 with 4 nodes.")
    # and ProcessGroupNCCL's abort reason at destruction ("Process Group destroyed on rank 0")
    "self-rank-barrier": r"Rank (?P<rank>\d+): Completed store-based barrier for key:(?P<key>\S+) with (?P<world_size>\d+) nodes",
    # c10d's store-based barrier of the default group (key 1), before it waits: "Added key:
    # store_based_barrier_key:1 to store for rank: 2" (a rank outside the world: claims.py)
    "self-rank-store-key": r"Added key: store_based_barrier_key:1 to store for rank: (?P<rank>\d+)",
    "self-rank-pg-destroyed": r"Process Group destroyed on rank (?P<rank>\d+)",
    # vLLM's report of each worker's place in the job (vllm/distributed/parallel_state.py: "rank 1 in
    # world size 2 is assigned as DP rank 0, PP rank 0, TP rank 1, EP rank 1"), printed behind the
    # worker's "(VllmWorkerProcess pid=N)" prefix: which global rank that pid is
    "self-rank-assigned": r"\brank (?P<rank>\d+) in world size (?P<world_size>\d+) is assigned as ",
    # the job's word that its work ended normally: torchelastic's agent ("[default] worker group
    # successfully finished. Waiting 300 seconds for other agents to finish." and "Local worker
    # group finished (WorkerState.SUCCEEDED)", torch/distributed/elastic/agent/server/api.py; the
    # torchelastic package of 2020 said "[default] All workers successfully finished."),
    # DeepSpeed's launcher per worker ("Process 23917 exits successfully.", deepspeed/launcher/
    # launch.py), Hugging Face Trainer's closing metrics ("{'train_runtime': 601.9411,
    # 'train_samples_per_second': ...") and Lightning's fit loop ("`Trainer.fit` stopped:
    # `max_epochs=10` reached."), and SageMaker's training toolkit when the entry point exited 0
    # ("sagemaker-training-toolkit INFO     Reporting training SUCCESS"; "sagemaker-containers" in
    # its older releases), and MLPerf's logging of a run that reached its target (":::MLLOG {...
    # "key": "run_stop", ... "status": "success"}", mlperf_logging's run_stop event), and the metrics
    # block that transformers' Trainer.log_metrics prints once a split's training or evaluation is
    # done ("***** eval metrics *****", as the example scripts end), and ESPnet's trainer when it
    # reached its last epoch ("(trainer:566) INFO: The training was finished at 1 epochs",
    # espnet2/train/trainer.py). What peers
    # print after it about a peer that left is teardown
    # (diagnose/ranktable.py _teardown).
    "run-done": r"\bworker group successfully finished\.|Local worker group finished \(WorkerState\.SUCCEEDED\)|"
                r"\[\w+\] All workers successfully finished\.|"
                r"\bsagemaker-(?:training-toolkit|containers) INFO\s+Reporting training SUCCESS\b|"
                r":::MLLOG \{.*\"key\": \"run_stop\".*\"status\": \"success\"|"
                r"\bProcess \d+ exits successfully\.|\{'train_runtime': [\d.]+, 'train_samples_per_second': |"
                r"^\s*\*{5} (?:train|eval|predict|test) metrics \*{5}\s*$|"
                r"`Trainer\.fit` stopped: `max_(?:epochs|steps)=\S+` reached\.|"
                r"\(trainer:\d+\) INFO: The training was finished at \d+ epochs\b",
    # NCCL's own report that the program is tearing a communicator down (misc/socket.cc's
    # "socketProgressOpt: abort called", printed as ncclCommAbort / destroy closes its sockets):
    # what the communication layer prints after it, when nothing failed before, is teardown
    # (diagnose/ranktable.py _teardown). Not its "comm ... - Abort COMPLETE" record: a watchdog
    # aborts a communicator the same way after a failure, so alone it says nothing of the end
    "comm-teardown": r"\bsocketProgressOpt: abort called\b",
    # c10d's wait for a key of the default group's gloo addresses, which ends in the global rank
    # that should have published it (TCPStore: "wait timeout after 10000ms, keys:
    # /default_pg/0//cpu//0/3"): a wait for a rank outside the others' world is claims.py's
    "store-wait-key": r"wait timeout after \d+ms, keys: /default_pg/\d+//cpu//\d+/(?P<peer_rank>\d+)\s*$",
    # PyTorch Lightning's announcement before each process joins the process group
    # (lightning/fabric/utilities/distributed.py: "Initializing distributed: GLOBAL_RANK: {},
    # MEMBER: {}/{}"; older releases: "initializing ddp: GLOBAL_RANK: 1, MEMBER: 2/8"): the
    # printing process's rank and the world size (two processes that announce one rank: claims.py)
    "self-rank-announce": r"(?:Initializing distributed|initializing ddp)\b[^:\n]{0,20}: GLOBAL_RANK: (?P<rank>\d+), MEMBER: \d+/(?P<world_size>\d+)",
    # NCCL's ring / channel setup ("Ring 00 : 1[1] -> 2[2] via direct shared memory",
    # "Channel 00/0 : 7[3] -> 0[0] [receive] via NET/IB/0"): the printing process is the
    # sending side, or the receiving side of a "[receive]" line; with the device index of its
    # "host:pid:tid [dev]" prefix it tells which global rank a host's device is
    "nccl-ring": r"(?:Ring|Channel) \d+(?:/\d+)? : (?P<src>\d+)(?:\[[0-9a-f]+\])? -> (?P<dst>\d+)(?:\[[0-9a-f]+\])? (?:\[(?P<dir>send|receive)\] )?via ",
}

# The facts that are an error report's own line (a Python exception, a logged uncaught one, a C++
# abort and its what(), torch_xla's report of a process's exception): the scanner keeps the lines
# above them, and a traceback or a backtrace near one is that error's, not one cut off before its
# message.
ERROR_FACTS = frozenset({"py-exception", "py-uncaught", "py-escaped", "cpp-terminate", "cpp-what", "fatal-signal", "xla-spawn-raised"})

# What the byte scanner looks for instead of a fact's own regex, where that is much cheaper
# and finds every line the regex matches. "[0]:" alone on a line: with its `$` the pattern
# costs the whole hyperscan pass a fifth of its speed (a leading "[" and digits are no
# literal to start from); the line's newline is (the scanner ends every buffer with one).
FACT_PREFILTER: dict[str, str] = {
    "tr-index": r"\[\d+\]:\r?\n",
    # a row of nvidia-smi's process table ends in its memory column: digits, "MiB" and the border
    "nvsmi-proc": r"\dMiB *(?:\| *)?\r?\n",
    # either form of a traceback's header (Python's, IPython's) holds this text
    "py-traceback": r"Traceback \(most recent call last\)",
}

# The fact-pattern regexes are anchored per line (they run on the prefix-stripped
# message), while the byte scanner needs an unanchored form.
