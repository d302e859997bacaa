# SPDX-License-Identifier: Apache-2.0
# The planner against CBC's proven optimum on random small fleets (issue 29): tests/cli/plan_milp.py
# formulates the same model as an MILP (python3-pulp with coinor-cbc, scripts/install-deps.sh
# --test) and fails on a fleet where the planner is more than 3 % (makespan) or 1 % (energy) above
# the proven optimum or calls a solvable fleet infeasible. CBC runs under a node limit, so which
# fleets are proven does not depend on the machine's speed.
. "$MB_SOURCE_DIR/tests/cli/lib.sh"
/usr/bin/python3 "$MB_SOURCE_DIR/tests/cli/plan_milp.py" "$MIGBENCH" "$TMP" 6 >"$TMP/milp.log" 2>&1 ||
    { cat "$TMP/milp.log"; fail "planner vs CBC"; }
tail -1 "$TMP/milp.log"
finish
