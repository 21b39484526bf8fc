#!/usr/bin/env bash
# The GPU checks in one go, for a machine with a GPU (run from the repository root after `npm ci`):
#
#   scripts/gpu-checks.sh              # expects WebGPU and CUDA
#   scripts/gpu-checks.sh webgpu       # expects only the devices listed (webgpu, cuda)
#
# The tests probe each device with one real forward and assert the branch the machine really has
# (test/helpers/gpu.ts). Here LIBREYOLO_EXPECT_DEVICES makes "unavailable" a failure for the devices
# listed, so this run cannot pass on the error branch. CUDA needs onnxruntime-node's CUDA binaries:
# `ONNXRUNTIME_NODE_INSTALL=cuda12 npm rebuild onnxruntime-node` (a download, before going offline).
# WebGPU needs a Vulkan driver for the GPU (`vulkaninfo --summary` lists it).
set -euo pipefail
cd "$(dirname "$0")/.."
devices="${*:-webgpu cuda}"
export LIBREYOLO_EXPECT_DEVICES="${devices// /,}"
echo "gpu-checks: expecting ${LIBREYOLO_EXPECT_DEVICES}"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || echo "gpu-checks: no nvidia-smi"
node --import tsx --test --test-concurrency=1 \
  test/model/predict-graph-capture.test.ts \
  test/e2e/profile-infer.test.ts
