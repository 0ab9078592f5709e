#!/usr/bin/env python3
"""scripts/check_doc_links.py — every relative link of the given Markdown files leads somewhere: the file (or folder)
it names exists, and a #fragment into a Markdown file names one of its headings (GitHub's slug: lower case, only
letters, digits, '_', '-' and spaces kept, spaces as '-', a repeated heading numbered -1, -2, ...) or an <a id>.
Links inside fenced code blocks and absolute URLs (scheme:...) are not links a reader follows here, so are skipped.

    python3 scripts/check_doc_links.py README.md RESULTS.md doc/*.md

Prints one line per broken link and "doc-links: N passed, M failed" last (N, M: links); exits 1 if any is broken."""
import os
import re
import sys

FENCE = re.compile(r"^```.*?^```", re.S | re.M)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def slug(heading):
    heading = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return heading.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        text = open(path, encoding="utf-8").read()
        found, seen = set(), {}
        for m in re.finditer(r"^#{1,6} +(.*?) *#*$", FENCE.sub("", text), re.M):
            s = slug(m.group(1))
            n = seen.get(s, 0)
            seen[s] = n + 1
            found.add(s if n == 0 else f"{s}-{n}")
        found |= set(re.findall(r'<a (?:id|name)="([^"]+)"', text))
        cache[path] = found
    return cache[path]


def main(files):
    if not files:
        print("check_doc_links: no files given (usage: check_doc_links.py FILE.md...)", file=sys.stderr)
        return 2
    good = bad = 0
    for f in files:
        try:
            text = FENCE.sub("", open(f, encoding="utf-8").read())
        except OSError as e:
            print(f"check_doc_links: {f}: {e.strerror}", file=sys.stderr)
            return 2
        for m in LINK.finditer(text):
            target = m.group(1)
            if re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", target):
                continue
            path, _, fragment = target.partition("#")
            resolved = os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
            if not os.path.exists(resolved):
                print(f"FAIL {f}: link {target}: no file {resolved}")
                bad += 1
            elif fragment and resolved.endswith(".md") and fragment not in anchors(resolved):
                print(f"FAIL {f}: link {target}: {resolved} has no heading or anchor #{fragment}")
                bad += 1
            else:
                good += 1
    print(f"doc-links: {good} passed, {bad} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
