# SPDX-License-Identifier: Apache-2.0
# migbench layouts: listing, checks, the catalog, and every kind of bad input.
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
M="$MIGBENCH"

# --- listing ---------------------------------------------------------------------------------
run 0 "$M" layouts --gpu A100-40GB --profiles 1g.5gb,2g.10gb,3g.20gb,4g.20gb,7g.40gb
expect_out '^# 19 maximal layouts$'
expect_out '^ +1  \[7g-+\]  7g\.40gb@0:8$'
expect_out '4g\.20gb@0:4 3g\.20gb@4:4'
[ "$(grep -c '^ *[0-9]' "$TMP/out")" = 19 ] || fail "expected 19 layout lines"

run 0 "$M" layouts --gpu H100
expect_out '^# 78 maximal layouts$'
expect_out '^# profiles: 1g\.10gb 1g\.20gb 2g\.20gb 3g\.40gb 4g\.40gb 7g\.80gb$'
if grep -q '+me' "$TMP/out"; then fail "+me profiles are not in the default set"; fi

run 0 "$M" layouts --gpu h100 --all
expect_out '^# 722 layouts$'

# Names nvidia-smi prints, any case.
run 0 "$M" layouts --gpu "NVIDIA H100 80GB HBM3" --distinct
expect_out '^# H100-SXM5-80GB'
run 0 "$M" layouts --gpu "nvidia a100-sxm4-40gb" --distinct
expect_out '^# A100-SXM4-40GB'

# Distinct: one line per multiset, with its number of placements.
run 0 "$M" layouts --gpu A30 --distinct
expect_out '^# 4 distinct profile sets over 5 maximal layouts$'
expect_out '^ +3 +2  2g\.12gb,1g\.6gb,1g\.6gb$'

# JSON: an array of {profiles, placements}; --distinct adds count.
run 0 "$M" layouts --gpu A30 --json
/usr/bin/python3 - "$TMP/out" <<'PY' || fail "layouts --json is not the documented shape"
import json, sys
v = json.load(open(sys.argv[1]))
assert isinstance(v, list) and len(v) == 5
for e in v:
    assert set(e) == {"profiles", "placements"}
    assert [p["profile"] for p in e["placements"]] == e["profiles"]
    for p in e["placements"]:
        assert set(p) == {"profile", "start", "size", "status"} and p["status"] == "verified"
PY
run 0 "$M" layouts --gpu A30 --all --distinct --json
/usr/bin/python3 - "$TMP/out" <<'PY' || fail "layouts --distinct --json lacks counts"
import json, sys
v = json.load(open(sys.argv[1]))
assert all(e["count"] >= 1 for e in v)
assert sum(e["count"] for e in v) == 25
PY

# The A30's +me profiles exclude each other.
run 0 "$M" layouts --gpu A30 --all --json --profiles 1g.6gb+me,2g.12gb+me
/usr/bin/python3 - "$TMP/out" <<'PY' || fail "A30 +me profiles appear together"
import json, sys
v = json.load(open(sys.argv[1]))
assert len(v) == 4 + 2, len(v)
assert all(len(e["profiles"]) == 1 for e in v)
PY

# Inferred and unverified values are labelled.
run 0 "$M" layouts --gpu B200 --distinct
expect_out '^# placements of .*3g\.90gb.*: unverified'
expect_out '^# placements of 1g\.23gb.*: inferred'
run 0 "$M" layouts --gpu A100-80GB --json
expect_out '"status":"inferred"'

# --- check -----------------------------------------------------------------------------------
run 0 "$M" layouts --gpu H100 --check 3g.40gb,2g.20gb,1g.10gb,1g.10gb
expect_out '^fits on H100-SXM5-80GB: 3g\.40gb,2g\.20gb,1g\.10gb,1g\.10gb$'
expect_out '^ +1  3g\.40gb +profile id 9 +start +4  size 4'
expect_out '^\[2g-+\]\[1g-\]\[1g-\]\[3g-+\]$'

run 1 "$M" layouts --gpu H100 --check 4g.40gb,4g.40gb
expect_out 'only one 4g\.40gb fits per GPU'
expect_out '^nearest valid layouts:'

