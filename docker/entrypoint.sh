#!/bin/sh
# Entry point of the rlockd image.
#
# Arguments that are rlockd's (nothing, options such as `--requirepass x`,
# a redis.conf path first, or `rlockd ...`) start rlockd listening on every
# interface of the container, as a server in a container must to be
# reachable through a published port; a `--bind` among the arguments still
# wins, because a later setting wins. Anything else runs as a command
# (`docker run --rm -it IMAGE sh`).
set -e

if [ "$1" = rlockd ]; then
    shift
elif [ -n "$1" ] && [ "${1#-}" = "$1" ] && [ "${1%.conf}" = "$1" ]; then
    exec "$@"
fi

if [ -n "$1" ] && [ "${1#-}" = "$1" ]; then
    # A redis.conf path: it must come first, the command line follows it.
    conf=$1
    shift
    exec rlockd "$conf" --bind 0.0.0.0 "$@"
fi
exec rlockd --bind 0.0.0.0 "$@"
