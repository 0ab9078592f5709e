"""scripts/preloaded_python.py — for scripts/test_export_hf.sh: many Python runs, torch and transformers imported
once.

Importing torch and transformers is 10-12 s of each export's 12 s on a 2-core CI machine, and that suite runs about
twenty Pythons that import them. This imports them once, then serves requests: for each it forks a child that runs
the request's script as __main__ with its arguments (stdin /dev/null, stdout and stderr to the request's files) and
answers the child's exit status. Each run is still its own process (its own pid, so export_hf.py's OUTDIR.tmp.PID;
its exit status; its open files and any module it patches), started from an interpreter that has already imported
what export_hf.py imports. The suite also runs export_hf.py itself, as a user does, so the script's own start is
tested too.

  python3 scripts/preloaded_python.py REQUESTS ANSWERS
REQUESTS and ANSWERS are FIFOs. A request is one line naming a file that holds, NUL-separated, the stdout path, the
stderr path, the script and its arguments; the answer is one line, the exit status. The first answer says "ready"
once the imports are done, or why they failed (and the runner ends). It ends at the end of its requests.
"""
import os
import runpy
import sys
import traceback


def preload():
    """What export_hf.py imports inside main(), and the modules its checks load lazily (the GPT-2 model class)."""
    import numpy  # noqa: F401
    import safetensors.torch  # noqa: F401
    import tokenizers  # noqa: F401
    import torch  # noqa: F401
    import xxhash  # noqa: F401
    from transformers import (AutoModelForCausalLM, AutoTokenizer, GenerationConfig, GPT2Config,  # noqa: F401
                              GPT2LMHeadModel, PreTrainedTokenizerFast)


def run_child(out_path, err_path, script, args):
    """In the forked child: SCRIPT as __main__, as `python3 SCRIPT ARGS </dev/null >OUT 2>ERR` runs it."""
    for fd, path, flags in ((0, os.devnull, os.O_RDONLY), (1, out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                            (2, err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)):
        f = os.open(path, flags, 0o666)
        os.dup2(f, fd)
        os.close(f)
    sys.argv = [script] + args
    sys.path[0] = os.path.dirname(os.path.abspath(script))  # as the interpreter sets it for a script
    code = 0
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as e:  # mapped to an exit status as the interpreter maps it
        if e.code is None:
            code = 0
        elif isinstance(e.code, int):
            code = e.code
        else:
            print(e.code, file=sys.stderr)
            code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code & 0xFF)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: preloaded_python.py REQUESTS ANSWERS (two FIFOs)")
    # the FIFOs first (each open waits for the suite's end), so a failed import is answered, not a hang
    with open(sys.argv[1], "r") as requests, open(sys.argv[2], "w") as answers:
        try:
            preload()
        except Exception as e:
            answers.write(f"{type(e).__name__}: {e}".replace("\n", " ") + "\n")
            sys.exit(1)
        answers.write("ready\n")
        answers.flush()
        for line in requests:
            with open(line.rstrip("\n"), "rb") as f:
                out_path, err_path, script, *args = [a.decode() for a in f.read().split(b"\0")[:-1]]
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                run_child(out_path, err_path, script, args)
            _, status = os.waitpid(pid, 0)
            code = os.waitstatus_to_exitcode(status)
            answers.write(f"{code if code >= 0 else 128 - code}\n")  # killed by signal N: 128 + N, as a shell says
            answers.flush()


if __name__ == "__main__":
    main()
