#!/bin/bash
# Written by migbench plan --emit-k8s: asks the MIG manager on each node for its
# planned layout and waits until every node reports success.
set -euo pipefail
timeout=${MB_K8S_WAIT:-1800s}
kubectl label node gpu-a nvidia.com/mig.config=migbench-gpu-a --overwrite
kubectl label node gpu-b nvidia.com/mig.config=migbench-gpu-b --overwrite
kubectl wait node/gpu-a --for=jsonpath='{.metadata.labels.nvidia\.com/mig\.config\.state}'=success --timeout="$timeout"
kubectl wait node/gpu-b --for=jsonpath='{.metadata.labels.nvidia\.com/mig\.config\.state}'=success --timeout="$timeout"
