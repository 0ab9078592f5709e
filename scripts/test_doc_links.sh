#!/usr/bin/env bash
# scripts/test_doc_links.sh — the README's and doc/'s relative links all lead somewhere (scripts/check_doc_links.py),
# and the checker itself finds a missing file and a missing anchor, takes a repeated heading's -1 and an <a id>, and
# skips code blocks and URLs. Prints "doc-link-check: N passed, M failed" last.
set -u
cd "$(dirname "$0")/.."
. scripts/test_lib.sh
check=scripts/check_doc_links.py

out=$(python3 "$check" README.md RESULTS.md doc/*.md data/README.md fuzz/README.md 2>&1)
if [ $? -eq 0 ]; then pass repo_docs; else fail repo_docs "$(grep -m 3 '^FAIL' <<<"$out" | tr '\n' ' ')"; fi

mkdir -p "$TMP/d/sub"
: >"$TMP/d/sub/there.txt"
cat >"$TMP/d/page.md" <<'MD'
# Title
## Same
## Same
<a id="kept-anchor"></a>
[ok file](sub/there.txt) [ok heading](#title) [ok repeat](#same-1) [ok id](page.md#kept-anchor) [url](https://x.y/z)
```
[in a code block](nowhere.md)
```
[missing file](sub/gone.txt) [missing anchor](#same-2)
MD
out=$(python3 "$check" "$TMP/d/page.md" 2>&1)
rc=$?
if [ "$rc" -eq 1 ] && grep -q "doc-links: 4 passed, 2 failed" <<<"$out" && grep -q "link sub/gone.txt: no file" <<<"$out" &&
    grep -q "link #same-2: .* has no heading or anchor #same-2" <<<"$out"; then
    pass finds_broken_links
else
    fail finds_broken_links "exit $rc: $(tr '\n' ' ' <<<"$out")"
fi
out=$(python3 "$check" "$TMP/d/none.md" 2>&1)
rc=$?
if [ "$rc" -eq 2 ] && [ "$(wc -l <<<"$out")" -eq 1 ]; then pass missing_page_one_line; else fail missing_page_one_line "exit $rc: $out"; fi
finish doc-link-check
