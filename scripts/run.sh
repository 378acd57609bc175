#!/usr/bin/env bash
# `make run`: migrate the embedded SQLite database, import the computer-chess demo ladder once, serve.
set -euo pipefail
cd "$(dirname "$0")/.."
MELO=.venv/bin/melo
mkdir -p data
if [ -z "${MELO_ADMIN_KEY:-}" ]; then
  [ -f data/admin-key.txt ] || .venv/bin/python -c "import secrets; print('adm_' + secrets.token_urlsafe(24))" > data/admin-key.txt
  MELO_ADMIN_KEY=$(cat data/admin-key.txt)
  export MELO_ADMIN_KEY
fi
$MELO migrate
if [ ! -f data/demo-write-key.txt ]; then
  # The ladder's first key is an admin key (settings, keys, deleting it); the office gets a write key to record games.
  $MELO create-ladder chess-demo --k 1 | .venv/bin/python -c "import json, sys; print(json.load(sys.stdin)['admin_key'])" > data/demo-admin-key.txt
  $MELO keys chess-demo create "make run" --role write | sed -n 's/.*shown only now: //p' > data/demo-write-key.txt
  # The server is up sooner without the auto refit the import makes due: the first posted games start it.
  $MELO import chess-demo tests/data/chess_engines.json --format chess --no-refit
fi
PORT=${PORT:-8000}
HOST=${HOST:-127.0.0.1}
cat <<EOT

  melo is starting on  http://$HOST:$PORT
  API docs:            http://127.0.0.1:$PORT/docs
  demo ladder:         http://127.0.0.1:$PORT/ladders/chess-demo
  demo leaderboard API: http://127.0.0.1:$PORT/v1/ladders/chess-demo/leaderboard
  admin key:           $MELO_ADMIN_KEY
  chess-demo write key: $(cat data/demo-write-key.txt)   (records games)$([ -f data/demo-admin-key.txt ] && printf '\n  chess-demo admin key: %s   (settings and keys)' "$(cat data/demo-admin-key.txt)")

EOT
exec $MELO serve --host "$HOST" --port "$PORT"