run 1 "$M" layouts --gpu H100 --check 4g.40gb,1g.10gb,1g.10gb,1g.10gb,1g.10gb
expect_out 'needs 8 compute slices; H100-SXM5-80GB has 7'
expect_out '^  4g\.40gb,1g\.10gb,1g\.10gb,1g\.10gb   \(drop 1g\.10gb\)$'

run 1 "$M" layouts --gpu A30 --check 1g.6gb+me,2g.12gb+me
expect_out 'only one \+me'

run 1 "$M" layouts --gpu H100 --check 3g.40gb,3g.40gb,1g.20gb --json
/usr/bin/python3 - "$TMP/out" <<'PY' || fail "check --json shape"
import json, sys
v = json.load(open(sys.argv[1]))
assert v["valid"] is False and v["placements"] is None
assert any("memory slices" in r for r in v["reasons"])
assert v["nearest"] and all("change" in n for n in v["nearest"])
PY
run 0 "$M" layouts --gpu H100 --check 1g.10gb,3g.40gb --json
/usr/bin/python3 - "$TMP/out" <<'PY' || fail "check --json (valid) shape"
import json, sys
v = json.load(open(sys.argv[1]))
assert v["valid"] is True and v["profiles"] == ["3g.40gb", "1g.10gb"]
assert v["placements"][0]["profile"] == "3g.40gb"
PY

# Spaces around names are fine; eight instances is a "no", not bad input.
run 0 "$M" layouts --gpu H100 --check ' 1g.10gb , 1g.10gb'
run 1 "$M" layouts --gpu H100 --check 1g.10gb,1g.10gb,1g.10gb,1g.10gb,1g.10gb,1g.10gb,1g.10gb,1g.10gb
expect_out 'at most 7 GPU instances fit'

# --- catalog ---------------------------------------------------------------------------------
run 0 "$M" layouts --list-gpus
[ "$(grep -c '^  [A-Z]' "$TMP/out")" = 9 ] || fail "expected 9 models"
expect_out '^  GH200-H100-96GB .* n/a  inferred'
run 0 "$M" layouts --list-gpus --gpu B200
expect_out '^  3g\.90gb +9\? .* n/a +n/a .*unverified'
run 0 "$M" layouts --list-gpus --json
/usr/bin/python3 - "$TMP/out" <<'PY' || fail "list-gpus --json: unknown values must be null"
import json, sys
v = {m["name"]: m for m in json.load(open(sys.argv[1]))}
assert len(v) == 9
p = {x["name"]: x for x in v["B200-180GB"]["profiles"]}
assert p["3g.90gb"]["memory_mib"] is None and p["3g.90gb"]["driver_id_unverified"] is True
assert v["B200-180GB"]["total_memory_mib"] is None
PY

cat >"$TMP/cat.json" <<'JSON'
{"TINY-2GB": {"compute_slices": 2, "memory_slices": 2, "max_gpu_instances": 2,
  "aliases": ["Tiny"],
  "profiles": [
   {"name": "1g.1gb", "nvml_profile_id": 0, "nvidia_smi_profile_id": 19, "compute_slices": 1,
    "memory_slices": 1, "memory_mib": 1024, "max_count": 2, "placements": [[0,1],[1,1]],
    "placements_status": "UNVERIFIED"},
   {"name": "2g.2gb", "nvml_profile_id": 1, "nvidia_smi_profile_id": 14, "compute_slices": 2,
    "memory_slices": 2, "memory_mib": 2048, "max_count": 1, "placements": [[0,2]]}]}}
JSON
run 0 "$M" layouts --catalog "$TMP/cat.json" --gpu tiny
expect_out '^# 2 maximal layouts$'
expect_out 'from a --catalog file'
run 0 "$M" layouts --catalog "$TMP/cat.json" --list-gpus
expect_out 'TINY-2GB .*\(from --catalog\)'

# --- sizes: the same --check on every model names that model's own profiles -------------------
run 0 "$M" layouts --gpu H200 --check 4g,3g
expect_out '^fits on H200-141GB: 4g\.71gb,3g\.71gb$'
run 0 "$M" layouts --gpu H100 --check 4G,2g,1G+ME
expect_out '^fits on H100-SXM5-80GB: 4g\.40gb,2g\.20gb,1g\.10gb\+me$'
run 0 "$M" layouts --gpu A100-40GB --check 1g.2m,3g.20gb,2g
expect_out '^fits on A100-SXM4-40GB: 3g\.20gb,2g\.10gb,1g\.10gb$'
run 1 "$M" layouts --gpu H200 --check 4g,4g
expect_out '^does not fit on H200-141GB: 4g\.71gb,4g\.71gb$'
run 0 "$M" layouts --gpu H200 --profiles 3g,1g.2m
expect_out '^# profiles: 1g\.35gb 3g\.71gb$'

