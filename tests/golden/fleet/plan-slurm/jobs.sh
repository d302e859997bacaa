#!/bin/bash
# Written by migbench plan --emit-slurm: one sbatch per planned job, on the node and
# GRES type it was planned on; jobs that share an instance run in the plan's order.
set -euo pipefail
# resnet-a: workload resnet50 on GPU 1 (node gpu-b), instance 0 (2g.20gb), position 0
j1=$(sbatch --parsable --nodelist=gpu-b --gres=gpu:2g.20gb:1 --job-name=resnet-a --wrap='/usr/bin/migbench measure --json -- python3 /usr/share/migbench/workloads/vision.py --model resnet50')
# resnet-b: workload resnet50 on GPU 1 (node gpu-b), instance 1 (2g.20gb), position 0
j2=$(sbatch --parsable --nodelist=gpu-b --gres=gpu:2g.20gb:1 --job-name=resnet-b --wrap='/usr/bin/migbench measure --json -- python3 /usr/share/migbench/workloads/vision.py --model resnet50')
# gpt-small: workload gpt2-small on GPU 1 (node gpu-b), instance 2 (2g.20gb), position 0
j3=$(sbatch --parsable --nodelist=gpu-b --gres=gpu:2g.20gb:1 --job-name=gpt-small --wrap='/usr/bin/migbench measure --json -- python3 /usr/share/migbench/workloads/gpt.py --size small')
# densenet: workload densenet121 on GPU 1 (node gpu-b), instance 3 (1g.10gb), position 0
j4=$(sbatch --parsable --nodelist=gpu-b --gres=gpu:1g.10gb:1 --job-name=densenet --wrap='/usr/bin/migbench measure --json -- python3 /usr/share/migbench/workloads/vision.py --model densenet121')
# resnet-c: workload resnet50 on GPU 0 (node gpu-a), instance 0 (7g.80gb), position 0
j5=$(sbatch --parsable --nodelist=gpu-a --gres=gpu:7g.80gb:1 --job-name=resnet-c --wrap='/usr/bin/migbench measure --json -- python3 /usr/share/migbench/workloads/vision.py --model resnet50')
# xl-finetune: workload gpt2-xl-ft on GPU 0 (node gpu-a), instance 0 (7g.80gb), position 1
j0=$(sbatch --parsable --nodelist=gpu-a --gres=gpu:7g.80gb:1 --job-name=xl-finetune ${j5:+--dependency=afterany:$j5} --wrap='/usr/bin/migbench measure --json -- python3 /usr/share/migbench/workloads/gpt.py --size xl --finetune')
