# SPDX-License-Identifier: Apache-2.0
# The HTML reports a new user first sees, rendered in headless Chromium: a host run (no energy
# sensor), an emulated power-limit axis and an emulated MIG study. Each page opens with the
# answers (before any chart), draws no empty energy chart, labels partition jobs by their cores,
# and renders non-blank. MB_SHOT_DIR=DIR keeps the screenshots (to look at them).
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
CHROMIUM=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
[ -n "$CHROMIUM" ] || { echo "FAIL: chromium is not installed (scripts/install-deps.sh --test)" >&2; exit 1; }
mkdir -p "$TMP/w/build"
ln -s "$MB_BINARY_DIR/fixtures" "$TMP/w/build/fixtures"
cd "$TMP/w"
X=$MB_SOURCE_DIR/examples/run
# Windows in steps where the device has no energy sensor (timing-independent); 5 s where energy
# is read (the emulated sensor refuses shorter windows).
cat >host.yaml <<YAML
version: 1
name: host-quick
device: host
workloads:
  fast: {command: [build/fixtures/fx_steady, --rate, "40", --duration, "600", --samples-per-step, "8"], unit: images}
  slow: {command: [build/fixtures/fx_steady, --rate, "20", --duration, "600", --samples-per-step, "4"], unit: images}
runs:
  - {name: alone, mode: exclusive, jobs: [fast, slow]}
  - {name: shared, mode: timeslice, jobs: [fast, slow]}
  - {name: split, mode: partition, jobs: [fast, slow]}
measure: {warmup: 2 steps, duration: 30 steps, repetitions: 2}
YAML
run 0 "$MIGBENCH" run host.yaml --results host
run 0 "$MIGBENCH" run "$X/power-axis.yaml" --device "emu:H100-80GB:mig=on:state=$TMP/pa.json" \
    --results axis --set measure.duration=5s
run 0 "$MIGBENCH" run "$X/quick.yaml" --results mig --set measure.warmup=0s \
    --set measure.duration=5s
for r in host axis mig; do
    run 0 "$MIGBENCH" report "$r" --format html -o "$r.html"
    python3 - "$r.html" "$r" <<'PY' || fail "$r: report layout"
import re, sys
html, name = open(sys.argv[1]).read(), sys.argv[2]
a = html.find('<div class="answers">')
assert a >= 0, "no answers section"
assert a < html.find('role="img"'), "a chart comes before the answers"
answers = html[a:html.find("</div>", a)]
if name != "axis":
    assert "Most throughput:" in answers, answers
if name == "host":
    assert "no energy sensor" in answers, answers
    assert "Energy per unit of work" not in html, "empty energy chart on a host without a sensor"
    assert "energy saving (right" not in html, "energy panel of n/a on a host without a sensor"
    assert "of its own" in html and not re.search(r"<td>split</td><td>[^<]*</td><td>whole device", html)
elif name == "mig":
    assert re.search(r"Most work per joule: \S", answers), answers
if name == "axis":
    assert "by power limit" in answers and "No answer" not in answers, answers
    assert "m-2 · mix.cap-40pct" in html, "power-axis bars without job names"
    # No exclusive baseline: the normalised-throughput section says so, with no legend of bars.
    sec = html[html.find("<h3>Normalised throughput</h3>"):html.find("<h3>Energy per unit")]
    assert "No run could be normalised" in sec and 'class="legend"' not in sec, sec
PY
    timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run \
        --disable-extensions --user-data-dir="$TMP/prof" --screenshot="$TMP/$r.png" \
        --window-size=1200,1800 "file://$TMP/w/$r.html" >/dev/null 2>&1 || fail "$r: chromium"
    python3 - "$TMP/$r.png" <<'PY' || fail "$r: screenshot blank"
import struct, sys, zlib
d = open(sys.argv[1], "rb").read()
pos, idat = 8, b""
while pos < len(d):
    n, kind = struct.unpack(">I4s", d[pos:pos + 8])
    idat += d[pos + 8:pos + 8 + n] if kind == b"IDAT" else b""
    pos += 12 + n
assert len(set(zlib.decompress(idat)[::7])) > 32
PY
    [ -z "${MB_SHOT_DIR:-}" ] || cp "$TMP/$r.png" "$TMP/w/$r.html" "$MB_SHOT_DIR/"
done
finish
