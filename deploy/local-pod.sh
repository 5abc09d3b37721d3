#!/bin/sh
# Runs Shipper under the CPU limit of its Kubernetes manifest in a real cgroup, with load from
# outside; see local_pod.py for flags and output. Build first:
#   bazel build //shipper //shipper/server:health_probe //tests/load:shipper_load
exec /usr/bin/python3 "$(dirname "$0")/local_pod.py" "$@"
