#!/bin/sh
# Checks what deploys mcpfsm: the Helm chart lints and renders, every flag
# the chart passes is one mcpfsm serve has, and the Dockerfile's build
# command makes a static binary that runs.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
helm="go run helm.sh/helm/v3/cmd/helm@v3.22.0"
chart=deploy/helm/mcpfsm
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

$helm lint --strict "$chart"
$helm template ci "$chart" --set auth.token=0123456789abcdef0123456789abcdef \
	--set-json 'config={"mcpServers":{"docs":{"url":"https://docs.example.com/mcp","headers":{"Authorization":"Bearer ${DOCS_TOKEN}"}}}}' \
	--set-json 'env=[{"name":"DOCS_TOKEN","valueFrom":{"secretKeyRef":{"name":"docs","key":"token"}}}]' \
	--set-json 'envFrom=[{"secretRef":{"name":"more-keys"}}]' \
	--set auth.oauthIssuer=https://issuer.example.com --set auth.oauthResource=https://mcp.example.com/mcp \
	--set 'auth.oauthScopes={mcp:tools}' --set maxConnsPerIP=512 >"$out/rendered.yaml"
grep -q 'kind: Deployment' "$out/rendered.yaml"
grep -q 'path: /healthz' "$out/rendered.yaml"
# The pod is hardened, and the servers' secrets come from Secrets, never
# the ConfigMap.
for want in 'readOnlyRootFilesystem: true' 'allowPrivilegeEscalation: false' 'drop: ["ALL"]' 'type: RuntimeDefault' \
	'automountServiceAccountToken: false' 'runAsNonRoot: true' '- -oauth-scope=mcp:tools' '- -max-conns-per-ip=512' \
	'name: DOCS_TOKEN' 'secretRef:'; do
	grep -qF -- "$want" "$out/rendered.yaml" || { echo "deploy-check: the rendered chart lacks '$want'" >&2; exit 1; }
done
grep -qF '${DOCS_TOKEN}' "$out/rendered.yaml" || { echo "deploy-check: the ConfigMap lost the \${DOCS_TOKEN} reference" >&2; exit 1; }
# The Ingress keeps each client on one pod (docs/deploy.md, "Several
# replicas") and its host is one serve accepts.
$helm template ci "$chart" --set auth.token=0123456789abcdef0123456789abcdef \
	--set ingress.enabled=true --set ingress.host=mcp.example.com >"$out/ingress.yaml"
grep -q 'kind: Ingress' "$out/ingress.yaml"
grep -q 'nginx.ingress.kubernetes.io/upstream-hash-by: \$http_authorization$' "$out/ingress.yaml"
grep -q -- '- -allow-host=mcp.example.com$' "$out/ingress.yaml"
if grep -q 'kind: Ingress' "$out/rendered.yaml"; then
	echo "deploy-check: the chart makes an Ingress without ingress.enabled" >&2
	exit 1
fi

# The Redis credential store: its URL (which may carry a password) and its
# key reach the pods from a Secret only, never the ConfigMap or the args;
# a URL without a key is refused; an existing Secret is used as it is.
redis_url='redis://:redispass@redis.example:6379/0'
redis_key=AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=
$helm template ci "$chart" --set auth.token=0123456789abcdef0123456789abcdef --set replicas=3 \
	--set credentialStore.url="$redis_url" --set credentialStore.key="$redis_key" >"$out/credentials.yaml"
for want in 'name: MCPFSM_CREDENTIAL_STORE' 'name: MCPFSM_CREDENTIAL_KEY' 'name: ci-credential-store' 'key: url' 'key: key'; do
	grep -qF -- "$want" "$out/credentials.yaml" || { echo "deploy-check: the chart with credentialStore lacks '$want'" >&2; exit 1; }
done
n=$(grep -cF -- "$redis_key" "$out/credentials.yaml" || true)
m=$(grep -cF -- "redispass" "$out/credentials.yaml" || true)
[ "$n" = 1 ] && [ "$m" = 1 ] || { echo "deploy-check: the credential store's key or URL appears outside its Secret ($n, $m times)" >&2; exit 1; }
if $helm template ci "$chart" --set credentialStore.url="$redis_url" >/dev/null 2>"$out/nokey.err"; then
	echo "deploy-check: the chart accepts a credential store without a key" >&2
	exit 1
fi
grep -q 'credentialStore.key' "$out/nokey.err" || { echo "deploy-check: a credential store without a key is refused without naming credentialStore.key" >&2; exit 1; }
$helm template ci "$chart" --set credentialStore.existingSecret=creds >"$out/existing.yaml"
grep -qF 'name: creds' "$out/existing.yaml" && ! grep -q 'name: ci-credential-store' "$out/existing.yaml" ||
	{ echo "deploy-check: credentialStore.existingSecret is not used as it is" >&2; exit 1; }
if grep -q 'MCPFSM_CREDENTIAL' "$out/rendered.yaml"; then
	echo "deploy-check: the chart sets a credential store without credentialStore" >&2
	exit 1
fi

# The Dockerfile's build, as it runs in the image's build stage.
build=$(sed -n 's/^RUN \(CGO_ENABLED=0 go build .*\) -o \/out\/mcpfsm \(.*\)$/\1 -o '"$(printf '%s' "$out" | sed 's/[\/&]/\\&/g')"'\/mcpfsm \2/p' Dockerfile)
[ -n "$build" ] || { echo "deploy-check: no static build line in the Dockerfile" >&2; exit 1; }
sh -c "$build"
if command -v ldd >/dev/null 2>&1 && ldd "$out/mcpfsm" >/dev/null 2>&1; then
	echo "deploy-check: the Dockerfile's binary is not static" >&2
	exit 1
fi
help=$("$out/mcpfsm" serve -h 2>&1 || true)
for flag in $(sed -n 's/^ *- -\([a-z-]*\)=.*/\1/p; s/^ *- -\([a-z-]*\)$/\1/p' "$out/rendered.yaml" | sort -u); do
	printf '%s\n' "$help" | grep -q -- "^  -$flag\b" || { echo "deploy-check: the chart passes -$flag, which mcpfsm serve does not have" >&2; exit 1; }
done
printf '%s\n' "$("$out/mcpfsm" -h)" | grep -q 'mcpfsm probe' || { echo "deploy-check: the chart's readiness probe runs mcpfsm probe, which is missing" >&2; exit 1; }
echo "deploy-check: chart lints and renders; its $(sed -n 's/^ *- -\([a-z-]*\).*/\1/p' "$out/rendered.yaml" | sort -u | wc -l) flags exist; the image's binary is static"