# --- bad input: clear message, exit 2, nothing on stdout --------------------------------------
bad() {
    local pattern=$1
    shift
    run 2 "$M" layouts "$@"
    expect_err "$pattern"
    expect_no_out
}
bad "unknown GPU model 'H10'; did you mean H100-SXM5-80GB" --gpu H10
bad "unknown GPU model 'B2000'; did you mean B200-180GB" --gpu B2000
bad "'A100' is ambiguous: it could be A100-SXM4-40GB, A100-SXM4-80GB" --gpu A100
bad "empty GPU model name" --gpu ''
bad "--check: H100-SXM5-80GB has no profile '1g.5gb' \(its profiles: 1g.10gb, .*; or a size: 1g, 1g\+me, 1g.2m, 2g, 3g, 4g, 7g\)" --gpu H100 --check 1g.5gb
bad "--profiles: H100-SXM5-80GB has no profile 'bogus'" --gpu H100 --profiles 1g.10gb,bogus
bad "--check: A30-24GB has no 3g \(its sizes: 1g, 1g\+me, 2g, 2g\+me, 4g;" --gpu A30 --check 2g,3g
bad "has no profile '5g'" --gpu H200 --check 5g
bad "empty profile list" --gpu H100 --profiles ''
bad "empty profile list" --gpu H100 --check '  '
bad "entry 2 of '1g.10gb,,2g.20gb' is empty" --gpu H100 --check 1g.10gb,,2g.20gb
bad "entry 2 of '1g.10gb,' is empty" --gpu H100 --profiles 1g.10gb,
bad "entry 1 of ',1g.10gb' is empty" --gpu H100 --check ,1g.10gb
huge=$(printf '1g.10gb,%.0s' $(seq 1 5000))1g.10gb
bad "more than 64 entries" --gpu H100 --check "$huge"
bad "more than 64 entries" --gpu H100 --profiles "$huge"
longname=$(printf 'x%.0s' $(seq 1 3000))
bad "unknown profile 'xxxx" --gpu H100 --check "$longname"
bad "unknown GPU model" --gpu "$longname"
bad "--gpu MODEL is required"
bad "needs a value" --gpu
bad "unknown option '--frobnicate'" --gpu H100 --frobnicate
bad "unexpected argument 'extra'" --gpu H100 extra
bad "--check takes no --all" --gpu H100 --check 1g.10gb --all
bad "--list-gpus takes only" --list-gpus --check 1g.10gb

printf '{"X": {"compute_slices": 7,,}}' >"$TMP/broken.json"
bad "broken.json:1:[0-9]+: not valid JSON" --catalog "$TMP/broken.json" --gpu H100
printf '{"X": {"compute_slices": 2, "memory_slices": 2, "max_gpu_instances": 2, "profiles": [{"name": "1g.1gb", "nvml_profile_id": 0, "compute_slices": 1, "memory_slices": 1, "max_count": 2, "placements": [[1,1],[2,1]]}]}}' >"$TMP/past.json"
bad "past.json: model 'X': profile '1g.1gb': field 'placements': entry 1 \[2, 1\] runs past" \
    --catalog "$TMP/past.json" --list-gpus
printf '{"X": {"memory_slices": 8}}' >"$TMP/missing.json"
bad "model 'X': field 'compute_slices': missing" --catalog "$TMP/missing.json" --list-gpus
bad "cannot open" --catalog "$TMP/nonexistent.json" --gpu H100
head -c 5000000 /dev/zero | tr '\0' ' ' >"$TMP/big.json"
bad "larger than" --catalog "$TMP/big.json" --gpu H100
printf '\0\0\0' >"$TMP/nul.json"
bad "NUL byte" --catalog "$TMP/nul.json" --gpu H100

run 0 "$M" layouts --help
expect_out 'usage: migbench layouts'

finish
