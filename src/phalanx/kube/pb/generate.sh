#!/usr/bin/env bash
# Regenerates the *_pb2.py modules and gotags.py in this folder from Kubernetes' own sources.
#
#   API=path/to/kubernetes/api.git MACHINERY=path/to/kubernetes/apimachinery.git \
#   PROTOC_PY=/tmp/protoc-venv/bin/python src/phalanx/kube/pb/generate.sh
#
# API and MACHINERY are clones (bare is fine) of github.com/kubernetes/api and
# github.com/kubernetes/apimachinery; TAG (default v0.32.4, kubectl 1.32.4's) picks the version.
# PROTOC_PY is a Python with grpcio-tools (python3 -m venv /tmp/protoc-venv &&
# /tmp/protoc-venv/bin/pip install grpcio-tools); it is not a dependency of Phalanx.
# The .proto files are copied under flat importable names (core_v1.proto, ...): only their
# `import` lines are rewritten; packages and messages stay k8s.io.api.core.v1.Pod etc.
set -euo pipefail
TAG=${TAG:-v0.32.4}
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../../.." && pwd)
WORK=$(mktemp -d)
[ -n "${KEEP:-}" ] || trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/phalanx/kube/pb" "$WORK/go"
# name:repo:dir -- the packages whose kinds kubectl 1.32 sends, and what they import.
PACKAGES="resource:M:pkg/api/resource meta_v1:M:pkg/apis/meta/v1 runtime:M:pkg/runtime
runtime_schema:M:pkg/runtime/schema intstr:M:pkg/util/intstr core_v1:A:core/v1 batch_v1:A:batch/v1
apps_v1:A:apps/v1 rbac_v1:A:rbac/v1 scheduling_v1:A:scheduling/v1 policy_v1:A:policy/v1
networking_v1:A:networking/v1 autoscaling_v1:A:autoscaling/v1 autoscaling_v2:A:autoscaling/v2
authentication_v1:A:authentication/v1"
sed_args=()
for p in $PACKAGES; do
  IFS=: read -r name repo dir <<<"$p"
  if [ "$repo" = M ]; then git_dir=$MACHINERY; path="k8s.io/apimachinery/$dir"; else git_dir=$API; path="k8s.io/api/$dir"; fi
  sed_args+=(-e "s#^import \"$path/generated.proto\";#import \"phalanx/kube/pb/$name.proto\";#")
  git -C "$git_dir" show "$TAG:$dir/generated.proto" >"$WORK/phalanx/kube/pb/$name.proto"
  mkdir -p "$WORK/go/$name"
  for f in $(git -C "$git_dir" ls-tree --name-only "$TAG" "$dir/" | grep '\.go$' | grep -v -e '_test\.go$' -e 'generated\.pb\.go$' -e 'zz_generated'); do
    git -C "$git_dir" show "$TAG:$f" >"$WORK/go/$name/$(basename "$f")"
  done
done
for f in "$WORK"/phalanx/kube/pb/*.proto; do sed -i "${sed_args[@]}" "$f"; done
"$PROTOC_PY" -m grpc_tools.protoc -I"$WORK" --python_out="$SRC" "$WORK"/phalanx/kube/pb/*.proto
python3 "$HERE/gen_gotags.py" "$WORK" >"$HERE/gotags.py"
echo "generated from $TAG: api $(git -C "$API" rev-parse "$TAG^{commit}"), apimachinery $(git -C "$MACHINERY" rev-parse "$TAG^{commit}")"
