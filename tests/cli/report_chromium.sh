# SPDX-License-Identifier: Apache-2.0
# The HTML report opened in headless Chromium: it parses, renders a non-blank page, and logs no
# console errors. Chromium is a test dependency (scripts/install-deps.sh installs it); without
# it this test FAILS rather than pass silently.
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
cd "$MB_SOURCE_DIR"

CHROMIUM=${CHROMIUM:-}
if [ -z "$CHROMIUM" ]; then
    for c in chromium chromium-browser google-chrome; do
        if command -v "$c" >/dev/null 2>&1; then
            CHROMIUM=$(command -v "$c")
            break
        fi
    done
fi
if [ -z "$CHROMIUM" ]; then
    echo "FAIL: chromium is not installed; the HTML report cannot be checked." >&2
    echo "      Install it with scripts/install-deps.sh (Debian package 'chromium')." >&2
    exit 1
fi

run 0 "$MIGBENCH" report --format html -o "$TMP/report.html" \
    tests/golden/results-h100 tests/golden/results-a100
html="$TMP/report.html"

chrome() { # chrome ARGS...: headless, offline, private profile; a hung browser is killed
    timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-background-networking \
        --disable-component-update --no-first-run --disable-extensions --disable-sync \
        --user-data-dir="$TMP/prof" "$@"
}

# 1. Screenshot, with the browser's log on stderr for console messages.
chrome --enable-logging=stderr --v=0 --screenshot="$TMP/shot.png" --window-size=1200,2000 \
    "file://$html" >"$TMP/chrome.out" 2>"$TMP/chrome.err" || fail "chromium --screenshot failed"
[ -s "$TMP/shot.png" ] || fail "no screenshot written"
if grep -E 'CONSOLE|Uncaught|Failed to load resource|ERR_' "$TMP/chrome.err" >&2; then
    fail "console errors while rendering the report"
fi
# Not blank: decode the PNG (stdlib only) and require many distinct pixel values.
python3 - "$TMP/shot.png" <<'PY' || fail "screenshot is blank or not a PNG"
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, w, h = 8, b"", 0, 0
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        w, h = struct.unpack(">II", body[:8])
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
raw = zlib.decompress(idat)
distinct = len(set(raw[::7]))
print("screenshot %dx%d, %d bytes, %d distinct sampled byte values" % (w, h, len(data), distinct))
assert w == 1200 and h == 2000, "unexpected size"
assert distinct > 32, "looks blank"
PY

# 2. The DOM after parsing: the page's parts are all there.
chrome --dump-dom "file://$html" >"$TMP/dom.html" 2>/dev/null || fail "chromium --dump-dom failed"
grep -q '<h1>migbench report</h1>' "$TMP/dom.html" || fail "DOM lacks the title"
grep -q 'EMULATED DEVICE' "$TMP/dom.html" || fail "DOM lacks the EMULATED banner"
want=$(grep -o '<svg' "$html" | wc -l)
got=$(grep -o '<svg' "$TMP/dom.html" | wc -l)
[ "$want" -eq "$got" ] || fail "DOM has $got svg elements, the file $want"
[ "$got" -gt 20 ] || fail "only $got charts"
grep -q 'Comparison across results directories' "$TMP/dom.html" || fail "DOM lacks the comparison"

finish
