# SPDX-License-Identifier: Apache-2.0
# The planner against CBC's proven optimum on random small fleets (issue 29): tests/cli/plan_milp.py
# formulates the same model as an MILP (python3-pulp with coinor-cbc, scripts/install-deps.sh
# --test) and fails on a fleet where the planner is more than 3 % (makespan) or 1 % (energy) above
# the proven optimum or calls a solvable fleet infeasible. 4 fleets (2-3 GPUs, 5-10 jobs), to stay
# inside the test timeout on a loaded machine (`plan_milp.py MIGBENCH DIR 30 --large` for more).
# CBC runs under a node limit, so which fleets are proven does not depend on the machine's speed.
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
/usr/bin/python3 "$MB_SOURCE_DIR/tests/cli/plan_milp.py" "$MIGBENCH" "$TMP" 4 >"$TMP/milp.log" 2>&1 ||
    { cat "$TMP/milp.log"; fail "planner vs CBC"; }
tail -1 "$TMP/milp.log"
finish
