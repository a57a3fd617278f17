#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Run a command as an agent whose model API key stays outside the sandbox
# (examples/model-proxy.ini). Store the key once:
#     printf %s "$MODEL_API_KEY" | cloister secret add model-key --config examples/model-proxy.ini
# then:
#     examples/model-agent.sh CMD [ARGS...]
# Inside, MODEL_API_KEY is a cloister token and MODEL_BASE_URL points at the
# API through the proxy; most agent CLIs take a base URL and a key in such
# variables (rename them for yours).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exec cloister run "$here/model-proxy.ini" -- sh -c '
        MODEL_API_KEY=$(cloister token issue model --ttl 3600)
        MODEL_BASE_URL=http://api.example-model.com
        export MODEL_API_KEY MODEL_BASE_URL
        exec "$@"' agent "$@"
