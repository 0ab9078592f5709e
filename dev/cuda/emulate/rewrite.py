#!/usr/bin/env python3
"""dev/cuda/emulate/rewrite.py — CUDA source into the C++ that dev/cuda/emulate/cuda_emulation.h runs on the CPU.

Two things in CUDA C++ are not C++, and this rewrites them (everything else is left to the header's macros):
  - a launch `kernel<<<grid, block, smem, stream>>>(args);` becomes
    `cuda_emulation_launch("kernel", grid, block, smem, stream, kernel, args);` (shared memory and stream default to
    0, as in CUDA), which converts the arguments to the kernel's parameters at the launch and queues the grid; an
    argument `NULL` is written `nullptr` (an integer once passed through a template);
  - `extern __shared__ T name[];` (dynamic shared memory) becomes `T* name = (T*)cuda_emulation_dynamic_smem();`.
And after each `__shared__ T name[N];` (a static local there: one copy for the block) comes
`cuda_emulation_shared(&name, sizeof(name));`, which fills it with 0xFF when the block's first thread gets there, so
that a read before any thread of this block wrote it shows, instead of an earlier block's values.

Usage: rewrite.py SRC_ROOT OUT_ROOT FILE... : each FILE (relative to SRC_ROOT) is written under OUT_ROOT at the same
relative path, so that the sources' relative #includes find each other's rewritten copies. One line per file that
had something rewritten; a launch it cannot parse is an error (exit 1), never left as it was.
"""
import os
import re
import sys

DYNAMIC_SMEM = re.compile(
    r"extern\s+__shared__\s+((?:__align__\s*\(\s*\d+\s*\)\s*)?)([A-Za-z_][\w:\s]*?)\s+(\w+)\s*\[\s*\]\s*;")


def matching(text, start, open_ch, close_ch):
    """Index just past the bracket that closes the one at text[start] (strings and chars skipped)."""
    depth, i = 0, start
    while i < len(text):
        c = text[i]
        if c in "\"'":
            j = i + 1
            while j < len(text) and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        if c == open_ch:
            depth += 1
        elif c == close_ch:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise ValueError("unbalanced %r" % open_ch)


def split_top_level(text):
    """Splits on the commas outside (), [] and {}."""
    parts, depth, cur = [], 0, ""
    for c in text:
        depth += 1 if c in "([{" else -1 if c in ")]}" else 0
        if c == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += c
    if cur.strip():
        parts.append(cur.strip())
    return parts


def rewrite_launches(text, name):
    out, pos, count = "", 0, 0
    while True:
        at = text.find("<<<", pos)
        if at < 0:
            return out + text[pos:], count
        # the kernel expression: a name (with ::) and its template arguments, if any, just before '<<<'
        start = at
        while start > pos and text[start - 1] in " \t\n":
            start -= 1
        if text[start - 1] == ">":
            depth = 0
            while start > pos:
                start -= 1
                depth += {">": 1, "<": -1}.get(text[start], 0)
                if depth == 0:
                    break
        while start > pos and (text[start - 1].isalnum() or text[start - 1] in "_:"):
            start -= 1
        kernel = text[start:at].strip()
        end_config = text.find(">>>", at)
        if not kernel or end_config < 0:
            raise ValueError("%s: a launch without a kernel name or '>>>' near %r" % (name, text[start:at + 40]))
        config = split_top_level(text[at + 3:end_config])
        if not 2 <= len(config) <= 4:
            raise ValueError("%s: launch configuration %r" % (name, text[at:end_config + 3]))
        config += ["0"] * (4 - len(config))
        paren = end_config + 3
        while text[paren] in " \t\n":
            paren += 1
        if text[paren] != "(":
            raise ValueError("%s: no argument list after %r" % (name, text[at:end_config + 3]))
        close = matching(text, paren, "(", ")")
        # NULL passed on through a template is an integer: nullptr converts to the parameter's pointer type
        args = ["nullptr" if a == "NULL" else a for a in split_top_level(text[paren + 1:close - 1])]
        call = "cuda_emulation_launch(\"%s\", %s, %s)" % (kernel.replace('"', "'"), ", ".join(config),
                                                          ", ".join([kernel] + args))
        out += text[pos:start] + call
        pos = close
        count += 1


STATIC_SMEM = re.compile(r"(?<![\w])__shared__\s+(?:__align__\s*\(\s*\d+\s*\)\s*)?([^;{}()]*?);")


def declared_names(declaration):
    """The names a declaration `T a[2][3], b;` (without __shared__ and ';') declares: a, b."""
    names = []
    for i, declarator in enumerate(split_top_level(declaration)):
        declarator = re.sub(r"\[.*$", "", declarator).strip()
        found = re.findall(r"\w+", declarator)
        if not found or (i == 0 and len(found) < 2):
            raise ValueError("a __shared__ declaration whose names cannot be read: %r" % declaration)
        names.append(found[-1])
    return names


def poison_static_smem(text, name):
    count = 0

    def poisoned(m):
        nonlocal count
        if re.search(r"\bextern\s*$", text[max(0, m.start() - 40):m.start()]):
            return m.group(0)
        count += 1
        calls = " ".join("cuda_emulation_shared(&%s, sizeof(%s));" % (n, n) for n in declared_names(m.group(1)))
        return m.group(0) + " " + calls

    return STATIC_SMEM.sub(poisoned, text), count


def rewrite(text, name):
    text, launches = rewrite_launches(text, name)
    text, static_smem = poison_static_smem(text, name)
    text, smem = DYNAMIC_SMEM.subn(lambda m: "%s* %s = (%s*)cuda_emulation_dynamic_smem();"
                                   % (m.group(2).strip(), m.group(3), m.group(2).strip()), text)
    return text, launches, smem, static_smem


def main(argv):
    if len(argv) < 4:
        sys.stderr.write("usage: rewrite.py SRC_ROOT OUT_ROOT FILE...\n")
        return 2
    src_root, out_root = argv[1], argv[2]
    for rel in argv[3:]:
        with open(os.path.join(src_root, rel)) as f:
            text = f.read()
        try:
            text, launches, smem, static_smem = rewrite(text, rel)
        except ValueError as e:
            sys.stderr.write("rewrite.py: %s\n" % e)
            return 1
        path = os.path.join(out_root, rel)
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path + ".tmp", "w") as f:
            f.write(text)
        os.replace(path + ".tmp", path)
        if launches or smem or static_smem:
            print("%s: %d launches, %d dynamic and %d static shared declarations" % (rel, launches, smem, static_smem))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
