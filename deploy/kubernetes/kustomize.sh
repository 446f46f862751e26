# deploy/kubernetes/kustomize.sh, sourced by validate and test-manifests: `render DIR` prints
# what kustomize makes of DIR, offline. kubectl's built-in kustomize when it knows components
# (kubectl 1.27 and later); else kustomize itself, built once at a pinned version with the Go
# toolchain into ~/.cache/rtlab/bin (Debian's kubernetes-client predates components).
KUSTOMIZE_VERSION=v5.5.0
kustomize_bin="${XDG_CACHE_HOME:-$HOME/.cache}/rtlab/bin/kustomize-$KUSTOMIZE_VERSION"

render() {
    local out
    if command -v kubectl >/dev/null 2>&1 && out=$(kubectl kustomize "$1" 2>/dev/null); then
        printf '%s\n' "$out"
        return 0
    fi
    if [ ! -x "$kustomize_bin" ]; then
        command -v go >/dev/null 2>&1 \
            || { echo "kustomize: neither kubectl >= 1.27 nor Go to build kustomize $KUSTOMIZE_VERSION" >&2; return 1; }
        echo "kustomize: building kustomize $KUSTOMIZE_VERSION with go install" >&2
        local gobin
        gobin=$(mktemp -d)
        GOBIN="$gobin" go install "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION" >&2 \
            || { rm -rf "$gobin"; return 1; }
        mkdir -p "$(dirname "$kustomize_bin")"
        mv "$gobin/kustomize" "$kustomize_bin"
        rm -rf "$gobin"
    fi
    "$kustomize_bin" build "$1"
}
