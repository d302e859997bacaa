#!/bin/bash
# Submits the job array, then the report job that waits for all of it.
# (migbench slurm submit does the same through sbatch directly.)
set -euo pipefail
mkdir -p /scratch/results/small/slurm
array=$(sbatch --parsable TMP/array/array.sbatch)
array=${array%%;*}
echo "array job $array"
sbatch --parsable --dependency=afterany:"$array" TMP/array/report.sbatch
