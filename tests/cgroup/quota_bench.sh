#!/bin/sh
# ./dev bench quota calls this after building; see quota_bench.py for flags and output.
exec /usr/bin/python3 "$(dirname "$0")/quota_bench.py" "$@"
