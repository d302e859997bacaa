# SPDX-License-Identifier: Apache-2.0
# The planner against CBC on random small fleets (issue 29): tests/cli/plan_milp.py formulates the
# same model as an MILP (python3-pulp with coinor-cbc, scripts/install-deps.sh --test) and fails on
# a fleet where the planner is more than 3 % (makespan) or 1 % (energy) above CBC's optimum (or CBC
# finds a plan that much better when it cannot prove the optimum), reports a lower bound above a
# proven optimum, or calls a solvable fleet infeasible. 4 fleets (2-3 GPUs, 5-10 jobs) whose
# workloads run on most sizes, and 4 whose workloads run on few (--sparse: no single layout may
# take every job), to stay inside the test timeout on a loaded machine (`plan_milp.py MIGBENCH DIR
# 30 --large` for the issue's fleets). CBC runs under a node limit, so which fleets are decided
# does not depend on the machine's speed.
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
for kind in "" --sparse; do
    # shellcheck disable=SC2086 # kind is one word or none
    /usr/bin/python3 "$MB_SOURCE_DIR/tests/cli/plan_milp.py" "$MIGBENCH" "$TMP" 4 $kind \
        >"$TMP/milp.log" 2>&1 || { cat "$TMP/milp.log"; fail "planner vs CBC ${kind:-(dense)}"; }
    tail -1 "$TMP/milp.log"
done
finish
