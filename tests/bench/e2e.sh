#!/bin/sh
# ./dev bench e2e calls this after building; see e2e.py for flags and output.
exec /usr/bin/python3 "$(dirname "$0")/e2e.py" "$@"
